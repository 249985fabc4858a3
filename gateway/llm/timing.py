"""The one running average of measured milliseconds per token (an EMA), used by the engine's figures
and by admission control's estimates. Not thread-safe: the owner locks if it shares one."""

from __future__ import annotations

EMA_ALPHA = 0.2   # weight of the newest measurement (DESIGN.md)


class MsPerToken:
    """value: the EMA of ms/token, or None before the first measurement (unless seeded)."""

    def __init__(self, initial: float | None = None, alpha: float = EMA_ALPHA) -> None:
        self.alpha = alpha
        self.value = None if initial is None else float(initial)

    def observe(self, n_tokens: int, ms: float) -> None:
        """One measurement: `ms` spent on `n_tokens` tokens (ignored unless both are positive)."""
        if n_tokens <= 0 or ms <= 0:
            return
        per = ms / n_tokens
        self.value = per if self.value is None else self.value + self.alpha * (per - self.value)

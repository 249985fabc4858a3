"""Where the Loghub sample logs live (tests, benchmarks, demo replays). Knows nothing about parsing.

Order: $LINEGATE_LOGHUB, then ../shared/data/loghub beside the checkout, then /work/shared/data/loghub.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CANDIDATES = (REPO.parent / "shared" / "data" / "loghub", Path("/work/shared/data/loghub"))


def loghub_dir() -> Path:
    """The Loghub folder (one sub-folder per system); FileNotFoundError naming where it looked."""
    env = os.environ.get("LINEGATE_LOGHUB")
    places = (Path(env),) if env else CANDIDATES
    for p in places:
        if p.is_dir():
            return p
    raise FileNotFoundError("Loghub data not found; looked in " + ", ".join(map(str, places))
                            + " (set LINEGATE_LOGHUB)")

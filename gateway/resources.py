"""Files the package ships beside its code: the model manifest and the web UI.

In a source checkout (the editable install `make` does) they are the repository's own `models/` and `web/`;
an installed wheel carries copies under `gateway/_data/` (CMakeLists.txt installs them there).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent


def data_path(relative: str) -> Path:
    """The checkout's `relative` (e.g. "models/manifest.toml") when it exists, else the wheel's copy."""
    in_checkout = _CHECKOUT / relative
    if in_checkout.exists() and (_CHECKOUT / "pyproject.toml").is_file():
        return in_checkout
    return _PACKAGE / "_data" / relative

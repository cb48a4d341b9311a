"""How every report names a file: relative to the scanned root (the working directory), with
``/`` separators; a file outside it keeps its absolute path."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shown_path"]


def shown_path(path: str, root: str | None = None) -> str:
    base = Path(root or os.getcwd()).resolve()
    real = Path(path).resolve()
    try:
        return real.relative_to(base).as_posix()
    except ValueError:
        return path

"""Static passes and codemods that find and fix unguarded agent code (``guardkit.codemods``).

``scan(paths)`` returns one ``FileResult`` per Python file; ``fix(paths, write=False)`` returns
one ``FixResult`` per file. ``RULES`` and ``TRANSFORMS`` list the rules and codemods.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config, find_pyproject, load_config
from .findings import FileResult, Finding
from .rules import RULES
from .runner import discover, scan_paths

if TYPE_CHECKING:
    from .fixer import FixResult
    from .transforms import TRANSFORMS

__all__ = [
    "scan",
    "fix",
    "Finding",
    "FileResult",
    "FixResult",
    "Config",
    "RULES",
    "TRANSFORMS",
]


def __getattr__(name: str) -> Any:
    # libcst is imported only when fixing: scanning (and a warm re-scan) never pays for it.
    if name == "TRANSFORMS":
        from .transforms import TRANSFORMS

        return TRANSFORMS
    if name == "FixResult":
        from .fixer import FixResult

        return FixResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _config(paths: list[str], config: Config | None) -> Config:
    if config is not None:
        return config
    start = Path(paths[0]) if paths else Path.cwd()
    return load_config(find_pyproject(start if start.is_dir() else start.parent))


def scan(
    paths: list[str] | str, *, config: Config | None = None, jobs: int = 1
) -> list[FileResult]:
    """Scan files and folders (no cache); configuration from the nearest ``pyproject.toml``."""
    targets = [paths] if isinstance(paths, str) else list(paths)
    resolved = _config(targets, config)
    return scan_paths(discover(targets, resolved.exclude), resolved, jobs=jobs)


def fix(
    paths: list[str] | str, *, write: bool = False, config: Config | None = None, jobs: int = 1
) -> list[FixResult]:
    """Apply the codemods; with ``write`` changed files are rewritten in place."""
    from .fixer import fix_paths

    targets = [paths] if isinstance(paths, str) else list(paths)
    resolved = _config(targets, config)
    return fix_paths(discover(targets, resolved.exclude), resolved, jobs=jobs, write=write)

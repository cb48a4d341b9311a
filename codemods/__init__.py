"""Static passes and codemods that find and fix unguarded agent code (``guardkit.codemods``).

``scan(paths)`` returns one ``FileResult`` per Python file; ``fix(paths, write=False)`` returns
one ``FixResult`` per file. ``RULES`` and ``TRANSFORMS`` list the rules and codemods.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config, find_pyproject, load_config
from .findings import FileResult, Finding
from .modules import is_test_path
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
    "is_test_path",
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
    paths: list[str] | str,
    *,
    config: Config | None = None,
    jobs: int = 1,
    include_tests: bool = False,
) -> list[FileResult]:
    """Scan files and folders as one project (no cache); configuration from the nearest
    ``pyproject.toml``; test code only with ``include_tests``."""
    targets = [paths] if isinstance(paths, str) else list(paths)
    resolved = _config(targets, config)
    files = discover(targets, resolved.exclude, include_tests=include_tests)
    return scan_paths(files, resolved, jobs=jobs)


def fix(
    paths: list[str] | str,
    *,
    write: bool = False,
    config: Config | None = None,
    jobs: int = 1,
    include_tests: bool = False,
) -> list[FixResult]:
    """Apply the codemods; with ``write`` changed files are rewritten in place. (The CLI's
    ``fix --write`` also adds the dependency and the policy skeleton: ``fix_report``.)"""
    from .fixer import fix_paths

    targets = [paths] if isinstance(paths, str) else list(paths)
    resolved = _config(targets, config)
    files = discover(targets, resolved.exclude, include_tests=include_tests)
    return fix_paths(files, resolved, jobs=jobs, write=write)

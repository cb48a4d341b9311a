"""Scan many files: discover, consult the cache, analyse the rest in parallel, keep going on errors.

``scan_paths`` returns one ``FileResult`` per file, in path order. It never raises for a bad file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from fnmatch import fnmatch
from functools import partial
from pathlib import Path

from .cache import ScanCache, digest
from .config import Config
from .findings import FileResult
from .scanner import scan_source

__all__ = ["discover", "scan_paths"]

_SKIP_DIRS = {"__pycache__", "node_modules"}
_PARALLEL_MIN = 64
Progress = Callable[[int, int], None]


def _excluded(path: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch(path, p) or fnmatch(os.path.basename(path), p) for p in patterns)


def discover(paths: Iterable[str], exclude: tuple[str, ...] = ()) -> list[str]:
    """Python files under ``paths`` (hidden and build folders skipped), sorted, de-duplicated."""
    found: set[str] = set()
    for root in paths:
        if os.path.isfile(root):
            found.add(os.path.abspath(root))
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS]
            for name in files:
                if name.endswith(".py"):
                    found.add(os.path.abspath(os.path.join(folder, name)))
    return sorted(p for p in found if not _excluded(p, exclude))


def _scan_data(path: str, data: bytes, config: Config) -> FileResult:
    try:
        return scan_source(data, path, config)
    except Exception as exc:  # noqa: BLE001 - one file's crash must not stop the run
        return FileResult(path=path, error=f"internal error: {type(exc).__name__}: {exc}")


def _work(config: Config, path: str) -> tuple[FileResult, str]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return FileResult(path=path, error=f"cannot read: {exc.strerror or exc}"), ""
    return _scan_data(path, data, config), digest(data)


def _analyse(paths: list[str], config: Config, jobs: int) -> Iterator[tuple[FileResult, str]]:
    work = partial(_work, config)
    if jobs <= 1 or len(paths) < _PARALLEL_MIN:
        yield from map(work, paths)
        return
    chunk = max(1, min(64, len(paths) // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(work, paths, chunksize=chunk)


def _cached(cache: ScanCache, path: str, stat: os.stat_result) -> FileResult | None:
    """A stat hit, or (for a touched file the cache knows) a digest hit."""
    hit = cache.by_stat(path, stat)
    if hit is None and path in cache.entries:
        try:
            hit = cache.by_digest(path, stat, digest(Path(path).read_bytes()))
        except OSError:
            return None
    return hit


def scan_paths(
    files: list[str],
    config: Config,
    *,
    jobs: int = 0,
    cache: ScanCache | None = None,
    progress: Progress | None = None,
) -> list[FileResult]:
    """Scan ``files`` (absolute paths); ``jobs=0`` means one worker per CPU.

    Files are analysed (and cached) with every rule; ``select``/``ignore`` filter afterwards, so
    a run with a different selection reuses the cache and never sees a filtered entry.
    """
    jobs = jobs or os.cpu_count() or 1
    every_rule = replace(config, select=(), ignore=())
    results: dict[str, FileResult] = {}
    stats: dict[str, os.stat_result] = {}
    pending: list[str] = []
    for path in files:
        try:
            stats[path] = os.stat(path)
        except OSError as exc:
            results[path] = FileResult(path=path, error=f"cannot read: {exc.strerror or exc}")
            continue
        hit = _cached(cache, path, stats[path]) if cache else None
        if hit is None:
            pending.append(path)
        else:
            results[path] = hit
    for done, (result, hexdigest) in enumerate(_analyse(pending, every_rule, jobs), 1):
        results[result.path] = result
        if cache is not None and hexdigest:
            cache.store(result, stats[result.path], hexdigest)
        if progress is not None:
            progress(done, len(pending))
    if cache is not None:
        cache.save()
    return [_selected(results[p], config) for p in files]


def _selected(result: FileResult, config: Config) -> FileResult:
    if not (config.select or config.ignore):
        return result
    return replace(result, findings=tuple(f for f in result.findings if config.enabled(f.rule)))

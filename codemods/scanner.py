"""Scan one file: prefilter, parse with stdlib ``ast``, analyse, run the rules, apply suppressions.

``scan_source`` never raises for a bad input file: a syntax error becomes ``FileResult.error``.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

from .analysis.facts import analyze
from .analysis.prefilter import might_match
from .config import Config
from .findings import FileResult, Finding
from .rules import RULES
from .suppress import suppressed

__all__ = ["scan_file", "scan_source"]


def scan_source(source: bytes | str, path: str, config: Config | None = None) -> FileResult:
    """Findings for one module's source text."""
    config = config or Config()
    data = source.encode() if isinstance(source, str) else source
    if not might_match(data, config.catalog):
        return FileResult(path=path, skipped=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ast.parse(data, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        return FileResult(
            path=path, error=f"cannot parse{where}: {exc.args[0] if exc.args else exc}"
        )
    facts = analyze(module, config.catalog)
    lines = data.decode("utf-8", errors="replace").splitlines()
    found: list[Finding] = []
    for rule in RULES:
        if not config.enabled(rule.ID):
            continue
        found.extend(f for f in rule.check(facts, path) if not suppressed(f, lines))
    return FileResult(path=path, findings=tuple(sorted(set(found))))


def scan_file(path: str, config: Config | None = None) -> FileResult:
    """Read and scan one file; an unreadable file is reported, not raised."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return FileResult(path=path, error=f"cannot read: {exc.strerror or exc}")
    return scan_source(data, path, config)

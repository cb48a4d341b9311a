"""Analyse one file: prefilter, parse with stdlib ``ast``, analyse, run the rules, apply
suppressions (``parsing`` reads newer syntax than the running Python's).

``analyse_source`` returns the file's result and its summary for the project index (see
``analysis/project.py``); it never raises for a bad input file: a syntax error becomes
``FileResult.error``. ``scan_source`` analyses a file on its own, as a project of one module.
"""

from __future__ import annotations

from pathlib import Path

from .analysis.env import Env
from .analysis.facts import analyze
from .analysis.prefilter import might_match
from .analysis.summary import Summary
from .config import Config
from .findings import FileResult, Finding
from .parsing import parse_module
from .rules import RULES
from .suppress import suppressed

__all__ = ["analyse_source", "scan_file", "scan_source"]


def analyse_source(
    data: bytes,
    path: str,
    config: Config,
    *,
    name: str = "",
    env: Env | None = None,
    force: bool = False,
) -> tuple[FileResult, Summary | None, str]:
    """Findings, summary and environment digest of one module (``force`` skips the prefilter,
    for a module the project index asked for)."""
    if not force and not might_match(data, config.catalog):
        return FileResult(path=path, skipped=True), None, ""
    try:
        module = parse_module(data, path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        message = f"cannot parse{where}: {exc.args[0] if exc.args else exc}"
        return FileResult(path=path, error=message), None, ""
    is_package = path.endswith("__init__.py")
    facts = analyze(module, config.catalog, name=name, is_package=is_package, env=env)
    found: list[Finding] = []
    for rule in RULES:
        if config.enabled(rule.ID):
            found.extend(rule.check(facts, path))
    if found:  # most analysed modules have no finding: decode their text only when needed
        lines = data.decode("utf-8", errors="replace").splitlines()
        found = [f for f in found if not suppressed(f, lines)]
    result = FileResult(path=path, findings=tuple(sorted(set(found))))
    return result, facts.summary, facts.env.digest()


def scan_source(source: bytes | str, path: str, config: Config | None = None) -> FileResult:
    """Findings for one module's source text, analysed on its own."""
    data = source.encode() if isinstance(source, str) else source
    return analyse_source(data, path, config or Config())[0]


def scan_file(path: str, config: Config | None = None) -> FileResult:
    """Read and scan one file on its own; an unreadable file is reported, not raised."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return FileResult(path=path, error=f"cannot read: {exc.strerror or exc}")
    return scan_source(data, path, config)

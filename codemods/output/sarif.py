"""SARIF 2.1.0 for GitHub code scanning: one run, stable ``ruleId``, rule metadata, 1-based
columns, repository-relative URIs and ``partialFingerprints.primaryLocationLineHash``.

Files that could not be analysed appear as error notifications of the run's invocation.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any

from ..findings import FileResult, Finding
from ..rules import RULES
from .paths import shown_path

__all__ = ["render_sarif"]

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/guardkit/guardkit/blob/main/docs/rules.md"
_LEVELS = {"GK1": "warning", "GK2": "error", "GK3": "warning"}
_SEVERITY = {"GK1": "6.5", "GK2": "8.0", "GK3": "5.0"}


def _version() -> str:
    try:
        return metadata.version("guardkit")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _uri(path: str, root: Path) -> str:
    shown = shown_path(path, str(root))
    return Path(shown).resolve().as_uri() if Path(shown).is_absolute() else shown


def _rule(rule: Any) -> dict[str, Any]:
    group = rule.ID[:3]
    return {
        "id": rule.ID,
        "name": rule.name(),
        "shortDescription": {"text": rule.title()},
        "fullDescription": {"text": rule.EXPLANATION[:1024]},
        "help": {"text": rule.FIX[:1024], "markdown": f"{rule.EXPLANATION}\n\n**Fix:** {rule.FIX}"},
        "helpUri": f"{INFO_URI}#{rule.ID.lower()}",
        "defaultConfiguration": {"level": _LEVELS[group]},
        "properties": {
            "tags": ["security", "guardkit", "llm-agent"],
            "precision": "medium",
            "problem.severity": "error" if _LEVELS[group] == "error" else "warning",
            "security-severity": _SEVERITY[group],
        },
    }


def _fingerprint(f: Finding, line_text: str, seen: dict[str, int]) -> str:
    base = f"{f.rule}\0{f.symbol}\0{line_text.strip()}"
    key = hashlib.sha256(base.encode()).hexdigest()[:16]
    seen[key] = seen.get(key, 0) + 1
    return f"{key}:{seen[key]}"


def _result(f: Finding, uri: str, lines: list[str], seen: dict[str, int]) -> dict[str, Any]:
    text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
    region = {"startLine": f.line, "startColumn": f.column + 1}
    if (f.end_line, f.end_column) > (f.line, f.column):
        region |= {"endLine": f.end_line, "endColumn": f.end_column + 1}
    location = {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}
    return {
        "ruleId": f.rule,
        "level": _LEVELS[f.rule[:3]],
        "message": {"text": f.message},
        "locations": [location],
        "partialFingerprints": {"primaryLocationLineHash": _fingerprint(f, text, seen)},
        "properties": {"fixable": f.fixable, "symbol": f.symbol},
    }


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def render_sarif(results: list[FileResult], root: str | None = None) -> str:
    base = Path(root or os.getcwd()).resolve()
    sarif_results: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for result in results:
        uri = _uri(result.path, base)
        if result.error is not None:
            where = {"physicalLocation": {"artifactLocation": {"uri": uri}}}
            notes.append(
                {"level": "error", "message": {"text": result.error}, "locations": [where]}
            )
        seen: dict[str, int] = {}
        lines = _lines(result.path) if result.findings else []
        sarif_results += [_result(f, uri, lines, seen) for f in result.findings]
    driver = {
        "name": "guardkit",
        "semanticVersion": _version(),
        "informationUri": INFO_URI,
        "rules": [_rule(rule) for rule in RULES],
    }
    run = {
        "tool": {"driver": driver},
        "automationDetails": {"id": "guardkit/"},
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notes}],
        "results": sarif_results,
    }
    log = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"

"""Machine-readable report: ``{"version", "findings": [...], "errors": [...], "files"}``, with
paths relative to the scanned root, as in the text and SARIF reports."""

from __future__ import annotations

import json

from ..findings import FileResult
from .paths import shown_path

__all__ = ["render_json"]


def render_json(results: list[FileResult], root: str | None = None) -> str:
    findings = [
        {**f.to_dict(), "path": shown_path(f.path, root)} for r in results for f in r.findings
    ]
    errors = [
        {"path": shown_path(r.path, root), "error": r.error} for r in results if r.error is not None
    ]
    report = {"version": 1, "files": len(results), "findings": findings, "errors": errors}
    return json.dumps(report, indent=2) + "\n"

"""Machine-readable report: ``{"version", "findings": [...], "errors": [...], "files"}``."""

from __future__ import annotations

import json

from ..findings import FileResult

__all__ = ["render_json"]


def render_json(results: list[FileResult]) -> str:
    findings = [f.to_dict() for r in results for f in r.findings]
    errors = [{"path": r.path, "error": r.error} for r in results if r.error is not None]
    report = {"version": 1, "files": len(results), "findings": findings, "errors": errors}
    return json.dumps(report, indent=2) + "\n"

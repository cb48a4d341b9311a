"""Human-readable report: ``path:line:col: GK101 message [*]`` (``[*]`` marks a fixable finding)."""

from __future__ import annotations

from ..findings import FileResult
from .paths import shown_path as _rel

__all__ = ["render_text"]


def render_text(results: list[FileResult]) -> str:
    lines: list[str] = []
    count = fixable = errors = flagged = 0
    for result in results:
        flagged += bool(result.findings)
        if result.error is not None:
            errors += 1
            lines.append(f"{_rel(result.path)}: error: {result.error}")
        for f in result.findings:
            count += 1
            fixable += f.fixable
            mark = " [*]" if f.fixable else ""
            lines.append(f"{_rel(f.path)}:{f.line}:{f.column + 1}: {f.rule} {f.message}{mark}")
    summary = f"Found {count} finding{'s' if count != 1 else ''}"
    if fixable:
        summary += f" ({fixable} fixable with `guardkit fix --write`)"
    if errors:
        summary += f"; {errors} file{'s' if errors != 1 else ''} could not be analysed"
    files = f"{len(results)} file{'s' if len(results) != 1 else ''}"
    # the files with findings, of the files scanned: "Found 7 findings in 1 of 2 files."
    lines.append(summary + (f" in {flagged} of {files}." if count else f" in {files}."))
    return "\n".join(lines) + "\n"

"""Inline suppressions: ``# guardkit: ignore[GK201]`` on the flagged line or alone on the line
above; ``# guardkit: ignore`` without brackets silences every rule there."""

from __future__ import annotations

import re

from .findings import Finding

__all__ = ["suppressed"]

_COMMENT = re.compile(r"#\s*guardkit:\s*ignore(?:\[([A-Za-z0-9_, ]*)\])?")


def _ids(line: str) -> set[str] | None:
    """``None`` when the line has no suppression, ``{"*"}`` for all rules."""
    match = _COMMENT.search(line)
    if match is None:
        return None
    if match.group(1) is None:
        return {"*"}
    return {part.strip() for part in match.group(1).split(",") if part.strip()}


def suppressed(finding: Finding, lines: list[str]) -> bool:
    """Whether an inline comment silences ``finding``."""
    candidates = list(range(finding.line, finding.end_line + 1))
    above = finding.line - 1
    if above >= 1 and lines[above - 1].lstrip().startswith("#"):
        candidates.append(above)
    for number in candidates:
        if number > len(lines) or "guardkit" not in lines[number - 1]:
            continue
        ids = _ids(lines[number - 1])
        if ids and ("*" in ids or finding.rule in ids):
            return True
    return False

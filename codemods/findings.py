"""The values a scan produces: one ``Finding`` per problem, one ``FileResult`` per file.

Both are frozen, slotted and keyword-only so they pickle cheaply across worker processes and can
be stored in the cache as plain dicts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["FileResult", "Finding"]


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Finding:
    """One problem found in one file. Lines are 1-based, columns 0-based (as in ``ast``)."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    rule: str
    symbol: str
    message: str
    fixable: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(**data)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileResult:
    """The outcome of scanning one file: its findings, or the error that stopped its analysis."""

    path: str
    findings: tuple[Finding, ...] = field(default=())
    error: str | None = None
    cached: bool = False
    skipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "findings": [f.to_dict() for f in self.findings],
            "error": self.error,
            "skipped": self.skipped,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, cached: bool = False) -> FileResult:
        return cls(
            path=data["path"],
            findings=tuple(Finding.from_dict(f) for f in data["findings"]),
            error=data["error"],
            skipped=data.get("skipped", False),
            cached=cached,
        )

"""Guard coverage's vocabulary: the tools found, what ran, the violations, and the report.

Everything here is plain data that crosses a process boundary as JSON-able dicts: an xdist
controller hands the tools to its workers (``ToolDict``) and the workers send back what they
recorded (``WorkerOutput``). ``CoverageReport`` is built once, where the session is reported.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TypedDict

__all__ = [
    "CoverageReport",
    "RunCounts",
    "ToolDict",
    "ToolEntry",
    "Violation",
    "WorkerOutput",
]


class ToolDict(TypedDict):
    """A ``ToolEntry`` on the wire (``pytest_configure_node`` → a worker's ``workerinput``)."""

    name: str
    path: str
    line: int
    how: str
    guarded: bool
    first_line: int
    aliases: list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolEntry:
    """A tool the static pass found; ``path`` is relative to the rootdir when it is inside it."""

    name: str
    path: str
    line: int
    how: str
    guarded: bool
    #: ``co_firstlineno`` of its code (the first decorator's line), 0 when it has no ``def`` here.
    first_line: int = 0
    #: Other names a model calls it by: a decorator's ``name=``, its keys in name->function tables.
    aliases: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.name}"

    @property
    def names(self) -> frozenset[str]:
        """Names a guard request for this tool may use: its own, its class's, its aliases."""
        head, _, tail = self.name.rpartition(".")
        return frozenset({self.name, tail, head, *self.aliases} - {""})

    def to_dict(self) -> ToolDict:
        return ToolDict(
            name=self.name,
            path=self.path,
            line=self.line,
            how=self.how,
            guarded=self.guarded,
            first_line=self.first_line,
            aliases=list(self.aliases),
        )

    @classmethod
    def from_dict(cls, data: ToolDict) -> ToolEntry:
        return cls(
            name=data["name"],
            path=data["path"],
            line=data["line"],
            how=data["how"],
            guarded=data["guarded"],
            first_line=data["first_line"],
            aliases=tuple(data["aliases"]),
        )


@dataclass(frozen=True, slots=True)
class Violation:
    """A tool body that started without a guard request for it."""

    test: str
    tool: str
    path: str
    line: int

    def describe(self) -> str:
        return f"tool {self.tool!r} ({self.path}:{self.line}) ran without going through the guard"


class CountsDict(TypedDict):
    runs: dict[str, int]
    requests: dict[str, int]
    denials: dict[str, int]


class WorkerOutput(TypedDict):
    """What an xdist worker sends its controller (``workeroutput["guardkit"]``)."""

    counts: CountsDict
    violations: list[tuple[str, str, str, int]]


@dataclass(slots=True)
class RunCounts:
    """Tool runs by ``ToolEntry.key``; guard requests and denials by tool name."""

    runs: Counter[str] = field(default_factory=Counter)
    requests: Counter[str] = field(default_factory=Counter)
    denials: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> CountsDict:
        return {
            "runs": dict(self.runs),
            "requests": dict(self.requests),
            "denials": dict(self.denials),
        }

    def merge(self, data: CountsDict) -> None:
        self.runs.update(data["runs"])
        self.requests.update(data["requests"])
        self.denials.update(data["denials"])


@dataclass(frozen=True, slots=True)
class Row:
    tool: ToolEntry
    called: bool
    denial_exercised: bool
    runs: int
    requests: int
    denials: int


@dataclass(slots=True)
class CoverageReport:
    """The tools with their runtime counts, the guarded share and the strict-mode violations.

    ``sources`` are where discovery looked (as shown to the user), for the "no tools found" case.
    """

    rows: list[Row]
    violations: list[Violation]
    sources: list[str]

    @classmethod
    def build(
        cls,
        tools: Sequence[ToolEntry],
        counts: RunCounts,
        violations: Sequence[Violation],
        sources: Sequence[str],
    ) -> CoverageReport:
        rows = []
        for entry in tools:
            runs = counts.runs.get(entry.key, 0)
            requests = sum(counts.requests.get(n, 0) for n in entry.names)
            denials = sum(counts.denials.get(n, 0) for n in entry.names)
            rows.append(Row(entry, runs + requests > 0, denials > 0, runs, requests, denials))
        return cls(rows, list(violations), list(sources))

    @property
    def percent(self) -> float | None:
        """The guarded share of the tools found; ``None`` when none were found."""
        if not self.rows:
            return None
        return 100.0 * sum(r.tool.guarded for r in self.rows) / len(self.rows)

    def lines(self) -> list[str]:
        if not self.rows:
            return [
                f"no tools found in {', '.join(self.sources)} (test modules are skipped)",
                "point --guard-source or the guard_coverage_paths ini key at the code that "
                "defines your tools",
            ]
        width = max(len("tool"), *(len(r.tool.name) for r in self.rows))
        place = max(len("where"), *(len(f"{r.tool.path}:{r.tool.line}") for r in self.rows))
        out = [f"{'tool':<{width}}  {'where':<{place}}  guarded  called  denial path"]
        for r in self.rows:
            where = f"{r.tool.path}:{r.tool.line}"
            out.append(
                f"{r.tool.name:<{width}}  {where:<{place}}  {_yes(r.tool.guarded):<7}  "
                f"{_yes(r.called):<6}  {_yes(r.denial_exercised)}"
            )
        guarded = sum(r.tool.guarded for r in self.rows)
        out.append(f"TOTAL {guarded}/{len(self.rows)} tools guarded ({self.percent:.2f}%)")
        unguarded = [r.tool.name for r in self.rows if not r.tool.guarded]
        if unguarded:
            out.append("ungated: " + ", ".join(unguarded))
        return out

    def shortfall(self, fail_under: float, allow_no_tools: bool) -> str | None:
        """Why the session fails ``--guard-fail-under``, or ``None`` when it passes."""
        percent = self.percent
        if percent is None:
            if allow_no_tools:
                return None
            return (
                f"FAIL Required guard coverage of {fail_under:g}% not reached: no tools found. "
                "If this project has none, pass --guard-allow-no-tools "
                "(ini: guard_allow_no_tools = true)."
            )
        if percent < fail_under:
            return (
                f"FAIL Required guard coverage of {fail_under:g}% not reached. "
                f"Total guarded: {percent:.2f}%"
            )
        return None

    def to_json(self, fail_under: float | None) -> str:
        tools = [
            {
                **asdict(r.tool),
                "called": r.called,
                "denial_exercised": r.denial_exercised,
                "runs": r.runs,
                "requests": r.requests,
                "denials": r.denials,
            }
            for r in self.rows
        ]
        percent = self.percent
        data = {
            "version": 2,
            "sources": self.sources,
            "guarded_percent": None if percent is None else round(percent, 2),
            "fail_under": fail_under,
            "tools": tools,
            "violations": [asdict(v) for v in self.violations],
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _yes(value: bool) -> str:
    return "yes" if value else "no"

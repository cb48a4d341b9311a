"""Guard coverage: which tools exist (static), which ran or were denied (runtime), and strict mode.

Discovery uses the static pass of ``guardkit scan`` (``guardkit.codemods``): every function it
finds exposed to a model (framework decorators, ``Tool(func=...)``, tool classes, name->function
dispatch tables), with whether it is gated.

The runtime side is a profile hook (``sys.setprofile`` and ``threading.setprofile``), installed
only while coverage or strict mode is on. It sees two kinds of calls:

* a guard request (``LocalAgent.request`` / ``deny_local``, ``AgentClient.request``): it records
  the tool name, the guardkit frames on the stack at that moment (the decorator's wrapper, the
  loop's ``run_tool_call``), and on return whether the guard denied it;
* the body of a discovered tool starting (matched by code object: file, first line, name).

A tool body that starts is *guarded* when an unconsumed, not-denied request is waiting whose
tool name equals the tool's name, or whose guardkit frames include a live caller of the body
(so ``@guardkit.tool(name="x")`` and the loop's name->function tables match even when the names
differ). The request is then consumed: every run needs its own request. Requests for
``llm_turn`` never authorise a tool. A body that starts with no such request is a violation,
which fails the test in strict mode, however the tool was reached (``getattr``, ``globals()``,
a framework's registry).
"""

from __future__ import annotations

import ast
import fnmatch
import json
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

__all__ = [
    "CoverageReport",
    "Recorder",
    "ToolEntry",
    "Violation",
    "discover",
]

_SKIP_DIRS = {".git", ".hg", ".tox", ".nox", ".venv", "venv", "node_modules", "__pycache__"}
_PENDING_MAX = 64
_ANCESTOR_DEPTH = 64
_EVENTS = frozenset({"call", "return"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolEntry:
    """A tool the static pass found."""

    name: str
    path: str
    line: int
    how: str
    guarded: bool
    #: ``co_firstlineno`` of its code (the first decorator's line), 0 when it has no ``def`` here.
    first_line: int = 0
    #: Keys it is registered under in name->function tables (``{"search": do_search}``).
    aliases: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.name}"

    @property
    def names(self) -> frozenset[str]:
        """Names a guard request for this tool may use: its own, its class's, its table keys."""
        head, _, tail = self.name.rpartition(".")
        return frozenset({self.name, tail, head, *self.aliases} - {""})


# -- discovery -------------------------------------------------------------------------------


def _python_files(paths: Iterable[Path]) -> Iterator[Path]:
    for base in paths:
        if base.is_file() and base.suffix == ".py":
            yield base
            continue
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(base).parts
            if any(p in _SKIP_DIRS or p.startswith(".") or p == "site-packages" for p in parts):
                continue
            name = path.name
            if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
                continue
            yield path


def _first_line(node: ast.AST) -> int:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return min([d.lineno for d in node.decorator_list] + [node.lineno])
    return 0


def _table_keys(module: ast.Module) -> dict[str, tuple[str, ...]]:
    """``{"search": do_search}`` literals: function name -> the string keys that name it."""
    keys: dict[str, set[str]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                text = key.value if isinstance(key, ast.Constant) else None
                if isinstance(text, str) and isinstance(value, ast.Name) and value.id != text:
                    keys.setdefault(value.id, set()).add(text)
    return {name: tuple(sorted(found)) for name, found in keys.items()}


def discover(paths: Sequence[Path], root: Path) -> list[ToolEntry]:
    """Every tool under ``paths``, sorted by place.

    Test modules and conftests are skipped, and so are the ``exclude`` patterns of the project's
    ``[tool.guardkit]`` table (which also names extra tool decorators). Raises ``ValueError`` for a
    malformed table.
    """
    from guardkit.codemods.analysis.facts import analyze  # type: ignore[import-not-found,unused-ignore]
    from guardkit.codemods.analysis.prefilter import might_match  # type: ignore[import-not-found,unused-ignore]
    from guardkit.codemods.config import find_pyproject, load_config  # type: ignore[import-not-found,unused-ignore]

    config = load_config(find_pyproject(root))
    found: dict[str, ToolEntry] = {}
    for path in _python_files(paths):
        shown = _shown(path, root)
        if any(fnmatch.fnmatch(shown, pattern) for pattern in config.exclude):
            continue
        data = path.read_bytes()
        if not might_match(data, config.catalog):
            continue
        try:
            module = ast.parse(data, filename=str(path))
        except (SyntaxError, ValueError):
            continue
        aliases = _table_keys(module)
        for site in analyze(module, config.catalog).tools:
            entry = ToolEntry(
                name=site.name,
                path=shown,
                line=getattr(site.node, "lineno", 0),
                how=site.how,
                guarded=site.gated,
                first_line=_first_line(site.node),
                aliases=aliases.get(site.name.rpartition(".")[2], ()),
            )
            found[f"{path.resolve()}\0{entry.key}"] = entry
    return sorted(found.values(), key=lambda e: (e.path, e.line, e.name))


def _shown(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


# -- runtime ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Violation:
    """A tool body that started without a guard request for it."""

    test: str
    tool: str
    path: str
    line: int

    def describe(self) -> str:
        return f"tool {self.tool!r} ({self.path}:{self.line}) ran without going through the guard"


@dataclass(slots=True)
class _Request:
    tool: str
    frames: tuple[FrameType, ...]
    thread: int


@dataclass(slots=True)
class _Runtime:
    """Counters that travel from xdist workers to the controller as plain dicts."""

    runs: Counter[str] = field(default_factory=Counter)
    requests: Counter[str] = field(default_factory=Counter)
    denials: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {
            "runs": dict(self.runs),
            "requests": dict(self.requests),
            "denials": dict(self.denials),
        }

    def merge(self, data: dict[str, dict[str, int]]) -> None:
        self.runs.update(data.get("runs", {}))
        self.requests.update(data.get("requests", {}))
        self.denials.update(data.get("denials", {}))


def _guard_request_codes() -> dict[CodeType, str]:
    """Code objects of the agent guards' request methods -> the name of their tool argument."""
    from guardkit.local import LocalAgent

    codes = {LocalAgent.request.__code__: "tool", LocalAgent.deny_local.__code__: "tool"}
    try:
        from guardkit.client import AgentClient
    except ImportError:  # pragma: no cover - the client needs the client extra
        return codes
    codes[AgentClient.request.__code__] = "tool"
    return codes


class Recorder:
    """The profile hook: counts tool runs, guard requests and denials; finds unguarded runs."""

    def __init__(self, tools: Sequence[ToolEntry], root: Path) -> None:
        import guardkit

        self._guardkit_dir = str(Path(guardkit.__file__).resolve().parent)
        self._requests = _guard_request_codes()
        self._by_place: dict[tuple[str, int, str], ToolEntry] = {}
        for entry in tools:
            if entry.first_line:
                filename = str((root / entry.path).resolve())
                short = entry.name.rpartition(".")[2]
                self._by_place[(filename, entry.first_line, short)] = entry
        self._codes: dict[CodeType, ToolEntry | str | None] = {}
        self._lock = threading.Lock()
        self._pending: list[_Request] = []
        self._started: set[int] = set()
        self.data = _Runtime()
        self.violations: list[Violation] = []
        self.test = ""
        self.active = False
        self._previous: tuple[Any, Any] = (None, None)

    # -- switching ---------------------------------------------------------------------------

    def install(self) -> None:
        if not self.active:
            self.active = True
            self._previous = (sys.getprofile(), threading.getprofile())
            threading.setprofile(self._profile)
            sys.setprofile(self._profile)

    def uninstall(self) -> None:
        """Remove the hook and put back whatever profile function was set before."""
        if self.active:
            previous, previous_threads = self._previous
            sys.setprofile(previous)
            threading.setprofile(previous_threads)
            self.active = False

    def start_test(self, nodeid: str) -> None:
        with self._lock:
            self.test = nodeid
            self._pending.clear()
            self._started.clear()

    def take_violations(self, nodeid: str) -> list[Violation]:
        with self._lock:
            mine = [v for v in self.violations if v.test == nodeid]
            self._pending.clear()
        return mine

    # -- the hook ----------------------------------------------------------------------------

    def _classify(self, code: CodeType) -> ToolEntry | str | None:
        found: ToolEntry | str | None = self._requests.get(code)
        if found is None:
            found = self._by_place.get((code.co_filename, code.co_firstlineno, code.co_name))
        self._codes[code] = found
        return found

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event not in _EVENTS:
            return
        code = frame.f_code
        try:
            kind = self._codes[code]
        except KeyError:
            kind = self._classify(code)
        if kind is None:
            return
        if isinstance(kind, str):
            self._on_request(frame, event, arg, kind)
        elif event == "call":
            self._on_tool(frame, kind)

    def _on_request(self, frame: FrameType, event: str, arg: Any, argname: str) -> None:
        tool = str(frame.f_locals.get(argname))
        thread = threading.get_ident()
        if event == "call":
            with self._lock:
                self.data.requests[tool] += 1
                if tool != "llm_turn":
                    frames = self._guardkit_frames(frame.f_back)
                    self._pending.append(_Request(tool, frames, thread))
                    del self._pending[:-_PENDING_MAX]
            return
        if isinstance(arg, dict) and arg.get("decision") == "denied":
            with self._lock:
                self.data.denials[tool] += 1
                for index in range(len(self._pending) - 1, -1, -1):
                    if self._pending[index].tool == tool and self._pending[index].thread == thread:
                        del self._pending[index]
                        break

    def _guardkit_frames(self, frame: FrameType | None) -> tuple[FrameType, ...]:
        frames: list[FrameType] = []
        depth = 0
        while frame is not None and depth < _ANCESTOR_DEPTH:
            if frame.f_code.co_filename.startswith(self._guardkit_dir):
                frames.append(frame)
            frame = frame.f_back
            depth += 1
        return tuple(frames)

    def _on_tool(self, frame: FrameType, entry: ToolEntry) -> None:
        if frame.f_code.co_flags & 0x2A0:  # generator, coroutine, async generator: resumes
            if id(frame) in self._started:
                return
            self._started.add(id(frame))
        with self._lock:
            self.data.runs[entry.key] += 1
            if not self._consume(frame, entry):
                self.violations.append(Violation(self.test, entry.name, entry.path, entry.line))

    def _consume(self, frame: FrameType, entry: ToolEntry) -> bool:
        names = entry.names
        pending = self._pending
        for index in range(len(pending) - 1, -1, -1):
            if pending[index].tool in names:
                del pending[index]
                return True
        callers = self._callers(frame)
        for index in range(len(pending) - 1, -1, -1):
            if any(id(f) in callers for f in pending[index].frames):
                del pending[index]
                return True
        return False

    @staticmethod
    def _callers(frame: FrameType) -> set[int]:
        seen: set[int] = set()
        caller = frame.f_back
        while caller is not None and len(seen) < _ANCESTOR_DEPTH:
            seen.add(id(caller))
            caller = caller.f_back
        return seen


# -- the report ------------------------------------------------------------------------------


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
    """The tools with their runtime counts, the guarded share and the strict-mode violations."""

    rows: list[Row]
    violations: list[Violation]

    @classmethod
    def build(
        cls, tools: Sequence[ToolEntry], data: _Runtime, violations: Sequence[Violation]
    ) -> CoverageReport:
        rows = []
        for entry in tools:
            runs = data.runs.get(entry.key, 0)
            requests = sum(data.requests.get(n, 0) for n in entry.names)
            denials = sum(data.denials.get(n, 0) for n in entry.names)
            rows.append(Row(entry, runs + requests > 0, denials > 0, runs, requests, denials))
        return cls(rows, list(violations))

    @property
    def percent(self) -> float:
        """The guarded share of the tools found; 100 when there are none."""
        if not self.rows:
            return 100.0
        return 100.0 * sum(r.tool.guarded for r in self.rows) / len(self.rows)

    def lines(self) -> list[str]:
        if not self.rows:
            return ["no tools found"]
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
        data = {
            "version": 1,
            "guarded_percent": round(self.percent, 2),
            "fail_under": fail_under,
            "tools": tools,
            "violations": [asdict(v) for v in self.violations],
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _yes(value: bool) -> str:
    return "yes" if value else "no"

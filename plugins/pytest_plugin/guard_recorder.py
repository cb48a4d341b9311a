"""The runtime side of guard coverage: which tools ran, which guard requests were made.

A profile hook (``sys.setprofile`` and ``threading.setprofile``), installed only around the
setup, call and teardown of a test while coverage or strict mode is on, sees two kinds of calls:

* a guard request: ``LocalAgent.request`` / ``deny_local`` (its ``arequest`` / ``adeny_local``
  run these, on the event loop or in a worker thread) and ``AgentClient.request`` / ``arequest``
  / ``deny_local`` / ``adeny_local``. It records the tool name and the guardkit frames on the
  stack (a decorator's wrapper, the loop, a framework integration), and forgets the request when
  the guard denies it;
* the body of a discovered tool starting (matched by code object: file, first line, name;
  generators and coroutines when they start, not when they resume).

A tool body that starts is *guarded* when

1. guardkit is running an allowed action around it (``guardkit.current_action_id()`` is set:
   guarded tools, the loop and the framework integrations set it while the body runs, and it
   follows the call into ``asyncio.to_thread`` and tasks) that no enclosing tool body of the same
   call already used; or
2. an unconsumed request is waiting whose tool name is one of the tool's names, or whose guardkit
   frames include a live caller of the body (a hand-written dispatcher, a middleware).

A matching request is consumed either way: every run needs its own. ``llm_turn`` requests never
cover a tool. Anything else is a violation, however the tool was reached.
"""

from __future__ import annotations

import dis
import enum
import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from .guard_coverage import RunCounts, ToolEntry, Violation

__all__ = ["Recorder"]

_PENDING_MAX = 64
_ANCESTOR_DEPTH = 64
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
#: Frames of these modules are guardkit's, except the pytest plugin's own (always on the stack).
_GUARDKIT = "guardkit."


class _Unseen(enum.Enum):
    CODE = enum.auto()


_OURS = "guardkit.plugins.pytest_plugin"


@dataclass(frozen=True, slots=True)
class _RequestCode:
    """A guard method's code: the name of its tool argument."""

    argname: str


@dataclass(slots=True)
class _Request:
    tool: str
    frames: tuple[FrameType, ...]
    #: The request method's frame: its return says whether the guard denied it.
    owner: FrameType


def _guard_request_codes() -> dict[CodeType, _RequestCode]:
    """Code objects of the agent guards' request methods."""
    from guardkit.local import LocalAgent

    methods: list[Callable[..., Any]] = [LocalAgent.request, LocalAgent.deny_local]
    try:
        from guardkit.client import AgentClient
    except ImportError:  # pragma: no cover - the client needs the client extra
        pass
    else:
        methods += [
            AgentClient.request,
            AgentClient.arequest,
            AgentClient.deny_local,
            AgentClient.adeny_local,
        ]
    return {m.__code__: _RequestCode("tool") for m in methods}


def _starts(code: CodeType) -> frozenset[int]:
    """Offsets a generator or coroutine frame starts at (``RESUME 0``); resuming is elsewhere."""
    return frozenset(
        i.offset for i in dis.get_instructions(code) if i.opname == "RESUME" and not i.arg
    )


class Recorder:
    """The profile hook: counts tool runs, guard requests and denials; finds unguarded runs."""

    def __init__(self, tools: Sequence[ToolEntry], root: Path) -> None:
        from guardkit.tools.handoff import current_action_id

        self._action = current_action_id
        self._requests = _guard_request_codes()
        self._kinds: dict[CodeType, ToolEntry | _RequestCode | None] = dict(self._requests)
        self._by_place: dict[tuple[str, int, str], ToolEntry] = {}
        for entry in tools:
            if entry.first_line:
                path = root / entry.path
                short = entry.name.rpartition(".")[2]
                for filename in {os.path.abspath(path), os.path.realpath(path)}:
                    self._by_place[(filename, entry.first_line, short)] = entry
        self._starts: dict[CodeType, frozenset[int]] = {}
        self._lock = threading.Lock()
        self._pending: list[_Request] = []
        #: action id -> id of the tool body frame it let run
        self._used: dict[str, int] = {}
        self.counts = RunCounts()
        self.violations: list[Violation] = []
        self.test = ""
        self._hook = self._make_hook()

    # -- switching ---------------------------------------------------------------------------

    @contextmanager
    def installed(self) -> Iterator[None]:
        """The hook in place for the block; whatever profile function was set is put back."""
        previous = (sys.getprofile(), threading.getprofile())
        threading.setprofile(self._hook)
        sys.setprofile(self._hook)
        try:
            yield
        finally:
            sys.setprofile(previous[0])
            threading.setprofile(previous[1])

    def start_test(self, nodeid: str) -> None:
        with self._lock:
            self.test = nodeid
            self._pending.clear()
            self._used.clear()

    def take_violations(self, nodeid: str) -> list[Violation]:
        """The test's violations; requests left unused do not carry over to its teardown."""
        with self._lock:
            self._pending.clear()
            self._used.clear()
            return [v for v in self.violations if v.test == nodeid]

    # -- the hook ----------------------------------------------------------------------------

    def _make_hook(self) -> Callable[[FrameType, str, Any], None]:
        # Called for every Python and C call and return while installed: keep the common case
        # (a code object seen before, not ours) to one dict lookup.
        seen = self._kinds.get
        requests = self._requests
        classify = self._classify
        on_call = self._on_call
        on_return = self._on_return
        unseen = _Unseen.CODE

        def hook(frame: FrameType, event: str, arg: Any) -> None:
            if event == "call":
                kind = seen(frame.f_code, unseen)
                if kind is unseen:
                    kind = classify(frame.f_code)
                if kind is not None:
                    on_call(frame, kind)
            elif event == "return" and frame.f_code in requests:
                on_return(frame, requests[frame.f_code], arg)

        return hook

    def _classify(self, code: CodeType) -> ToolEntry | None:
        found = self._by_place.get((code.co_filename, code.co_firstlineno, code.co_name))
        self._kinds[code] = found
        return found

    def _resumed(self, frame: FrameType) -> bool:
        code = frame.f_code
        if not code.co_flags & _RESUMABLE:
            return False
        starts = self._starts.get(code)
        if starts is None:
            starts = self._starts[code] = _starts(code)
        return frame.f_lasti not in starts

    def _on_call(self, frame: FrameType, kind: ToolEntry | _RequestCode) -> None:
        if self._resumed(frame):
            return
        if isinstance(kind, ToolEntry):
            self._on_tool(frame, kind)
            return
        tool = str(frame.f_locals.get(kind.argname))
        with self._lock:
            self.counts.requests[tool] += 1
            if tool != "llm_turn":
                self._pending.append(_Request(tool, self._guardkit_frames(frame.f_back), frame))
                del self._pending[:-_PENDING_MAX]

    def _on_return(self, frame: FrameType, kind: _RequestCode, arg: Any) -> None:
        if not (isinstance(arg, dict) and arg.get("decision") == "denied"):
            return
        with self._lock:
            self.counts.denials[str(frame.f_locals.get(kind.argname))] += 1
            self._pending = [r for r in self._pending if r.owner is not frame]

    @staticmethod
    def _guardkit_frames(frame: FrameType | None) -> tuple[FrameType, ...]:
        frames: list[FrameType] = []
        depth = 0
        while frame is not None and depth < _ANCESTOR_DEPTH:
            module = frame.f_globals.get("__name__", "")
            if module.startswith(_GUARDKIT) and not module.startswith(_OURS):
                frames.append(frame)
            frame = frame.f_back
            depth += 1
        return tuple(frames)

    def _on_tool(self, frame: FrameType, entry: ToolEntry) -> None:
        action = self._action()
        with self._lock:
            self.counts.runs[entry.key] += 1
            callers = _callers(frame)
            allowed = action is not None and self._used.get(action) not in callers
            if allowed and action is not None:
                self._used[action] = id(frame)
            if not (self._consume(entry, callers) or allowed):
                self.violations.append(Violation(self.test, entry.name, entry.path, entry.line))

    def _consume(self, entry: ToolEntry, callers: set[int]) -> bool:
        names = entry.names
        pending = self._pending
        for index in range(len(pending) - 1, -1, -1):
            if pending[index].tool in names:
                del pending[index]
                return True
        for index in range(len(pending) - 1, -1, -1):
            if any(id(f) in callers for f in pending[index].frames):
                del pending[index]
                return True
        return False


def _callers(frame: FrameType) -> set[int]:
    seen: set[int] = set()
    caller = frame.f_back
    while caller is not None and len(seen) < _ANCESTOR_DEPTH:
        seen.add(id(caller))
        caller = caller.f_back
    return seen

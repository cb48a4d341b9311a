"""Per-call cost of ``guardkit.plugins.crewai``: a CrewAI tool call, bare and guarded.

Run in the crewai venv (crewai cannot be installed beside the dev extras):
``make crewai-venv && .venv-crewai/bin/python benchmarks/overhead_crewai.py [--calls N]``.

One call is timed as CrewAI's executor makes it (``execute_single_native_tool_call``): a
``ToolCallHookContext``, the ``before_tool_call`` hooks, ``tool.run(**args)``, a second context
with the result, the ``after_tool_call`` hooks; no model is in the figures. The bare call is made
with no hook registered (the guard's are taken off the global lists for it), as in a process
that never called ``guard``: CrewAI's dispatch is then a no-op, while with any hook registered it
also emits a ``HookDispatchedEvent`` on its event bus per dispatch, two per call, which is part of
what the integration costs (the row "hooks on, agent not guarded" shows it apart). The guarded
call is made for an agent passed through ``guard``. The guard is an allow-all ``LocalAgent``
over ``:memory:`` and over a SQLite file with ``durability="normal"``.

``measure(calls)`` returns the per-call latencies in seconds (``benchmarks/framework_overhead.py``
imports it); ``__main__`` prints medians and the floor measured alongside: the same ``request`` +
``report`` made by hand, so ``integration = guarded - bare - decision`` is what the integration
adds (target: at most 50 us). Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import Agent
from crewai.hooks import InterceptionPoint, ToolCallHookContext
from crewai.hooks.dispatch import get_global_hook_list
from crewai.hooks.tool_hooks import (
    run_after_tool_call_hooks,
    run_before_tool_call_hooks,
)
from crewai.llms.base_llm import BaseLLM
from crewai.tools import BaseTool, tool
from guardkit.plugins.crewai import guard

import guardkit

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {}, "default_rule": {"cost": 0}}
BARE = "crewai bare tool call"
HOOKED = "crewai hooks on, agent not guarded"
MEMORY = "crewai via guard (:memory:)"
SQLITE = "crewai via guard (sqlite normal)"
FLOOR = "decision alone: "

Call = Callable[[int], Any]


class _Idle(BaseLLM):
    """A model the benchmark never calls (the tool calls are timed directly)."""

    def call(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")


def _add() -> BaseTool:
    @tool("add")
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return add


def _agent(found: BaseTool) -> Agent:
    return Agent(role="bench", goal="add", backstory="b", llm=_Idle(model="idle"), tools=[found])


def _without_hooks(path: Call) -> Call:
    """``path`` run as in a process where no tool-call hook is registered."""
    lists = [
        get_global_hook_list(p)
        for p in (InterceptionPoint.PRE_TOOL_CALL, InterceptionPoint.POST_TOOL_CALL)
    ]

    def call(i: int) -> Any:
        saved = [list(hooks) for hooks in lists]
        for hooks in lists:
            hooks.clear()
        try:
            return path(i)
        finally:
            for hooks, kept in zip(lists, saved, strict=True):
                hooks.extend(kept)

    return call


def _tool_path(agent: Agent, found: BaseTool) -> Call:
    structured = found.to_structured_tool()

    def call(i: int) -> Any:
        args = {"a": i, "b": 1}
        before = ToolCallHookContext(tool_name="add", tool_input=args, tool=structured, agent=agent)
        if run_before_tool_call_hooks(before):
            result: Any = "blocked"
        else:
            result = str(found.run(**args))
        after = ToolCallHookContext(
            tool_name="add",
            tool_input=args,
            tool=structured,
            agent=agent,
            tool_result=result,
            raw_tool_result=result,
        )
        return run_after_tool_call_hooks(after)

    return call


def _decision_path(agent: guardkit.LocalAgent) -> Call:
    def decide(i: int) -> None:
        decision = agent.request("add", {"a": i, "b": 1})
        agent.report(decision["action_id"], "success")

    return decide


def _interleaved(paths: dict[str, Call], calls: int) -> dict[str, list[float]]:
    """Per-call latencies of each path, taken in turn so machine load drifts over all alike."""
    for i in range(min(200, calls)):
        for path in paths.values():
            path(-1 - i)
    samples: dict[str, list[float]] = {label: [] for label in paths}
    for i in range(calls):
        for label, path in paths.items():
            start = time.perf_counter()
            path(i)
            samples[label].append(time.perf_counter() - start)
    return samples


def _all(calls: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        stores = {MEMORY: ":memory:", SQLITE: str(Path(tmp) / "normal.db")}
        for label, store in stores.items():
            with guardkit.Guard(store, durability="normal") as g:
                g.create_agent("bench", POLICY)
                g.create_agent("floor", POLICY)
                guarded_tool, bare_tool = _add(), _add()
                guarded = guard(_agent(guarded_tool), g.agent("bench"))
                paths = {
                    BARE: _without_hooks(_tool_path(_agent(bare_tool), bare_tool)),
                    HOOKED: _tool_path(_agent(bare_tool), bare_tool),
                    label: _tool_path(guarded, guarded_tool),
                    FLOOR + label: _decision_path(g.agent("floor")),
                }
                for key, samples in _interleaved(paths, calls).items():
                    figures.setdefault(key, []).extend(samples)
    return figures


def measure(calls: int) -> dict[str, list[float]]:
    """Per-call latencies (seconds) of a bare CrewAI tool call and of the guarded one."""
    figures = _all(calls)
    return {
        BARE: figures[BARE][:calls],
        HOOKED: figures[HOOKED][:calls],
        MEMORY: figures[MEMORY],
        SQLITE: figures[SQLITE],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    calls = parser.parse_args().calls
    figures = _all(calls)
    bare = statistics.median(figures[BARE]) * 1e6
    hooked = statistics.median(figures[HOOKED]) * 1e6
    print(f"crewai tool call, median of {calls} calls (us)")
    print(f"  {BARE:52} {bare:9.2f}")
    print(f"  {HOOKED:52} {hooked:9.2f}   CrewAI's dispatch events {hooked - bare:7.2f}")
    for label in (MEMORY, SQLITE):
        guarded = statistics.median(figures[label]) * 1e6
        decision = statistics.median(figures[FLOOR + label]) * 1e6
        added = guarded - bare - decision
        print(
            f"  {label:52} {guarded:9.2f}   decision alone {decision:8.2f}"
            f"   integration adds {added:7.2f} (target <= 50)"
        )


if __name__ == "__main__":
    main()

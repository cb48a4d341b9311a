"""Per-call cost of ``guardkit.plugins.google_adk``: an ADK tool call, bare and guarded.

Run: ``.venv/bin/python benchmarks/overhead_google_adk.py [--calls N]``.

One tool call as ADK's flow makes it, timed directly so no model and no runner is in the
figures: the plugin manager's ``before_tool_callback``, ``FunctionTool.run_async`` and its
``after_tool_callback``, with a ``ToolContext`` of its own per call (as each function call has).
Bare is the same with no plugin; guarded has ``GuardPlugin`` first. The guard is an allow-all
``LocalAgent`` over ``:memory:`` and over a SQLite file with ``durability="normal"``.

``measure(calls)`` returns the per-call latencies in seconds (``benchmarks/framework_overhead.py``
imports it); ``__main__`` prints medians and the floor measured alongside: the same ``arequest``
+ ``areport`` made by hand, so ``integration = guarded - bare - decision`` is what the
integration adds (target: at most 50 us). Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from google.adk.agents import Agent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.plugins.plugin_manager import PluginManager
from google.adk.sessions import InMemorySessionService, Session
from google.adk.tools import FunctionTool, ToolContext
from guardkit.plugins.google_adk import GuardPlugin

import guardkit

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {}, "default_rule": {"cost": 0}}
BARE = "google-adk bare tool call"
MEMORY = "google-adk via guard (:memory:)"
SQLITE = "google-adk via guard (sqlite normal)"
FLOOR = "decision alone: "

Call = Callable[[int], Awaitable[Any]]


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _tool_path(plugins: PluginManager) -> Call:
    """One tool call with ``plugins``' callbacks around it, as ADK's flow makes it."""
    tool = FunctionTool(add)
    context = InvocationContext(
        session_service=InMemorySessionService(),
        invocation_id="bench",
        agent=Agent(name="bench", model="gemini-2.5-flash", tools=[tool]),
        session=Session(id="s", app_name="bench", user_id="u"),
        plugin_manager=plugins,
    )

    async def call(i: int) -> Any:
        args = {"a": i, "b": 1}
        tool_context = ToolContext(context, function_call_id=f"call-{i}")
        early = await plugins.run_before_tool_callback(
            tool=tool, tool_args=args, tool_context=tool_context
        )
        if early is not None:
            raise AssertionError(f"refused: {early}")
        result = await tool.run_async(args=args, tool_context=tool_context)
        await plugins.run_after_tool_callback(
            tool=tool, tool_args=args, tool_context=tool_context, result={"result": result}
        )
        return result

    return call


def _decision_path(agent: guardkit.LocalAgent) -> Call:
    async def decide(i: int) -> None:
        decision = await agent.arequest("add", {"a": i, "b": 1})
        await agent.areport(decision["action_id"], "success")

    return decide


async def _interleaved(paths: dict[str, Call], calls: int) -> dict[str, list[float]]:
    """Per-call latencies of each path, taken in turn so machine load drifts over all alike."""
    for i in range(min(200, calls)):
        for path in paths.values():
            await path(-1 - i)
    samples: dict[str, list[float]] = {label: [] for label in paths}
    for i in range(calls):
        for label, path in paths.items():
            start = time.perf_counter()
            await path(i)
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
                guarded = PluginManager(plugins=[GuardPlugin(g.agent("bench"))])
                paths = {
                    BARE: _tool_path(PluginManager()),
                    label: _tool_path(guarded),
                    FLOOR + label: _decision_path(g.agent("floor")),
                }
                for key, samples in asyncio.run(_interleaved(paths, calls)).items():
                    figures.setdefault(key, []).extend(samples)
    return figures


def measure(calls: int) -> dict[str, list[float]]:
    """Per-call latencies (seconds) of a bare ADK tool call and of the guarded one."""
    figures = _all(calls)
    return {BARE: figures[BARE][:calls], MEMORY: figures[MEMORY], SQLITE: figures[SQLITE]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    calls = parser.parse_args().calls
    figures = _all(calls)
    bare = statistics.median(figures[BARE]) * 1e6
    print(f"google-adk tool call, median of {calls} calls (us)")
    print(f"  {BARE:52} {bare:9.2f}")
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

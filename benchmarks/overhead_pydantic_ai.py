"""Per-call cost of ``GuardedToolset``: pydantic-ai's tool-call path, bare and guarded.

Run: ``.venv/bin/python benchmarks/overhead_pydantic_ai.py [--calls N]``.

The toolset's ``call_tool`` is timed directly, with the ``RunContext`` and ``ToolsetTool`` that
``get_tools`` gives (as pydantic-ai's tool manager calls it, after argument validation), so no
model fake and no agent graph is in the figures. The tool is an ``async def`` (a sync tool adds
pydantic-ai's own thread hop to both sides equally). The guard is an allow-all ``LocalAgent``
over ``:memory:`` and over a SQLite file with ``durability="normal"``.

``measure(calls)`` returns the per-call latencies in seconds (``benchmarks/framework_overhead.py``
imports it); ``__main__`` prints medians, and the floor: the guard decision itself, the same
``arequest`` + ``areport`` made by hand, so ``integration = guarded - bare - decision`` is what
the integration adds (target: at most 50 us). Figures only: nothing here asserts a time.
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

from guardkit.plugins.pydantic_ai import GuardedToolset
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.usage import RunUsage

import guardkit

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {}, "default_rule": {"cost": 0}}
BARE = "pydantic-ai bare tool call"
MEMORY = "pydantic-ai via GuardedToolset (:memory:)"
SQLITE = "pydantic-ai via GuardedToolset (sqlite normal)"
#: Prefix of the decision-alone rows (``__main__`` only).
FLOOR = "decision alone: "


def _toolset() -> FunctionToolset[None]:
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    async def add(a: int, b: int) -> int:
        return a + b

    return toolset


Call = Callable[[int], Awaitable[Any]]


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


async def _tool_path(toolset: AbstractToolset[None]) -> Call:
    """One tool call through ``toolset.call_tool``, as pydantic-ai's tool manager makes it."""
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), tool_name="add")
    tool = (await toolset.get_tools(ctx))["add"]

    async def call(i: int) -> Any:
        return await toolset.call_tool("add", {"a": i, "b": 1}, ctx, tool)

    return call


def _decision_path(agent: guardkit.LocalAgent) -> Call:
    """The guard decision alone: ``arequest`` + ``areport`` by hand."""

    async def decide(i: int) -> None:
        decision = await agent.arequest("add", {"a": i, "b": 1})
        await agent.areport(decision["action_id"], "success")

    return decide


def _all(calls: int) -> dict[str, list[float]]:
    """Bare, guarded and decision-alone latencies (``measure`` and its floors).

    Each store is its own pass, its guarded calls interleaved with the bare ones and with the
    decision alone: SQLite's worker-thread hops would otherwise disturb the in-memory figures.
    """
    with tempfile.TemporaryDirectory() as tmp:
        guards = {
            MEMORY: guardkit.Guard(":memory:"),
            SQLITE: guardkit.Guard(Path(tmp) / "normal.db", durability="normal"),
        }

        async def run() -> dict[str, list[float]]:
            figures: dict[str, list[float]] = {}
            bare = await _tool_path(_toolset())
            for label, guard in guards.items():
                guard.create_agent("bench", POLICY)
                guard.create_agent("floor", POLICY)
                paths = {
                    BARE: bare,
                    label: await _tool_path(GuardedToolset(_toolset(), guard.agent("bench"))),
                    FLOOR + label: _decision_path(guard.agent("floor")),
                }
                for key, samples in (await _interleaved(paths, calls)).items():
                    figures.setdefault(key, []).extend(samples)
            return figures

        try:
            return asyncio.run(run())
        finally:
            for guard in guards.values():
                guard.close()


def measure(calls: int) -> dict[str, list[float]]:
    """Per-call latencies (seconds) of a bare pydantic-ai tool call and of the guarded one."""
    figures = _all(calls)
    return {BARE: figures[BARE][:calls], MEMORY: figures[MEMORY], SQLITE: figures[SQLITE]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    calls = parser.parse_args().calls
    figures = _all(calls)
    bare = statistics.median(figures[BARE]) * 1e6
    print(f"pydantic-ai tool call, median of {calls} calls (us)")
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

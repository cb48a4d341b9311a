"""Per-call cost of ``guardkit.plugins.llama_index``: a LlamaIndex tool call, bare and guarded.

Run: ``.venv/bin/python benchmarks/overhead_llama_index.py [--calls N]``.

``await tool.acall(**kwargs)`` is timed directly, as the agent's ``call_tool`` step makes it, so
no model fake and no workflow runtime is in the figures. The tool is a ``FunctionTool`` over an
``async def`` (a sync function adds LlamaIndex's own executor hop to both sides equally), guarded
in place by ``guard_tools`` (what ``guard`` does to every tool ``get_tools`` returns). The guard
is an allow-all ``LocalAgent`` over ``:memory:`` and over a SQLite file with
``durability="normal"``.

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

from guardkit.plugins.llama_index import guard_tools
from llama_index.core.tools import FunctionTool

import guardkit

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {}, "default_rule": {"cost": 0}}
BARE = "llama-index bare tool call"
MEMORY = "llama-index via guard (:memory:)"
SQLITE = "llama-index via guard (sqlite normal)"
#: Prefix of the decision-alone rows (``__main__`` only).
FLOOR = "decision alone: "

Call = Callable[[int], Awaitable[Any]]


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _tool_path(acall: Callable[..., Awaitable[Any]]) -> Call:
    """One tool call through ``tool.acall``, as the agent's ``call_tool`` step makes it."""

    async def call(i: int) -> Any:
        return await acall(a=i, b=1)

    return call


def _decision_path(agent: guardkit.LocalAgent) -> Call:
    """The guard decision alone: ``arequest`` + ``areport`` by hand."""

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
    """Bare, guarded and decision-alone latencies, each store its own interleaved pass."""
    with tempfile.TemporaryDirectory() as tmp:
        guards = {
            MEMORY: guardkit.Guard(":memory:"),
            SQLITE: guardkit.Guard(Path(tmp) / "normal.db", durability="normal"),
        }

        async def run() -> dict[str, list[float]]:
            figures: dict[str, list[float]] = {}
            bare = _tool_path(FunctionTool.from_defaults(async_fn=add).acall)
            for label, guard in guards.items():
                guard.create_agent("bench", POLICY)
                guard.create_agent("floor", POLICY)
                (guarded,) = guard_tools(
                    [FunctionTool.from_defaults(async_fn=add)], guard.agent("bench")
                )
                paths = {
                    BARE: bare,
                    label: _tool_path(guarded.acall),
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
    """Per-call latencies (seconds) of a bare LlamaIndex tool call and of the guarded one."""
    figures = _all(calls)
    return {BARE: figures[BARE][:calls], MEMORY: figures[MEMORY], SQLITE: figures[SQLITE]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    calls = parser.parse_args().calls
    figures = _all(calls)
    bare = statistics.median(figures[BARE]) * 1e6
    print(f"llama-index tool call, median of {calls} calls (us)")
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

"""Per-call cost of ``guardkit.plugins.smolagents``: a smolagents tool call, bare and guarded.

Run: ``.venv/bin/python benchmarks/overhead_smolagents.py [--calls N]``.

``agent.tools["add"](a=i, b=1)`` is timed directly, as ``ToolCallingAgent.execute_tool_call``
and ``CodeAgent``'s generated code make it (``Tool.__call__``: smolagents' own input handling,
then ``forward``), so no model is in the figures. The guarded tool is the same ``@tool`` in an
agent passed through ``guard`` (which wraps the ``forward`` of the tool objects the agent holds).
The guard is an allow-all ``LocalAgent`` over ``:memory:`` and over a SQLite file with
``durability="normal"``.

``measure(calls)`` returns the per-call latencies in seconds (``benchmarks/framework_overhead.py``
imports it); ``__main__`` prints medians and the floor measured alongside: the same ``request`` +
``report`` made by hand, so ``integration = guarded - bare - decision`` is what the integration
adds (target: at most 50 us). Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guardkit.plugins.smolagents import guard
from smolagents import Model, Tool, ToolCallingAgent, tool

import guardkit

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {}, "default_rule": {"cost": 0}}
BARE = "smolagents bare tool call"
MEMORY = "smolagents via guard (:memory:)"
SQLITE = "smolagents via guard (sqlite normal)"
FLOOR = "decision alone: "

Call = Callable[[int], Any]


def _add() -> Tool:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: the first number.
            b: the second number.
        """
        return a + b

    return add


class _Idle(Model):
    """A model the benchmark never calls (the tool calls are timed directly)."""

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")


def _tool_path(found: Tool) -> Call:
    def call(i: int) -> Any:
        return found(a=i, b=1)

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
                agent = guard(ToolCallingAgent(tools=[_add()], model=_Idle()), g.agent("bench"))
                paths = {
                    BARE: _tool_path(_add()),
                    label: _tool_path(agent.tools["add"]),
                    FLOOR + label: _decision_path(g.agent("floor")),
                }
                for key, samples in _interleaved(paths, calls).items():
                    figures.setdefault(key, []).extend(samples)
    return figures


def measure(calls: int) -> dict[str, list[float]]:
    """Per-call latencies (seconds) of a bare smolagents tool call and of the guarded one."""
    figures = _all(calls)
    return {BARE: figures[BARE][:calls], MEMORY: figures[MEMORY], SQLITE: figures[SQLITE]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    calls = parser.parse_args().calls
    figures = _all(calls)
    bare = statistics.median(figures[BARE]) * 1e6
    print(f"smolagents tool call, median of {calls} calls (us)")
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

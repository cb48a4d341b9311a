"""Per-call cost of guarding an OpenAI Agents SDK tool with ``guard_tools``, against a bare tool.

Run: ``.venv/bin/python benchmarks/overhead_openai_agents.py [--calls N]``.

What is timed is the SDK's own tool invocation path for one call, driven directly: the tool's
input guardrails (``ToolInputGuardrail.run``, as the runner calls them) then
``FunctionTool.on_invoke_tool`` (JSON parsing and validation, the function, the report), for an
``async def`` tool made with ``@function_tool`` (a sync tool would add the SDK's thread hop to
both sides alike). ``Runner.run`` itself (model call, item bookkeeping, hooks) is left out so
that its own cost, identical with and without the guard, does not hide the difference.

``measure(calls)`` returns the per-call latencies in seconds under three keys. ``main`` also
prints the floor each guarded row is held to, measured in the same run, call for call in turn:
the same guard's decision done by hand on its async API (``arequest`` + ``areport``), which the
integration makes once per call. Target: guarded minus bare is at most that decision + 50 us.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents import Agent, FunctionTool, ToolInputGuardrailData, function_tool
from agents.tool_context import ToolContext
from guardkit.plugins.openai_agents import guard_tools

import guardkit

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {}, "default_rule": {"cost": 0}}
BARE = "openai-agents bare tool call"
MEMORY = "openai-agents guarded (:memory:)"
SQLITE = "openai-agents guarded (sqlite normal)"
ARGUMENTS = '{"a": 2, "b": 3}'
#: The floor of each guarded row: its guard's decision alone (see ``_decision``).
DECISION = "guard decision alone, "
Samples = dict[str, list[float]]
BLOCK = 100


def _tool() -> FunctionTool:
    @function_tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return add


async def _time(timed: dict[str, Callable[[int], Awaitable[Any]]], calls: int) -> Samples:
    """Per-call seconds of each callable, in blocks of ``BLOCK`` calls taken in turns, so that
    load on the machine (two cores shared with other work) weighs on every variant alike."""
    for i in range(min(200, calls)):
        for call in timed.values():
            await call(-1 - i)
    samples: Samples = {label: [] for label in timed}
    for first in range(0, calls, BLOCK):
        for label, call in timed.items():
            for i in range(first, min(first + BLOCK, calls)):
                start = time.perf_counter()
                await call(i)
                samples[label].append(time.perf_counter() - start)
    return samples


def _invocation(tool: FunctionTool) -> Callable[[int], Awaitable[Any]]:
    """One call as the runner makes it: input guardrails, then ``on_invoke_tool``."""
    sdk_agent: Agent[Any] = Agent(name="bench", tools=[tool])
    guardrails = tool.tool_input_guardrails or []

    async def call(i: int) -> Any:
        ctx = ToolContext(
            context=None, tool_name=tool.name, tool_call_id=f"c{i}", tool_arguments=ARGUMENTS
        )
        for guardrail in guardrails:
            await guardrail.run(ToolInputGuardrailData(context=ctx, agent=sdk_agent))
        return await tool.on_invoke_tool(ctx, ARGUMENTS)

    return call


def _guard(store: str, durability: str) -> guardkit.Guard:
    guard = guardkit.Guard(store, durability=durability)
    guard.create_agent("bench", POLICY)
    return guard


def _stores(tmp: Path) -> list[tuple[str, str, str]]:
    return [(MEMORY, ":memory:", "full"), (SQLITE, str(tmp / "normal.db"), "normal")]


def _decision(agent: guardkit.LocalAgent) -> Callable[[int], Awaitable[Any]]:
    """The guard decision alone, by hand on the async API: what the integration makes per call."""

    async def decide(i: int) -> None:
        decision = await agent.arequest("add", {"a": 2, "b": 3})
        await agent.areport(decision["action_id"], "success")

    return decide


def _measure_all(calls: int) -> Samples:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        timed = {BARE: _invocation(_tool())}
        for label, store, durability in _stores(Path(tmp)):
            guard = stack.enter_context(_guard(store, durability))
            timed[label] = _invocation(guard_tools(_tool(), guard.agent("bench")))
            timed[DECISION + label] = _decision(guard.agent("bench"))
        return asyncio.run(_time(timed, calls))


def measure(calls: int) -> dict[str, list[float]]:
    """Per-call latencies (seconds): a bare SDK tool call, and guarded on two stores."""
    found = _measure_all(calls)
    return {label: found[label] for label in (BARE, MEMORY, SQLITE)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    calls = parser.parse_args().calls
    print(f"OpenAI Agents SDK tool call, guardrails + on_invoke_tool, median of {calls} calls")
    timed = _measure_all(calls)
    bare = statistics.median(timed[BARE]) * 1e6
    print(f"  {BARE:44} {bare:9.1f} us")
    for label in (MEMORY, SQLITE):
        guarded = statistics.median(timed[label]) * 1e6
        decision = statistics.median(timed[DECISION + label]) * 1e6
        added = guarded - bare - decision
        print(
            f"  {label:44} {guarded:9.1f} us   (+{guarded - bare:7.1f} us over bare; the guard "
            f"decision alone {decision:7.1f} us; integration +{added:6.1f} us, target <= 50)"
        )


if __name__ == "__main__":
    main()

"""Per-call cost of guarding a LangChain tool call with ``GuardMiddleware``.

Run: ``.venv/bin/python benchmarks/overhead_langchain.py [--calls N]``.

The tool-call path is measured alone, without a model or a graph: each sample is one call of
``GuardMiddleware.wrap_tool_call(request, execute)`` where ``execute`` does what LangGraph's
``ToolNode`` does for one call (``tool.invoke({**tool_call, "type": "tool_call"})``, which returns
the ``ToolMessage``), against the bare ``execute(request)``. ``create_agent`` reaches the
middleware through exactly this wrapper; the model, the graph's scheduling and the checkpointer
are left out because they are the same with or without the guard. The guard is an allow-all
in-process agent over ``:memory:`` and over a SQLite file with ``durability="normal"``.

``measure(calls)`` returns the per-call latencies (seconds) that ``framework_overhead.py``
tabulates; ``measure(calls, floors=True)`` adds the guard decision itself on the same stores
(request + report), alone and around the same tool call written by hand. The variants are timed
in turn, round after round. Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from guardkit.plugins.langchain import GuardMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt.tool_node import ToolCallRequest

import guardkit

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {}, "default_rule": {"cost": 0}}
BARE = "langchain bare tool call"
MEMORY = "langchain via GuardMiddleware (:memory:)"
NORMAL = "langchain via GuardMiddleware (sqlite normal)"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


CALL: dict[str, Any] = {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1"}
REQUEST = ToolCallRequest(tool_call=CALL, tool=add, state={}, runtime=None)  # type: ignore[arg-type]


def execute(request: ToolCallRequest) -> ToolMessage:
    """One tool call as ``ToolNode`` runs it: the tool's own ``invoke`` on the tool call."""
    result: ToolMessage = add.invoke({**request.tool_call, "type": "tool_call"})
    return result


def _interleaved(variants: dict[str, Callable[[], Any]], calls: int) -> dict[str, list[float]]:
    """Time each variant once per round, round after round: a load that drifts (a shared
    machine) weighs on every variant alike."""
    for fn in variants.values():
        for _ in range(min(200, calls)):
            fn()
    found: dict[str, list[float]] = {label: [] for label in variants}
    for _ in range(calls):
        for label, fn in variants.items():
            start = time.perf_counter()
            fn()
            found[label].append(time.perf_counter() - start)
    return found


@contextmanager
def _agents(tmp: Path) -> Iterator[dict[str, guardkit.LocalAgent]]:
    """An allow-all agent over ``:memory:`` and over a SQLite file (``durability="normal"``)."""
    memory = guardkit.Guard(":memory:")
    normal = guardkit.Guard(tmp / "normal.db", durability="normal")
    try:
        for guard in (memory, normal):
            guard.create_agent("bench", POLICY)
        yield {MEMORY: memory.agent("bench"), NORMAL: normal.agent("bench")}
    finally:
        memory.close()
        normal.close()


def measure(calls: int, *, floors: bool = False) -> dict[str, list[float]]:
    """Per-call latencies in seconds: the bare tool call, and through ``GuardMiddleware``.

    With ``floors=True``, also the guard decision on the same stores: ``request`` + ``report``
    alone, around the same tool call by hand (the code and data of both then share the CPU's
    caches, as they do through the middleware), and the middleware around a tool call that does
    nothing (its own code over the decision, without LangChain's tool machinery).
    """
    with tempfile.TemporaryDirectory() as tmp, _agents(Path(tmp)) as agents:
        variants: dict[str, Callable[[], Any]] = {BARE: lambda: execute(REQUEST)}
        for label, agent in agents.items():
            middleware = GuardMiddleware(agent)
            variants[label] = lambda m=middleware: m.wrap_tool_call(REQUEST, execute)
        for label, agent in agents.items() if floors else ():
            store = label[label.index("(") :]
            middleware = GuardMiddleware(agent)
            variants[f"request + report {store}"] = lambda a=agent: _decide(a, None)
            variants[f"request + tool call + report by hand {store}"] = lambda a=agent: _decide(
                a, REQUEST
            )
            variants[f"GuardMiddleware around a no-op call {store}"] = lambda m=middleware: (
                m.wrap_tool_call(REQUEST, _noop)
            )
        return _interleaved(variants, calls)


_DONE = ToolMessage(content="3", name="add", tool_call_id="call_1")


def _noop(request: ToolCallRequest) -> ToolMessage:
    return _DONE


def _decide(agent: guardkit.LocalAgent, request: ToolCallRequest | None) -> None:
    action_id = agent.request("add", CALL["args"])["action_id"]
    if request is not None:
        execute(request)
    agent.report(action_id, "success")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    calls = parser.parse_args().calls
    found = measure(calls, floors=True)
    median = {label: statistics.median(samples) * 1e6 for label, samples in found.items()}
    bare = median[BARE]
    print(f"per call, median of {calls} (microseconds)")
    for label, value in median.items():
        print(f"  {label:58} {value:9.2f} us   (+{value - bare:8.2f} over bare)")
    for label, store in ((MEMORY, "(:memory:)"), (NORMAL, "(sqlite normal)")):
        added = median[label] - bare
        alone = median[f"request + report {store}"]
        in_context = median[f"request + tool call + report by hand {store}"] - bare
        own = median[f"GuardMiddleware around a no-op call {store}"] - alone
        print(
            f"  GuardMiddleware {store}: adds {added:.2f} us to the call; the decision costs "
            f"{alone:.2f} us alone (+{added - alone:.2f}) and {in_context:.2f} us by hand around "
            f"the same call (+{added - in_context:.2f}); the middleware's own code {own:+.2f} us. "
            "Target: +50 at most."
        )


if __name__ == "__main__":
    main()

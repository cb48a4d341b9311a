"""The decorator's ``execute_tool`` spans: decisions, local checks, replays, approval waits."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import guardkit
from guardkit import Idempotency, PathRule, ToolDenied, tracing

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
exporters = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
export = pytest.importorskip("opentelemetry.sdk.trace.export")


@pytest.fixture
def spans() -> Iterator[Any]:
    exporter = exporters.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    tracing.enable(tracer_provider=provider, capture_content=True)
    yield exporter
    tracing.disable()
    provider.shutdown()


def _one(exporter: Any, name: str) -> Any:
    found = [s for s in exporter.get_finished_spans() if s.name == name]
    assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
    return found[0]


def test_allowed_call(spans, agent):
    @guardkit.tool(guard=agent)
    def add(a: int, b: int) -> int:
        return a + b

    add(1, 2)
    span = _one(spans, "execute_tool add")
    assert span.attributes["guardkit.decision"] == "allowed"
    assert span.attributes["guardkit.agent_id"] == agent.agent_id
    assert span.attributes["gen_ai.tool.call.result"] == "3"
    assert span.status.is_unset


def test_local_denial_names_the_check(spans, agent, tmp_path):
    @guardkit.tool(guard=agent, paths={"path": PathRule(allow=[str(tmp_path)])})
    def read(path: str) -> str:
        return path

    with pytest.raises(ToolDenied):
        read("/etc/passwd")
    span = _one(spans, "execute_tool read")
    assert span.attributes["guardkit.decision"] == "denied"
    assert span.attributes["guardkit.check"] == "paths"
    assert span.attributes["error.type"] == "guardkit.denied"


def test_replay_is_marked(spans, agent):
    @guardkit.tool(guard=agent, idempotency=Idempotency(key=["n"]))
    def once(n: int) -> int:
        return n

    once(1)
    once(1)
    replayed = [
        s for s in spans.get_finished_spans() if s.attributes.get("guardkit.idempotent_replay")
    ]
    assert len(replayed) == 1


def test_approval_wait_is_a_child_span(spans, make_agent, guard):
    agent = make_agent(tools={"pay": {"cost": 1, "requires_approval": True}})

    @guardkit.tool(guard=agent, poll=0.01, approval_timeout=10)
    def pay() -> str:
        return "paid"

    def approve() -> None:
        while not guard.pending(agent.agent_id):
            threading.Event().wait(0.005)
        guard.approve(agent.agent_id, "act-1", "alice")

    approver = threading.Thread(target=approve)
    approver.start()
    pay()
    approver.join()
    tool_span = _one(spans, "execute_tool pay")
    wait = _one(spans, "guardkit.approval")
    assert wait.parent.span_id == tool_span.context.span_id


def test_async_and_failing_calls(spans, agent):
    @guardkit.tool(guard=agent)
    async def boom() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        asyncio.run(boom())
    span = _one(spans, "execute_tool boom")
    assert span.attributes["error.type"] == "ValueError"

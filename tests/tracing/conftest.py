"""Per-test OTel providers with in-memory exporters (the pytest version of OTel's ``TestBase``).

Nothing touches the global providers: ``tracing.enable`` takes the providers, ``disable`` drops
them, so no span or log record leaks from one test into another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from guardkit import Guard, ToolDenied, tracing
from guardkit.local import LocalAgent


@dataclass
class Otel:
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    tracer_provider: TracerProvider
    logger_provider: LoggerProvider

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.finished() if s.name == name]
        assert len(found) == 1, [s.name for s in self.finished()]
        return found[0]

    def events(self) -> list[Any]:
        return [r.log_record for r in self.logs.get_finished_logs()]


def _providers() -> Otel:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    return Otel(spans, logs, tracer_provider, logger_provider)


@pytest.fixture
def otel() -> Iterator[Otel]:
    """Tracing on, into in-memory exporters, content capture off."""
    o = _providers()
    tracing.enable(
        tracer_provider=o.tracer_provider, logger_provider=o.logger_provider, capture_content=False
    )
    yield o
    # every span the test opened was closed and its context detached
    assert not trace.get_current_span().get_span_context().is_valid
    tracing.disable()
    o.tracer_provider.shutdown()
    o.logger_provider.shutdown()


@pytest.fixture
def otel_factory() -> Iterator[Any]:
    """Build providers without enabling, for tests that switch tracing on themselves."""
    made: list[Otel] = []

    def make() -> Otel:
        made.append(_providers())
        return made[-1]

    yield make
    tracing.disable()
    for o in made:
        o.tracer_provider.shutdown()
        o.logger_provider.shutdown()


@pytest.fixture
def guard() -> Iterator[Guard]:
    g = Guard(":memory:")
    g.create_agent(
        "bot",
        {
            "budget": 100,
            "tools": {
                "llm_turn": {"cost": 1},
                "search": {"cost": 2},
                "pay": {"cost": 5, "requires_approval": True},
            },
        },
    )
    yield g
    g.close()


def guarded_call(
    agent: LocalAgent,
    tool: str,
    func: Callable[..., Any],
    args: dict[str, Any],
    *,
    call_id: str | None = None,
    timeout: float = 0,
    approve: Callable[[str], None] | None = None,
) -> Any:
    """A guarded call written against ``guardkit.tracing``'s public API, as the decorator does."""
    with tracing.tool_span(tool, agent_id=agent.agent_id, call_id=call_id, arguments=args) as span:
        decision = agent.request(tool, args)
        span.decision(decision)
        action_id = decision["action_id"]
        if decision["decision"] == "pending_approval":
            if approve is not None:
                approve(action_id)
            with span.approval_wait(action_id, timeout=timeout) as wait:
                wait.status(agent.wait_for_approval(action_id, timeout=timeout, poll=0.01))
            action = agent.action(action_id)
            decision = {
                "decision": action["status"],
                "action_id": action_id,
                "cost": action["cost"],
            }
            decision["reason"] = action["reason"]
            span.decision(decision)
        if decision["decision"] != "allowed":
            raise ToolDenied(action_id, dict(decision.get("reason") or {"code": "denied"}))
        try:
            result = func(**args)
        except Exception:
            agent.report(action_id, "failure")
            raise
        span.result(result)
        agent.report(action_id, "success")
        return result


@pytest.fixture
def call() -> Callable[..., Any]:
    return guarded_call

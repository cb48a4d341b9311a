"""``invoke_agent`` / ``chat`` / guard round-trip spans and their parentage."""

from __future__ import annotations

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from guardkit import ToolDenied, tracing
from guardkit.protocols import ModelReply


def echo(obj: str) -> str:
    return obj


def test_agent_chat_tool_approval_tree(otel, guard, call):
    agent = guard.agent("bot")
    with tracing.agent_span("bot", provider="anthropic", conversation_id="conv-1") as run:
        with tracing.chat_span(model="claude-x", provider="anthropic", agent_id="bot") as chat:
            chat.decision(agent.request("llm_turn", {}))
            chat.reply(ModelReply(text="secret words", usage=12, stop_reason="tool_use"))
        call(
            agent,
            "pay",
            echo,
            {"obj": "ab"},
            timeout=1,
            approve=lambda a: guard.approve("bot", a, "ann"),
        )
        run.finish("done", 1)
    root = otel.one("invoke_agent bot")
    chat_span = otel.one("chat claude-x")
    tool = otel.one("execute_tool pay")
    wait = otel.one("guardkit.approval")
    assert root.parent is None
    assert chat_span.parent.span_id == root.context.span_id
    assert tool.parent.span_id == root.context.span_id
    assert wait.parent.span_id == tool.context.span_id
    assert {s.context.trace_id for s in otel.finished()} == {root.context.trace_id}
    assert root.kind is SpanKind.INTERNAL
    assert dict(root.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.agent.name": "bot",
        "gen_ai.conversation.id": "conv-1",
        "guardkit.agent_id": "bot",
        "guardkit.run.outcome": "done",
        "guardkit.run.turns": 1,
    }
    assert chat_span.kind is SpanKind.CLIENT
    assert dict(chat_span.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-x",
        "guardkit.agent_id": "bot",
        "guardkit.decision": "allowed",
        "guardkit.action_id": "act-1",
        "guardkit.cost": 1,
        "guardkit.remaining": 99,
        "gen_ai.usage.output_tokens": 12,
        "gen_ai.response.finish_reasons": ("tool_use",),
    }
    # the tool span inherits the agent's name and conversation from the enclosing run
    assert tool.attributes["gen_ai.agent.name"] == "bot"
    assert tool.attributes["gen_ai.conversation.id"] == "conv-1"


def test_tool_span_outside_a_run_has_no_agent_context(otel):
    with tracing.agent_span("bot"):
        pass
    with tracing.tool_span("search"):
        pass
    attrs = otel.one("execute_tool search").attributes
    assert "gen_ai.agent.name" not in attrs
    assert "gen_ai.conversation.id" not in attrs


def test_llm_turn_denial_is_visible_on_the_agent_span(otel, guard):
    guard.terminate("bot", "operator stop", "ann")
    agent = guard.agent("bot")
    with tracing.agent_span("bot") as run:
        decision = agent.request("llm_turn", {})
        run.turn_denied(decision)
        run.finish("terminated", 0)
    root = otel.one("invoke_agent bot")
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "guardkit.denied"
    assert root.attributes["guardkit.reason"] == "terminated"
    assert root.attributes["guardkit.decision"] == "denied"
    assert root.attributes["guardkit.run.outcome"] == "terminated"
    (event,) = otel.events()
    assert event.attributes["gen_ai.tool.name"] == "llm_turn"
    assert event.span_id == root.context.span_id


def test_agent_span_without_a_name(otel):
    with tracing.agent_span(None):
        pass
    assert dict(otel.one("invoke_agent").attributes) == {"gen_ai.operation.name": "invoke_agent"}


def test_guard_round_trip_is_a_client_child_span(otel):
    with tracing.tool_span("search", agent_id="bot"), tracing.guard_call_span("request"):
        pass
    rt = otel.one("guardkit.guard request")
    assert rt.kind is SpanKind.CLIENT
    assert rt.parent.span_id == otel.one("execute_tool search").context.span_id
    assert dict(rt.attributes) == {"guardkit.guard.method": "request"}


def test_unreachable_guard_fails_the_round_trip(otel):
    from guardkit.errors import GuardUnavailable

    with pytest.raises(GuardUnavailable), tracing.guard_call_span("request"):
        raise GuardUnavailable("connection refused")
    rt = otel.one("guardkit.guard request")
    assert rt.attributes["error.type"] == "guardkit.guard_unavailable"
    assert rt.status.status_code is StatusCode.ERROR


def test_a_denial_escaping_the_run_fails_the_agent_span_too(otel, guard, call):
    with pytest.raises(ToolDenied), tracing.agent_span("bot"):
        call(guard.agent("bot"), "rm", echo, {"obj": ""})
    assert otel.one("invoke_agent bot").status.status_code is StatusCode.ERROR
    assert otel.one("execute_tool rm").status.status_code is StatusCode.ERROR

"""The ``execute_tool`` span of a guarded call: attributes, status, approval child, content."""

from __future__ import annotations

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from guardkit import ApprovalTimeout, ToolDenied, tracing


def search(q: str) -> str:
    return f"results for {q}"


def test_allowed_call_has_exact_attributes_and_unset_status(otel, guard, call):
    assert call(guard.agent("bot"), "search", search, {"q": "secret"}, call_id="call_1") == (
        "results for secret"
    )
    span = otel.one("execute_tool search")
    assert span.kind is SpanKind.INTERNAL
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "call_1",
        "guardkit.agent_id": "bot",
        "guardkit.decision": "allowed",
        "guardkit.action_id": "act-1",
        "guardkit.cost": 2,
        "guardkit.remaining": 98,
    }
    assert span.status.status_code is StatusCode.UNSET


def test_denied_call_is_an_error_span_started_before_the_decision(otel, guard, call):
    ran = []
    with pytest.raises(ToolDenied) as caught:
        call(guard.agent("bot"), "rm", ran.append, {"path": "/etc"})
    assert caught.value.reason["code"] == "tool_not_allowed"
    assert ran == []
    span = otel.one("execute_tool rm")
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "rm",
        "gen_ai.tool.type": "function",
        "guardkit.agent_id": "bot",
        "guardkit.decision": "denied",
        "guardkit.action_id": "act-1",
        "guardkit.reason": "tool_not_allowed",
        "error.type": "guardkit.denied",
    }
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "denied: tool_not_allowed"


def test_tool_exception_sets_error_type_and_propagates_unchanged(otel, guard, call):
    boom = KeyError("missing")

    def fails(q: str) -> str:
        raise boom

    with pytest.raises(KeyError) as caught:
        call(guard.agent("bot"), "search", fails, {"q": "x"})
    assert caught.value is boom
    span = otel.one("execute_tool search")
    assert span.attributes["error.type"] == "KeyError"
    assert span.attributes["guardkit.decision"] == "allowed"
    assert span.status.status_code is StatusCode.ERROR


def test_approval_wait_is_a_child_span_of_the_tool_span(otel, guard, call):
    def approve(action_id: str) -> None:
        guard.approve("bot", action_id, "ann")

    call(guard.agent("bot"), "pay", search, {"q": "inv-7"}, timeout=5, approve=approve)
    tool = otel.one("execute_tool pay")
    wait = otel.one("guardkit.approval")
    assert wait.parent is not None
    assert wait.parent.span_id == tool.context.span_id
    assert wait.context.trace_id == tool.context.trace_id
    assert dict(wait.attributes) == {
        "guardkit.action_id": "act-1",
        "gen_ai.tool.name": "pay",
        "guardkit.approval.timeout": 5.0,
        "guardkit.approval.status": "allowed",
    }
    assert tool.attributes["guardkit.decision"] == "allowed"
    assert tool.attributes["guardkit.cost"] == 5
    assert tool.status.status_code is StatusCode.UNSET


def test_rejected_approval_fails_the_tool_span(otel, guard, call):
    def reject(action_id: str) -> None:
        guard.reject("bot", action_id, "ann", "too much")

    with pytest.raises(ToolDenied):
        call(guard.agent("bot"), "pay", search, {"q": "inv-8"}, timeout=5, approve=reject)
    tool = otel.one("execute_tool pay")
    assert tool.attributes["guardkit.reason"] == "rejected"
    assert tool.attributes["error.type"] == "guardkit.denied"
    assert otel.one("guardkit.approval").attributes["guardkit.approval.status"] == "denied"


def test_approval_timeout_marks_both_spans(otel, guard, call):
    with pytest.raises(ApprovalTimeout):
        call(guard.agent("bot"), "pay", search, {"q": "inv-9"}, timeout=0)
    wait = otel.one("guardkit.approval")
    assert wait.attributes["error.type"] == "guardkit.approval_timeout"
    assert wait.status.status_code is StatusCode.ERROR
    tool = otel.one("execute_tool pay")
    assert tool.attributes["error.type"] == "guardkit.approval_timeout"
    assert tool.attributes["guardkit.decision"] == "pending_approval"


def test_no_argument_or_result_content_by_default(otel, guard, call, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    call(guard.agent("bot"), "search", search, {"q": "hunter2"})
    with pytest.raises(ToolDenied):
        call(guard.agent("bot"), "rm", search, {"q": "hunter2"})
    for span in otel.finished():
        assert "hunter2" not in repr(dict(span.attributes))
        assert "hunter2" not in (span.status.description or "")
    for record in otel.events():
        assert "hunter2" not in repr(dict(record.attributes)) + repr(record.body)


@pytest.mark.parametrize("setting", ["true", "SPAN_ONLY", "span_and_event"])
def test_content_is_recorded_when_the_genai_switch_opts_in(
    otel_factory, guard, call, monkeypatch, setting
):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", setting)
    o = otel_factory()
    tracing.enable(tracer_provider=o.tracer_provider, logger_provider=o.logger_provider)
    call(guard.agent("bot"), "search", search, {"q": "hunter2"})
    attrs = o.one("execute_tool search").attributes
    assert attrs["gen_ai.tool.call.arguments"] == '{"q": "hunter2"}'
    assert attrs["gen_ai.tool.call.result"] == '"results for hunter2"'


@pytest.mark.parametrize("setting", ["", "false", "NO_CONTENT", "EVENT_ONLY"])
def test_content_stays_out_for_other_settings(otel_factory, guard, call, monkeypatch, setting):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", setting)
    o = otel_factory()
    tracing.enable(tracer_provider=o.tracer_provider, logger_provider=o.logger_provider)
    call(guard.agent("bot"), "search", search, {"q": "hunter2"})
    attrs = o.one("execute_tool search").attributes
    assert "gen_ai.tool.call.arguments" not in attrs
    assert "gen_ai.tool.call.result" not in attrs


def test_decision_events_are_log_records_correlated_with_the_span(otel, guard, call):
    call(guard.agent("bot"), "search", search, {"q": "a"})
    with pytest.raises(ToolDenied):
        call(guard.agent("bot"), "rm", search, {"q": "b"})
    allowed, denied = otel.events()
    spans = {s.name: s for s in otel.finished()}
    assert allowed.event_name == "guardkit.decision"
    assert allowed.span_id == spans["execute_tool search"].context.span_id
    assert allowed.trace_id == spans["execute_tool search"].context.trace_id
    assert dict(allowed.attributes) == {
        "gen_ai.tool.name": "search",
        "guardkit.decision": "allowed",
        "guardkit.action_id": "act-1",
        "guardkit.cost": 2,
        "guardkit.remaining": 98,
        "guardkit.agent_id": "bot",
    }
    assert allowed.severity_text == "INFO"
    assert denied.span_id == spans["execute_tool rm"].context.span_id
    assert denied.attributes["guardkit.reason"] == "tool_not_allowed"
    assert denied.severity_text == "WARN"


def test_local_check_replay_and_scar_attributes(otel):
    with tracing.tool_span("write_file", agent_id="bot") as span:
        span.decision(
            {
                "decision": "denied",
                "action_id": "act-3",
                "reason": {"code": "path_denied", "path": "/etc/passwd"},
                "scar_score": 3,
            },
            check="path",
        )
    with tracing.tool_span("charge") as span:
        span.decision({"decision": "allowed", "action_id": "act-4", "cost": 1, "remaining": 0})
        span.replay()
    denied = otel.one("execute_tool write_file").attributes
    assert denied["guardkit.check"] == "path"
    assert denied["guardkit.scar_score"] == 3
    assert "/etc/passwd" not in repr(dict(denied))
    replay = otel.one("execute_tool charge")
    assert replay.attributes["guardkit.idempotent_replay"] is True
    assert replay.status.status_code is StatusCode.UNSET

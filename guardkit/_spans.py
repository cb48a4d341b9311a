"""The OpenTelemetry spans behind ``guardkit.tracing``, made only while tracing is on.

``guardkit.tracing`` is the switch and the entry points (and the no-op while off); this module
holds what exists only while on: the OTel names looked up at ``enable``, and one class per span
kind (``execute_tool``, the approval wait, ``invoke_agent``, ``chat``, the guard round trip).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from guardkit import _semconv as sc
from guardkit.errors import (
    ActionDenied,
    ApprovalTimeout,
    GuardFailed,
    GuardUnavailable,
    IdempotencyConflict,
    IdempotencyInProgress,
    StoreError,
)

if TYPE_CHECKING:
    from opentelemetry._logs import Logger
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "AgentSpan",
    "ApprovalSpan",
    "ChatSpan",
    "GuardCallSpan",
    "State",
    "TOOL",
    "ToolSpan",
    "error_type",
    "set_state",
]

#: Span and log-record attributes, as OTel takes them (an absent value is left out, never None).
Attributes = dict[str, str | bool | int | float]


@dataclass(frozen=True, slots=True)
class Otel:
    """The OTel names the spans use, looked up once when tracing is enabled."""

    internal: Any
    client: Any
    error: Any
    status: Any
    info: Any
    warn: Any
    set_span_in_context: Any
    attach: Any
    detach: Any

    @classmethod
    def load(cls) -> Otel:
        from opentelemetry import context, trace
        from opentelemetry._logs import SeverityNumber

        return cls(
            internal=trace.SpanKind.INTERNAL,
            client=trace.SpanKind.CLIENT,
            error=trace.StatusCode.ERROR,
            status=trace.Status,
            info=SeverityNumber.INFO,
            warn=SeverityNumber.WARN,
            set_span_in_context=trace.set_span_in_context,
            attach=context.attach,
            detach=context.detach,
        )


@dataclass(frozen=True, slots=True)
class State:
    tracer: Tracer
    logger: Logger | None
    capture_content: bool
    otel: Otel


_STATE: State | None = None
#: The ``execute_tool`` span of the guarded call running in this context.
TOOL: contextvars.ContextVar[ToolSpan | None] = contextvars.ContextVar(
    "guardkit_tracing_tool", default=None
)
#: ``(agent name, conversation id)`` of the enclosing ``invoke_agent`` span, for tool spans.
_AGENT: contextvars.ContextVar[tuple[str | None, str | None]] = contextvars.ContextVar(
    "guardkit_tracing_agent", default=(None, None)
)


def set_state(state: State | None) -> None:
    """What ``tracing.enable`` set up (None once disabled)."""
    global _STATE  # noqa: PLW0603 - one process-wide provider setting, set by enable/disable
    _STATE = state


def error_type(exc: BaseException) -> str:
    """The ``error.type`` of an exception: a ``guardkit.*`` value for the guard's own errors."""
    if isinstance(exc, ApprovalTimeout):
        return sc.ERR_APPROVAL_TIMEOUT
    if isinstance(exc, ActionDenied):
        return sc.ERR_DENIED
    if isinstance(exc, IdempotencyInProgress):
        return sc.ERR_IDEMPOTENCY_IN_PROGRESS
    if isinstance(exc, IdempotencyConflict):
        return sc.ERR_IDEMPOTENCY_CONFLICT
    if isinstance(exc, GuardFailed) and exc.__cause__ is not None:
        exc = exc.__cause__  # the guard's own failure, which stopped the agent
    if isinstance(exc, GuardUnavailable):
        return sc.ERR_GUARD_UNAVAILABLE
    if isinstance(exc, (StoreError, GuardFailed)):
        return sc.ERR_GUARD_FAILED
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


# -- the real spans --------------------------------------------------------------------------


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _decision_attributes(decision: Mapping[str, Any]) -> Attributes:
    attrs: Attributes = {sc.DECISION: str(decision.get("decision"))}
    for key, name in (
        ("action_id", sc.ACTION_ID),
        ("cost", sc.COST),
        ("remaining", sc.REMAINING),
        ("scar_score", sc.SCAR_SCORE),
    ):
        value = decision.get(key)
        if value is not None:
            attrs[name] = value
    reason = decision.get("reason")
    if isinstance(reason, Mapping) and reason.get("code") is not None:
        attrs[sc.REASON] = str(reason["code"])
    return attrs


def _otel() -> Otel:
    assert _STATE is not None
    return _STATE.otel


class _Span:
    """A started OTel span made current for the ``with`` block; shared by every span kind."""

    _name: str
    _kind: Any
    _attrs: Attributes

    def __enter__(self) -> Self:
        self._start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end(exc_type, exc, tb)

    def _start(self) -> Span:
        assert _STATE is not None
        self._state = state = _STATE
        self._failed = False
        self.span = state.tracer.start_span(self._name, kind=self._kind, attributes=self._attrs)
        self._context = state.otel.set_span_in_context(self.span)
        self._token = state.otel.attach(self._context)
        return self.span

    def fail(self, kind: str, description: str) -> None:
        """Status ERROR with ``error.type = kind``, unless the span already failed."""
        if not self._failed:
            self._fail(kind, description)

    def _fail(self, kind: str, description: str) -> None:
        otel = self._state.otel
        self._failed = True
        self.span.set_attribute(sc.ERROR_TYPE, kind)
        self.span.set_status(otel.status(otel.error, description))

    def error(self, exc: BaseException) -> None:
        """Mark the span failed with ``error.type`` for ``exc`` (a denial, a tool's exception)."""
        self._fail(error_type(exc), type(exc).__name__)

    def _end(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._state.otel.detach(self._token)
        if exc is not None and not self._failed and isinstance(exc, Exception):
            self.error(exc)
        self.span.end()

    def _emit(self, attributes: Attributes, denied: bool) -> None:
        logger, otel = self._state.logger, self._state.otel
        if logger is None:
            return
        logger.emit(
            event_name=sc.EVENT_DECISION,
            attributes=attributes,
            severity_number=otel.warn if denied else otel.info,
            severity_text="WARN" if denied else "INFO",
            context=self._context,
        )


class ToolSpan(_Span):
    """``execute_tool {tool}`` (INTERNAL): the whole guarded call, decision included."""

    def __init__(
        self,
        tool: str,
        agent_id: str | None,
        call_id: str | None,
        agent_name: str | None,
        conversation_id: str | None,
        arguments: Any,
    ) -> None:
        outer_name, outer_conversation = _AGENT.get()
        self.tool = tool
        self._name = f"{sc.OP_EXECUTE_TOOL} {tool}"
        self._kind = _otel().internal
        attrs: Attributes = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: tool,
            sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
        }
        optional = (
            (sc.GEN_AI_TOOL_CALL_ID, call_id),
            (sc.GEN_AI_AGENT_NAME, agent_name or outer_name),
            (sc.GEN_AI_CONVERSATION_ID, conversation_id or outer_conversation),
            (sc.AGENT_ID, agent_id),
        )
        attrs.update((k, v) for k, v in optional if v is not None)
        self._attrs = attrs
        self._arguments = arguments

    def __enter__(self) -> ToolSpan:
        span = self._start()
        if self._state.capture_content and self._arguments is not None and span.is_recording():
            span.set_attribute(sc.GEN_AI_TOOL_CALL_ARGUMENTS, _json(self._arguments))
        self._tool_token = TOOL.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        TOOL.reset(self._tool_token)
        self._end(exc_type, exc, tb)

    def decision(
        self,
        decision: Mapping[str, Any],
        *,
        check: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """Record the guard's answer (a Lineage decision dict); a denial fails the span.

        ``check`` names the local check that decided (``paths``, ``egress``, ``provenance``);
        ``agent_id`` fills ``guardkit.agent_id`` when the span was started without it.
        """
        if agent_id is not None and sc.AGENT_ID not in self._attrs:
            self._attrs[sc.AGENT_ID] = agent_id
            self.span.set_attribute(sc.AGENT_ID, agent_id)
        attrs = _decision_attributes(decision)
        if check is not None:
            attrs[sc.CHECK] = check
        self.span.set_attributes(attrs)
        denied = attrs[sc.DECISION] == "denied"
        if denied:
            code = attrs.get(sc.REASON, "denied")
            kind = sc.ERR_APPROVAL_TIMEOUT if code == "approval_timeout" else sc.ERR_DENIED
            self._fail(kind, f"denied: {code}")
        event = {sc.GEN_AI_TOOL_NAME: self.tool, **attrs}
        if sc.AGENT_ID in self._attrs:
            event[sc.AGENT_ID] = self._attrs[sc.AGENT_ID]
        self._emit(event, denied)

    def replay(self, action_id: str | None = None) -> None:
        """The call was answered from the idempotency store: nothing ran, nothing was charged."""
        self.span.set_attribute(sc.IDEMPOTENT_REPLAY, True)
        if action_id is not None:
            self.span.set_attribute(sc.ACTION_ID, action_id)

    def error(self, exc: BaseException) -> None:
        """A denial raised rather than answered (a rejection, a timeout) records its decision."""
        if isinstance(exc, ActionDenied) and not isinstance(exc, ApprovalTimeout):
            reason = exc.reason if isinstance(exc.reason, Mapping) else {}
            denial: dict[str, object] = {"decision": "denied", "reason": reason}
            if exc.action_id is not None:
                denial["action_id"] = exc.action_id
            self.decision(denial)
            return
        super().error(exc)

    def result(self, value: Any) -> None:
        """The tool's result; recorded only when content capture is on."""
        if self._state.capture_content and self.span.is_recording():
            self.span.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, _json(value))

    def approval_wait(self, action_id: str, timeout: float | None = None) -> ApprovalSpan:
        """A child span covering the wait for a human's decision."""
        return ApprovalSpan(self, action_id, timeout)


class ApprovalSpan(_Span):
    """``guardkit.approval`` (INTERNAL): the wait for a human, so it is not charged to the tool."""

    def __init__(self, parent: ToolSpan, action_id: str, timeout: float | None) -> None:
        self._parent = parent
        self._action_id = action_id
        self._name = sc.SPAN_APPROVAL
        self._kind = _otel().internal
        self._attrs = {sc.ACTION_ID: action_id, sc.GEN_AI_TOOL_NAME: parent.tool}
        if timeout is not None:
            self._attrs[sc.APPROVAL_TIMEOUT] = float(timeout)

    def status(self, status: str) -> None:
        """The action's status once decided: ``allowed`` or ``denied``.

        An approval is also the tool span's final decision (a refusal arrives as the denial
        the caller raises or records).
        """
        self.span.set_attribute(sc.APPROVAL_STATUS, status)
        if status == "allowed":
            self._parent.decision({"decision": "allowed", "action_id": self._action_id})


class AgentSpan(_Span):
    """``invoke_agent {agent}`` (INTERNAL): one loop run; a denied ``llm_turn`` shows here."""

    def __init__(
        self,
        agent_id: str | None,
        agent_name: str | None,
        provider: str | None,
        conversation_id: str | None,
    ) -> None:
        name = agent_name or agent_id
        self._name = f"{sc.OP_INVOKE_AGENT} {name}" if name else sc.OP_INVOKE_AGENT
        self._kind = _otel().internal
        attrs: Attributes = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT}
        optional = (
            (sc.GEN_AI_PROVIDER_NAME, provider),
            (sc.GEN_AI_AGENT_NAME, name),
            (sc.GEN_AI_CONVERSATION_ID, conversation_id),
            (sc.AGENT_ID, agent_id),
        )
        attrs.update((k, v) for k, v in optional if v is not None)
        self._attrs = attrs
        self._outer = (name, conversation_id)

    def __enter__(self) -> AgentSpan:
        self._start()
        self._agent_token = _AGENT.set(self._outer)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _AGENT.reset(self._agent_token)
        self._end(exc_type, exc, tb)

    def turn_denied(self, decision: Mapping[str, Any]) -> None:
        """The guard refused an ``llm_turn``: the run stops, and the agent span says why."""
        attrs = _decision_attributes(decision)
        self.span.set_attributes(attrs)
        code = attrs.get(sc.REASON, "denied")
        self._fail(sc.ERR_DENIED, f"llm_turn denied: {code}")
        event = {sc.GEN_AI_TOOL_NAME: "llm_turn", **attrs}
        if sc.AGENT_ID in self._attrs:
            event[sc.AGENT_ID] = self._attrs[sc.AGENT_ID]
        self._emit(event, True)

    def finish(self, outcome: str, turns: int) -> None:
        """How the run ended (``done``, ``terminated``, ``denied_turn``, ``max_turns``...)."""
        self.span.set_attributes({sc.RUN_OUTCOME: outcome, sc.RUN_TURNS: turns})


class ChatSpan(_Span):
    """``chat {model}`` (CLIENT): one model turn, with its ``llm_turn`` decision."""

    def __init__(self, model: str | None, provider: str | None, agent_id: str | None) -> None:
        self._name = f"{sc.OP_CHAT} {model}" if model else sc.OP_CHAT
        self._kind = _otel().client
        attrs: Attributes = {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT}
        optional = (
            (sc.GEN_AI_PROVIDER_NAME, provider),
            (sc.GEN_AI_REQUEST_MODEL, model),
            (sc.AGENT_ID, agent_id),
        )
        attrs.update((k, v) for k, v in optional if v is not None)
        self._attrs = attrs

    def decision(self, decision: Mapping[str, Any], *, check: str | None = None) -> None:
        """The allowed ``llm_turn`` decision that let this turn happen."""
        self.span.set_attributes(_decision_attributes(decision))

    def reply(self, reply: Any) -> None:
        """Usage and stop reason of a ``ModelReply`` (never its text)."""
        usage = getattr(reply, "usage", None)
        if isinstance(usage, int):
            self.span.set_attribute(sc.GEN_AI_USAGE_OUTPUT_TOKENS, usage)
        stop = getattr(reply, "stop_reason", None)
        if stop:
            self.span.set_attribute(sc.GEN_AI_RESPONSE_FINISH_REASONS, [str(stop)])


class GuardCallSpan(_Span):
    """``guardkit.guard {method}`` (CLIENT): a round trip to a guard server."""

    def __init__(self, method: str, agent_id: str | None) -> None:
        self._name = f"{sc.SPAN_GUARD_CALL} {method}"
        self._kind = _otel().client
        self._attrs = {sc.GUARD_METHOD: method}
        if agent_id is not None:
            self._attrs[sc.AGENT_ID] = agent_id

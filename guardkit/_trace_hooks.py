"""How ``guardkit.loop`` is traced, so its own edit is two decorator lines.

``traced_run`` and ``traced_tool_call`` decorate ``loop.run`` and ``loop.run_tool_call``:
``invoke_agent`` around the run, ``chat`` around each model turn, a denied ``llm_turn`` on the
agent span, ``execute_tool`` around each tool call. They hand the loop an ``ObservedAgent``, whose
``request`` and ``wait_for_approval`` record the guard's answers (and the approval wait's child
span) on the current spans, and a model whose turns are ``chat`` spans.

Each checks ``tracing._ENABLED`` first and, while tracing is off, calls straight through.
(The ``guardkit.tool`` decorator calls ``tracing.tool_span`` / ``current_tool`` itself, in
``guardkit.checks``.)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from guardkit import _semconv as sc
from guardkit import tracing

__all__ = ["ObservedAgent", "observable", "traced_run", "traced_tool_call"]

F = TypeVar("F", bound=Callable[..., Any])


class ObservedAgent:
    """An agent guard that reports what the guard answered to the current spans."""

    def __init__(self, agent: Any, on_turn: Callable[[Mapping[str, Any]], None] | None = None):
        self.agent = agent
        self._on_turn = on_turn

    def __repr__(self) -> str:
        return f"ObservedAgent({self.agent!r})"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.agent, name)

    def _id(self) -> str | None:
        agent_id = getattr(self.agent, "agent_id", None)
        return agent_id if isinstance(agent_id, str) else None

    def request(self, tool: str, input: Any = None, cost: Any = None, **extra: Any) -> Any:
        decision = self.agent.request(tool, input, cost, **extra)
        if not tracing._ENABLED:
            return decision
        if tool == "llm_turn":
            if self._on_turn is not None:
                self._on_turn(decision)
        else:
            tracing.current_tool().decision(decision, agent_id=self._id())
        return decision

    def report(self, action_id: str, status: str, detail: str = "") -> Any:
        return self.agent.report(action_id, status, detail)

    def status(self) -> Any:
        return self.agent.status()

    def action(self, action_id: str) -> Any:
        return self.agent.action(action_id)

    def wait_for_approval(self, action_id: str, timeout: float = 300, poll: float = 2.0) -> str:
        span = tracing.current_tool()
        with span.approval_wait(action_id, timeout) as wait:
            status = self.agent.wait_for_approval(action_id, timeout, poll)
            wait.status(status)
        if status != "allowed" and tracing._ENABLED:
            reason = self.agent.action(action_id).get("reason")
            span.decision({"decision": "denied", "action_id": action_id, "reason": reason})
        return str(status)


def observable(agent: Any) -> Any:
    """``agent`` behind an ``ObservedAgent`` (``None`` stays ``None``)."""
    if agent is None or isinstance(agent, ObservedAgent):
        return agent
    return ObservedAgent(agent)


class _ObservedModel:
    """A model whose turns are ``chat`` spans with the ``llm_turn`` decision that allowed them."""

    def __init__(self, model: Any, agent_id: str | None) -> None:
        self.model = model
        self.agent_id = agent_id
        self.turn_decision: Mapping[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def turn(self, messages: list[Any], tools: Any = ()) -> Any:
        name = getattr(self.model, "model", None) or getattr(self.model, "model_name", None)
        provider = getattr(self.model, "provider", None)
        with tracing.chat_span(
            model=name if isinstance(name, str) else None,
            provider=provider if isinstance(provider, str) else None,
            agent_id=self.agent_id,
        ) as chat:
            if self.turn_decision is not None:
                chat.decision(self.turn_decision)
            reply = self.model.turn(messages, tools)
            chat.reply(reply)
            return reply

    def assistant_message(self, reply: Any) -> Any:
        return self.model.assistant_message(reply)

    def tool_result_message(self, call: Any, result: str, *, is_error: bool) -> Any:
        return self.model.tool_result_message(call, result, is_error=is_error)


def traced_run(func: F) -> F:
    """``loop.run`` inside an ``invoke_agent`` span, with observed model and guard."""
    signature = inspect.signature(func)

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not tracing._ENABLED:
            return func(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        model, guard = bound.arguments["model"], bound.arguments["guard"]
        guard = guard.agent if isinstance(guard, ObservedAgent) else guard
        agent_id = getattr(guard, "agent_id", None)
        provider = getattr(model, "provider", None)
        with tracing.agent_span(
            agent_id if isinstance(agent_id, str) else None,
            provider=provider if isinstance(provider, str) else None,
        ) as span:
            observed_model = _ObservedModel(model, agent_id)

            def on_turn(decision: Mapping[str, Any]) -> None:
                observed_model.turn_decision = decision
                if decision.get("decision") == "denied":
                    span.turn_denied(decision)

            bound.arguments["model"] = observed_model
            bound.arguments["guard"] = ObservedAgent(guard, on_turn)
            result = func(*bound.args, **bound.kwargs)
            span.finish(str(result.outcome), int(result.turns))
            return result

    return run  # type: ignore[return-value]


_VERDICT_ERRORS = {
    "failed": (sc.ERR_TOOL_ERROR, "the tool raised"),
    "unreachable": (sc.ERR_GUARD_UNAVAILABLE, "guard unreachable"),
    "invalid": (sc.ERR_INVALID_INPUT, "the guard refused the input"),
    "denied": (sc.ERR_DENIED, "denied"),
}


def traced_tool_call(func: F) -> F:
    """``loop.run_tool_call`` inside an ``execute_tool`` span, with an observed guard."""

    @functools.wraps(func)
    def run_tool_call(guard: Any, tools: Any, call: Any, *args: Any, **kwargs: Any) -> Any:
        if not tracing._ENABLED:
            return func(guard, tools, call, *args, **kwargs)
        agent_id = getattr(guard, "agent_id", None)
        with tracing.tool_span(
            call.name,
            agent_id=agent_id if isinstance(agent_id, str) else None,
            call_id=call.id,
            arguments=call.args,
        ) as span:
            result = func(observable(guard), tools, call, *args, **kwargs)
            failure = _VERDICT_ERRORS.get(result.verdict)
            if failure is not None:
                span.fail(*failure)
            else:
                span.result(result.text)
            return result

    return run_tool_call  # type: ignore[return-value]

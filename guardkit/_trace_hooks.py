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


class _Chat:
    """A ``chat`` span that records the ``llm_turn`` decision as it starts."""

    def __init__(self, span: Any, decision: Mapping[str, Any] | None) -> None:
        self.span = span
        self.decision = decision

    def __enter__(self) -> Any:
        chat = self.span.__enter__()
        if self.decision is not None:
            chat.decision(self.decision)
        return chat

    def __exit__(self, *exc: Any) -> None:
        self.span.__exit__(*exc)


class _ObservedModel:
    """A model whose turns are ``chat`` spans with the ``llm_turn`` decision that allowed them."""

    def __init__(self, model: Any, agent_id: str | None) -> None:
        self.model = model
        self.agent_id = agent_id
        self.turn_decision: Mapping[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def _chat(self) -> Any:
        name = getattr(self.model, "model", None) or getattr(self.model, "model_name", None)
        chat = tracing.chat_span(
            model=_str(name),
            provider=_str(getattr(self.model, "provider", None)),
            agent_id=self.agent_id,
        )
        return _Chat(chat, self.turn_decision)

    def turn(self, messages: list[Any], tools: Any = ()) -> Any:
        with self._chat() as chat:
            reply = self.model.turn(messages, tools)
            chat.reply(reply)
            return reply

    def assistant_message(self, reply: Any) -> Any:
        return self.model.assistant_message(reply)

    def tool_result_message(self, call: Any, result: str, *, is_error: bool) -> Any:
        return self.model.tool_result_message(call, result, is_error=is_error)


class _AsyncObservedModel(_ObservedModel):
    """The same, for ``arun``'s models whose ``turn`` is a coroutine."""

    async def turn(self, messages: list[Any], tools: Any = ()) -> Any:
        with self._chat() as chat:
            reply = await self.model.turn(messages, tools)
            chat.reply(reply)
            return reply


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _Run:
    """One traced run: its ``invoke_agent`` span and the observed model and guard it hands on."""

    def __init__(self, signature: inspect.Signature, args: Any, kwargs: Any, asynchronous: bool):
        self.bound = signature.bind(*args, **kwargs)
        model, guard = self.bound.arguments["model"], self.bound.arguments["guard"]
        self.guard = guard.agent if isinstance(guard, ObservedAgent) else guard
        self.agent_id = _str(getattr(self.guard, "agent_id", None))
        self.span = tracing.agent_span(
            self.agent_id, provider=_str(getattr(model, "provider", None))
        )
        kind = _AsyncObservedModel if asynchronous else _ObservedModel
        self.model = kind(model, self.agent_id)

    def __enter__(self) -> _Run:
        self.span.__enter__()
        self.bound.arguments["model"] = self.model
        self.bound.arguments["guard"] = ObservedAgent(self.guard, self.on_turn)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.span.__exit__(*exc)

    def on_turn(self, decision: Mapping[str, Any]) -> None:
        self.model.turn_decision = decision
        if decision.get("decision") == "denied":
            self.span.turn_denied(decision)

    def finish(self, result: Any) -> Any:
        self.span.finish(str(result.outcome), int(result.turns))
        return result


def traced_run(func: F) -> F:
    """``loop.run`` (or ``arun``) inside an ``invoke_agent`` span, with observed model and guard."""
    signature = inspect.signature(func)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def arun(*args: Any, **kwargs: Any) -> Any:
            if not tracing._ENABLED:
                return await func(*args, **kwargs)
            with _Run(signature, args, kwargs, asynchronous=True) as run:
                return run.finish(await func(*run.bound.args, **run.bound.kwargs))

        return arun  # type: ignore[return-value]

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not tracing._ENABLED:
            return func(*args, **kwargs)
        with _Run(signature, args, kwargs, asynchronous=False) as traced:
            return traced.finish(func(*traced.bound.args, **traced.bound.kwargs))

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

"""``GuardMiddleware``: every model turn and every tool call of a ``create_agent`` agent, guarded.

``wrap_model_call`` requests ``llm_turn`` before the model is called and reports the turn after;
``wrap_tool_call`` requests each tool call, waits for a human when the guard says so, runs the
tool and reports its outcome. The ``a``-prefixed twins do the same through the async guard API.
With ``approvals="interrupt"`` the tool calls are requested in the model node instead, and
``after_model`` pauses the graph (LangGraph's ``interrupt``) until every pending call is decided;
their decisions live in the graph state, so the checkpoint carries them across the pause.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from guardkit import GuardError, tracing
from guardkit.decisions import DecisionDict
from guardkit.protocols import AgentGuard
from guardkit.refusals import Refusal
from guardkit.tools.flow import Flow, adrive, drive
from guardkit.tools.handoff import Handoff, guarded, handoff, running
from guardkit.tools.scope import current_agent

from ._asks import Asks, CostFn, refused
from ._messages import (
    approval_request,
    failure_of,
    guard_error_message,
    refusal_message,
    tool_error_message,
    turn_refused,
)
from ._state import GuardState, pending, planned, settled, still, with_plan

__all__ = ["GuardMiddleware", "guarded_tool_node"]

Approvals = Literal["wait", "interrupt"]
ToolResult = ToolMessage | Command[Any]
ModelResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


class GuardMiddleware(AgentMiddleware[GuardState, Any, Any]):
    """Guard a LangChain ``create_agent`` agent: its model turns and its tool calls.

    ``agent`` is any ``AgentGuard`` (``guard.agent("bot")``, an ``AgentClient``); ``None`` asks
    ``guardkit.current_agent()`` at each call. ``costs`` maps a tool name to a function of the
    call's arguments that computes its charge. A refused model turn ends the run: the model is
    not called and the last message is an ``AIMessage`` with the refusal's text. A refused tool
    call never runs; the model reads the denial in a ``ToolMessage(status="error")``. A tool
    that raises is reported ``failure`` and the model reads the error as
    ``ToolNode(handle_tool_errors=True)`` words it.

    ``approvals="wait"`` (the default) waits in-process up to ``approval_timeout`` seconds for a
    human to decide a ``pending_approval`` call; ``"interrupt"`` pauses the graph instead (it needs
    a checkpointer) and goes on when resumed with ``Command(resume=True)`` once decided::

        guard_mw = GuardMiddleware(guard.agent("bot"))
        agent = create_agent(model, tools=[search], middleware=[guard_mw])
    """

    state_schema = GuardState

    def __init__(
        self,
        agent: AgentGuard | None = None,
        *,
        approvals: Approvals = "wait",
        approval_timeout: float = 600,
        poll: float = 2.0,
        costs: Mapping[str, CostFn] | None = None,
    ) -> None:
        super().__init__()
        if approvals not in ("wait", "interrupt"):
            raise ValueError(f"approvals must be 'wait' or 'interrupt', not {approvals!r}")
        if not approval_timeout > 0 or not poll > 0:
            raise ValueError("approval_timeout and poll must be positive numbers of seconds")
        self.agent = agent
        self.approvals = approvals
        self.tools: Sequence[BaseTool] = []
        self._asks = Asks(costs=dict(costs or {}), approval_timeout=approval_timeout, poll=poll)

    def _guard(self) -> AgentGuard:
        return self.agent if self.agent is not None else current_agent("LangChain agent")

    # -- model turns ------------------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResult:
        agent = self._guard()
        gate = drive(self._asks.gate(), agent)
        if isinstance(gate, Refusal):
            return turn_refused(gate)
        try:
            response = handler(request)
        except Exception as exc:
            drive(self._asks.outcome(gate["action_id"], _detail(exc)), agent)
            raise
        drive(self._asks.outcome(gate["action_id"], None, _usage(response)), agent)
        if self.approvals == "wait":
            return response
        return with_plan(response, drive(self._plan(agent, request, response), agent))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResult:
        agent = self._guard()
        gate = await adrive(self._asks.gate(), agent)
        if isinstance(gate, Refusal):
            return turn_refused(gate)
        try:
            response = await handler(request)
        except Exception as exc:
            await adrive(self._asks.outcome(gate["action_id"], _detail(exc)), agent)
            raise
        await adrive(self._asks.outcome(gate["action_id"], None, _usage(response)), agent)
        if self.approvals == "wait":
            return response
        return with_plan(response, await adrive(self._plan(agent, request, response), agent))

    def _plan(
        self, agent: AgentGuard, request: ModelRequest[Any], response: ModelResponse[Any]
    ) -> Flow[dict[str, DecisionDict]]:
        """Interrupt mode: request the tool calls the tool node will run, while in the model node.

        The decisions go into the graph state with the model's message, so a pending call's
        action survives the pause; guarded tools ask for themselves when they run.
        """
        tools = {tool.name: tool for tool in request.tools if isinstance(tool, BaseTool)}
        plan: dict[str, DecisionDict] = {}
        for message in response.result:
            for call in message.tool_calls if isinstance(message, AIMessage) else ():
                tool = tools.get(call["name"])
                if tool is None or _guarded(tool) or not call["id"]:
                    continue
                try:
                    plan[call["id"]] = yield from self._asks.request(
                        agent, call["name"], call["args"]
                    )
                except GuardError:
                    break  # the tool node asks again and words the error for the model
        return plan

    # -- approvals by interrupt -------------------------------------------------------------------

    def after_model(self, state: GuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        waiting = pending(state) if self.approvals == "interrupt" else {}
        if not waiting:
            return None
        agent = self._guard()
        while True:
            found = drive(self._asks.verdicts(waiting), agent)
            update = settled(state, waiting, found)
            if update is not None:
                return update
            interrupt(approval_request(agent.agent_id, still(waiting, found)))

    async def aafter_model(self, state: GuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        waiting = pending(state) if self.approvals == "interrupt" else {}
        if not waiting:
            return None
        agent = self._guard()
        while True:
            found = await adrive(self._asks.verdicts(waiting), agent)
            update = settled(state, waiting, found)
            if update is not None:
                return update
            interrupt(approval_request(agent.agent_id, still(waiting, found)))

    # -- tool calls -------------------------------------------------------------------------------

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        agent = self._guard()
        call = request.tool_call
        if _guarded(request.tool):
            with self._handoff(agent, call) as taken:
                try:
                    result = handler(request)
                except GraphBubbleUp:
                    raise
                except Exception as exc:  # noqa: BLE001 - the model reads it, as ToolNode words it
                    return _handed_failure(call, taken, exc)
            return drive(self._handed(call, taken, result), agent)
        with _span(agent, call) as span:
            try:
                decision = drive(self._decide(agent, request, span), agent)
            except GuardError as exc:
                span.error(exc)
                return guard_error_message(call, exc)
            if decision["decision"] != "allowed":
                return refusal_message(call, refused(decision))
            try:
                with running(decision["action_id"]):
                    done = _Done.of(span, call, handler(request))
            except GraphBubbleUp:
                raise
            except Exception as exc:  # noqa: BLE001 - reported, then read by the model
                done = _Done.failed(span, call, exc)
            drive(self._asks.outcome(decision["action_id"], done.failure), agent)
            return done.result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        agent = self._guard()
        call = request.tool_call
        if _guarded(request.tool):
            with self._handoff(agent, call) as taken:
                try:
                    result = await handler(request)
                except GraphBubbleUp:
                    raise
                except Exception as exc:  # noqa: BLE001 - the model reads it, as ToolNode words it
                    return _handed_failure(call, taken, exc)
            return await adrive(self._handed(call, taken, result), agent)
        with _span(agent, call) as span:
            try:
                decision = await adrive(self._decide(agent, request, span), agent)
            except GuardError as exc:
                span.error(exc)
                return guard_error_message(call, exc)
            if decision["decision"] != "allowed":
                return refusal_message(call, refused(decision))
            try:
                with running(decision["action_id"]):
                    done = _Done.of(span, call, await handler(request))
            except GraphBubbleUp:
                raise
            except Exception as exc:  # noqa: BLE001 - reported, then read by the model
                done = _Done.failed(span, call, exc)
            await adrive(self._asks.outcome(decision["action_id"], done.failure), agent)
            return done.result

    def _decide(self, agent: AgentGuard, request: ToolCallRequest, span: Any) -> Flow[DecisionDict]:
        """The call's decision: from the plan (interrupt mode), else asked now; then settled."""
        call = request.tool_call
        decision = planned(request.state, call) if self.approvals == "interrupt" else None
        if decision is None:
            decision = yield from self._asks.request(agent, call["name"], call["args"])
        span.decision(decision, agent_id=agent.agent_id)
        final = yield from self._asks.settle(agent, decision, span)
        if final is not decision:
            span.decision(final)
        return final

    @contextmanager
    def _handoff(self, agent: AgentGuard, call: ToolCall) -> Iterator[Handoff]:
        """Hand the call to a guarded tool: it asks the guard once and reports its own outcome."""
        cost = self._asks.cost(call["name"], call["args"])
        with handoff(agent=agent, cost=cost, call_id=call["id"]) as taken:
            yield taken

    def _handed(self, call: ToolCall, taken: Handoff, result: ToolResult) -> Flow[ToolResult]:
        """A guarded tool's result; its denial again, when a ``ToolNode`` reworded it."""
        if failure_of(result) is None or taken.action_id is None or taken.decision == "allowed":
            return result
        decision = yield from self._asks.verdict(taken.action_id)
        if decision["decision"] == "allowed":
            return result
        return refusal_message(call, refused(decision))


def guarded_tool_node(
    tools: Sequence[BaseTool | Callable[..., Any]],
    agent: AgentGuard | None = None,
    *,
    approval_timeout: float = 600,
    poll: float = 2.0,
    costs: Mapping[str, CostFn] | None = None,
    **tool_node_options: Any,
) -> ToolNode:
    """A LangGraph ``ToolNode`` whose every call is requested, waited on, run and reported.

    The same tool-call guard as ``GuardMiddleware`` (approvals wait in-process), on LangGraph's
    own seam (``ToolNode(wrap_tool_call=..., awrap_tool_call=...)``); other options go to
    ``ToolNode``::

        builder.add_node("tools", guarded_tool_node([search], guard.agent("bot")))
    """
    taken = {"wrap_tool_call", "awrap_tool_call"} & tool_node_options.keys()
    if taken:
        raise TypeError(
            f"guarded_tool_node sets {', '.join(sorted(taken))} itself; to add your own wrapper, "
            "build ToolNode(tools, wrap_tool_call=...) around GuardMiddleware(agent).wrap_tool_call"
        )
    guard = GuardMiddleware(agent, approval_timeout=approval_timeout, poll=poll, costs=costs)
    return ToolNode(
        tools,
        wrap_tool_call=guard.wrap_tool_call,
        awrap_tool_call=guard.awrap_tool_call,
        **tool_node_options,
    )


@dataclass(frozen=True, slots=True)
class _Done:
    """What a tool call that ran gives back to the graph, and its failure detail (or None)."""

    result: ToolResult
    failure: str | None

    @classmethod
    def of(cls, span: Any, call: ToolCall, result: ToolResult) -> _Done:
        failure = failure_of(result)
        if failure is not None:
            span.fail("tool_error", f"{call['name']} returned an error")
        elif isinstance(result, ToolMessage):
            span.result(result.content)
        return cls(result, failure)

    @classmethod
    def failed(cls, span: Any, call: ToolCall, exc: Exception) -> _Done:
        span.error(exc)
        return cls(tool_error_message(call, exc), _detail(exc))


def _usage(response: ModelResponse[Any]) -> str:
    """The turn's outcome detail: the tokens the provider says it used, as the loop words it."""
    tokens = sum(
        message.usage_metadata["total_tokens"]
        for message in response.result
        if isinstance(message, AIMessage) and message.usage_metadata
    )
    return f"usage: {tokens} tokens" if tokens else ""


def _detail(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _span(agent: AgentGuard, call: ToolCall) -> Any:
    return tracing.tool_span(
        call["name"], agent_id=agent.agent_id, call_id=call["id"], arguments=call["args"]
    )


def _guarded(tool: BaseTool | None) -> bool:
    """Whether the tool's function is a ``guardkit.tool``: it asks the guard for itself."""
    return tool is not None and (
        guarded(getattr(tool, "func", None)) or guarded(getattr(tool, "coroutine", None))
    )


def _handed_failure(call: ToolCall, taken: Handoff, exc: Exception) -> ToolMessage:
    """A guarded tool raised: its refusal (nothing ran), or the tool's own error (reported)."""
    if isinstance(exc, GuardError) and taken.decision != "allowed":
        return guard_error_message(call, exc)
    return tool_error_message(call, exc)

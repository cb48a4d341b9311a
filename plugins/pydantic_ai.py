"""Guard a pydantic-ai ``Agent``: every tool call and every model request asks the policy guard.

The whole agent in one line, as a pydantic-ai capability::

    from pydantic_ai import Agent
    from guardkit.plugins.pydantic_ai import GuardCapability

    agent = Agent(model, tools=[...], capabilities=[GuardCapability(guard.agent("bot"))])

or the two halves on their own: ``GuardedToolset(toolset, agent)`` wraps a toolset (pass it in
``Agent(toolsets=[...])``) and ``GuardedModel(model, agent)`` wraps a model. ``agent`` is any
``guardkit.AgentGuard`` (``LocalAgent``, ``AgentClient``); ``None`` asks
``guardkit.current_agent()`` at call time. Everything goes through the guard's async API: the
event loop never waits.

Tool calls: request → (``pending_approval``: wait for a human in the console or the CLI) → run →
report ``success``, or ``failure`` with ``"ExcType: message"`` when the tool raises (the exception
then propagates as pydantic-ai would let it). A denial is returned to the model as the tool's
result, ``guardkit.refusal(...).text`` ("... Do not retry ..."), never as ``ModelRetry``, which
invites a retry. Tools already guarded by ``guardkit.tool`` are handed the call and ask the guard
themselves, once.

Model requests: each one requests ``llm_turn`` first. A refused turn ends the run with
``guardkit.TurnDenied`` (a ``GuardStop``: ``except Exception`` and retry wrappers let it through).
A tool call refused because the agent is terminated is answered with the refusal like any other
(so the calls already allowed and running beside it finish and are reported), and the run ends
with ``TurnDenied`` at its next step: a stopped agent gets no further model request.

Output functions (``ToolOutput(fn)``, ``TextOutput(fn)``, ``output_type=fn``) are guarded by
``GuardCapability`` like tools (requested under the function's name, reported); a refusal
raises ``guardkit.ToolDenied`` out of the run. Provider-side native tools (``NativeTool``,
``WebSearchTool``...) run where no guard sees them: a guarded model refuses them with
``guardkit.PolicyError`` before the request. A call cancelled while it runs (pydantic-ai
cancelling its siblings, a caller's timeout) is reported ``failure``, shielded from the
cancellation.

Approvals: the guard's policy decides. A call the guard answers ``pending_approval`` is ONE pending
action; once a human approves it, the call also counts as approved for pydantic-ai (tools with
``requires_approval=True``, ``ApprovalRequiredToolset``, tools that raise ``ApprovalRequired``
unless ``ctx.tool_call_approved``), so the run never pauses with ``DeferredToolRequests`` for
it. A call pydantic-ai wants approved that the guard allowed without asking anyone does not run:
the action is reported ``failure`` and ``guardkit.PolicyError`` names the policy rule to set
(``requires_approval: true``). Tools that defer themselves (``CallDeferred``) are requested first;
the action id rides in ``DeferredToolRequests.metadata[call_id]["guardkit_action_id"]`` so the code
that runs the call reports its outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from ._adapter import require

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import ApprovalRequired, CallDeferred, RunContext  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.capabilities.abstract import WrapOutputProcessHandler  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse  # noqa: E402
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse  # noqa: E402
from pydantic_ai.models.wrapper import WrapperModel  # noqa: E402
from pydantic_ai.output import OutputContext  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402
from pydantic_ai.tools import AgentDepsT  # noqa: E402
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, WrapperToolset  # noqa: E402
from pydantic_ai.toolsets.abstract import ToolsetTool  # noqa: E402
from pydantic_ai.toolsets.function import FunctionToolsetTool  # noqa: E402
from pydantic_core import to_jsonable_python  # noqa: E402

from guardkit import tracing  # noqa: E402
from guardkit.decisions import DecisionDict, FaultName  # noqa: E402
from guardkit.errors import (  # noqa: E402
    GuardError,
    InvalidState,
    PolicyError,
    ToolDenied,
    TurnDenied,
)
from guardkit.protocols import AgentGuard  # noqa: E402
from guardkit.refusals import Refusal, refusal, refusal_or_stop  # noqa: E402
from guardkit.tools import enforce  # noqa: E402
from guardkit.tools.asking import settle  # noqa: E402
from guardkit.tools.enforce import checked  # noqa: E402
from guardkit.tools.flow import Flow, adrive  # noqa: E402
from guardkit.tools.handoff import guarded, handoff, running  # noqa: E402
from guardkit.tools.outcome import report  # noqa: E402
from guardkit.tools.scope import current_agent  # noqa: E402
from guardkit.tools.shield import shielded  # noqa: E402
from guardkit.tools.turns import model_turn  # noqa: E402

__all__ = ["ACTION_ID_KEY", "CostFn", "GuardCapability", "GuardedModel", "GuardedToolset"]

#: Where a deferred call's guardkit action id is found in ``DeferredToolRequests.metadata``.
ACTION_ID_KEY = "guardkit_action_id"
#: Set on the definition of a tool whose pydantic-ai approval the guard took over.
_NEEDS_HUMAN = "guardkit_requires_approval"

#: Computes a call's charge from its validated arguments (never trust a cost the model states).
CostFn = Callable[[Mapping[str, Any]], Any]
#: What asking the guard gave: ``(action_id, a human approved it)``, or the refusal to return.
_Asked = tuple[str, bool] | Refusal


@dataclass
class GuardedToolset(WrapperToolset[AgentDepsT]):
    """A toolset whose every call is requested, waited for, run and reported.

    >>> toolset = GuardedToolset(FunctionToolset([search, pay]), guard.agent("bot"),
    ...                          costs={"pay": lambda args: args["amount"]})
    >>> Agent(model, toolsets=[toolset])
    """

    #: The agent guard to ask; ``None``: ``guardkit.current_agent()`` at each call.
    agent: AgentGuard | None = None
    #: Per tool name, the charge of a call from its arguments (else the policy's cost).
    costs: Mapping[str, CostFn] = field(default_factory=dict)
    #: How long a call waits for a human; then it ends denied (``approval_timeout``).
    approval_timeout: float = 600
    #: Poll interval of agent guards that poll (``AgentClient``); ``LocalAgent`` is woken.
    poll: float = 2.0

    #: Runs (by ``run_id``) whose tool call the guard refused as terminated: each ends at its
    #: next step (raising in the refused call would cancel the calls running beside it).
    _stopped: dict[str | None, Refusal] = field(default_factory=dict, init=False, repr=False)

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        stopped = self._stopped.pop(ctx.run_id, None)
        if stopped is not None:
            raise TurnDenied(stopped.action_id, stopped.reason)
        tools = await self.wrapped.get_tools(ctx)
        return {name: _take_over_approval(tool) for name, tool in tools.items()}

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> Any:
        agent = self.agent if self.agent is not None else current_agent("tool call")
        cost_fn = self.costs.get(name)
        cost = cost_fn(tool_args) if cost_fn is not None else None
        func = _function_of(tool)
        if func is not None and guarded(func):
            return await self._hand_off(agent, cost, name, tool_args, ctx, tool)
        arguments = to_jsonable_python(tool_args, fallback=repr)
        with tracing.tool_span(
            name, agent_id=agent.agent_id, call_id=ctx.tool_call_id, arguments=arguments
        ) as span:
            try:
                asked = await adrive(self._ask(agent, name, arguments, cost, span), agent)
            except GuardError as exc:
                asked = _refusal_or_raise(exc)
            if isinstance(asked, Refusal):
                if asked.terminated:
                    self._stopped[ctx.run_id] = asked
                return _refused(asked)
            action_id, human = asked
            approved = human or ctx.tool_call_approved
            if _needs_human(tool) and not approved:
                await _not_run(agent, action_id, name)
            value = await self._run(agent, action_id, name, tool_args, ctx, tool, approved)
            span.result(value)
            return value

    def _ask(
        self, agent: AgentGuard, name: str, arguments: Any, cost: Any, span: Any
    ) -> Flow[_Asked]:
        """Check the policy's declared rules, request, wait for a human if the guard says so."""
        return (
            yield from _ask(agent, name, arguments, cost, span, self.approval_timeout, self.poll)
        )

    async def _run(
        self,
        agent: AgentGuard,
        action_id: str,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
        approved: bool,
    ) -> Any:
        """Run an allowed call and report its one outcome."""
        # A human approved it in the guard: that is pydantic-ai's approval too.
        run_ctx = replace(ctx, tool_call_approved=True) if approved else ctx
        try:
            with running(action_id):
                value = await self.wrapped.call_tool(name, tool_args, run_ctx, tool)
        except ApprovalRequired:
            await _not_run(agent, action_id, name)
        except CallDeferred as exc:
            # Run elsewhere: whoever runs it reports the outcome under this action.
            exc.metadata = {**(exc.metadata or {}), ACTION_ID_KEY: action_id}
            raise
        except BaseException as exc:  # a failure, a cancellation, a caller's timeout
            await _failed(agent, action_id, exc)
            raise
        await shielded(adrive(report(action_id, "success"), agent))
        return value

    async def _hand_off(
        self,
        agent: AgentGuard,
        cost: Any,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> Any:
        """Let a ``guardkit.tool`` function ask the guard for this call itself (one action)."""
        with handoff(agent=agent, cost=cost, call_id=ctx.tool_call_id) as taken:
            try:
                return await self.wrapped.call_tool(name, tool_args, ctx, tool)
            except GuardError as exc:
                if taken.decision == "allowed":
                    raise  # the tool ran and failed; it reported that itself
                return _refused(_refusal_or_raise(exc))


def _ask(
    agent: AgentGuard,
    name: str,
    arguments: Any,
    cost: Any,
    span: Any,
    approval_timeout: float,
    poll: float,
) -> Flow[_Asked]:
    arguments = arguments if isinstance(arguments, dict) else {"output": arguments}
    call = yield from checked(agent, name, arguments)
    decision = yield from enforce.request(name, call, cost)
    span.decision(decision, agent_id=agent.agent_id)
    human = decision["decision"] == "pending_approval"
    decision = yield from settle(
        agent, decision, approval_timeout=approval_timeout, poll=poll, span=span
    )
    if decision["decision"] == "allowed":
        return decision["action_id"], human
    return _refusal_of(decision)


async def _failed(agent: AgentGuard, action_id: str, exc: BaseException) -> None:
    """Report the one outcome of a call that raised or was cancelled, whatever cancels us."""
    # A call cancelled by the run or its caller is not the agent's failure: no scar.
    cancelled = isinstance(exc, asyncio.CancelledError)
    detail = "cancelled before it finished" if cancelled else f"{type(exc).__name__}: {exc}"
    fault: FaultName = "caller" if cancelled else "agent"
    with contextlib.suppress(InvalidState):  # an operator already recorded its outcome
        await shielded(adrive(report(action_id, "failure", detail, fault), agent))


async def _not_run(agent: AgentGuard, action_id: str, name: str) -> NoReturn:
    """Fail closed when pydantic-ai wants a human and the guard asked none: nothing runs."""
    why = (
        f"pydantic-ai requires a human approval for {name!r} and the guard's policy does not; "
        "set requires_approval: true on this tool's rule so the approval happens in the guard"
    )
    await adrive(report(action_id, "failure", f"not run: {why}"), agent)
    raise PolicyError([(f"tools.{name}.requires_approval", why)])


def _refusal_of(decision: DecisionDict) -> Refusal:
    found = refusal(decision)
    assert found is not None
    return found


def _refusal_or_raise(exc: GuardError) -> Refusal:
    """A refusal the model can read (denied, timed out, guard unreachable); a store that failed
    stops the agent (``GuardFailed``); anything else is raised on."""
    found = refusal_or_stop(exc, "tool call")
    if found is None:
        raise exc
    return found


def _refused(found: Refusal) -> str:
    """The tool result for a refused call, terminated agent included: raising here would make
    pydantic-ai cancel the calls already allowed and running beside it. The run stops at the
    next model request, which the guard refuses."""
    return found.text


def _take_over_approval(tool: ToolsetTool[AgentDepsT]) -> ToolsetTool[AgentDepsT]:
    """Have pydantic-ai call a ``requires_approval`` tool, so the guard's approval covers it.

    Already-guarded functions keep pydantic-ai's own approval: their decorator asks the guard.
    """
    definition = tool.tool_def
    if definition.kind != "unapproved" or guarded(_function_of(tool)):
        return tool
    metadata = {**(definition.metadata or {}), _NEEDS_HUMAN: True}
    return replace(tool, tool_def=replace(definition, kind="function", metadata=metadata))


def _needs_human(tool: ToolsetTool[Any]) -> bool:
    return bool((tool.tool_def.metadata or {}).get(_NEEDS_HUMAN))


def _function_of(tool: ToolsetTool[Any]) -> Callable[..., Any] | None:
    """The Python function behind a function-toolset tool (to see whether it is guarded)."""
    while not isinstance(tool, FunctionToolsetTool):
        # A CombinedToolset (the agent's toolsets together) keeps the tool it was given here.
        source = getattr(tool, "source_tool", None)
        if not isinstance(source, ToolsetTool):
            return None
        tool = source
    if not isinstance(tool.toolset, FunctionToolset):
        return None
    found = tool.toolset.tools.get(tool.original_name or tool.tool_def.name)
    return None if found is None else found.function


class GuardedModel(WrapperModel):
    """A model whose every request first asks the guard for an ``llm_turn``.

    A refused turn raises ``guardkit.TurnDenied`` out of ``agent.run()``; nothing is sent.

    >>> Agent(GuardedModel(TestModel(), guard.agent("bot")), tools=[...])
    """

    def __init__(self, wrapped: Model | str, agent: AgentGuard | None = None) -> None:
        super().__init__(wrapped)
        #: The agent guard to ask; ``None``: ``guardkit.current_agent()`` at each request.
        self.agent = agent

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        _no_native_tools(model_request_parameters)
        async with model_turn(self.agent):
            return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        _no_native_tools(model_request_parameters)
        async with (
            model_turn(self.agent),
            self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as stream,
        ):
            yield stream


def _no_native_tools(parameters: ModelRequestParameters) -> None:
    """Refuse provider-side tools: they run at the provider, where no guard sees or stops them."""
    names = sorted(type(tool).__name__ for tool in parameters.native_tools)
    if names:
        raise PolicyError(
            [
                (
                    "native_tools",
                    f"{', '.join(names)} run on the model provider's side, where the guard "
                    "cannot see or stop a call; remove them from the agent (NativeTool "
                    "capabilities) or give the agent a function tool the guard can check instead",
                )
            ]
        )


@dataclass
class GuardCapability(AbstractCapability[AgentDepsT]):
    """Guard a whole pydantic-ai agent: its tool calls (all its toolsets) and its model requests.

    >>> Agent(model, tools=[search], capabilities=[GuardCapability(guard.agent("bot"))])
    >>> await agent.run("...", capabilities=[GuardCapability(guard.agent("bot"))])
    """

    #: The agent guard to ask; ``None``: ``guardkit.current_agent()`` at each call.
    agent: AgentGuard | None = None
    costs: Mapping[str, CostFn] = field(default_factory=dict)
    approval_timeout: float = 600
    poll: float = 2.0
    #: Gate model requests with ``llm_turn`` (off: only tool calls are guarded).
    gate_turns: bool = True

    def get_wrapper_toolset(
        self, toolset: AbstractToolset[AgentDepsT]
    ) -> AbstractToolset[AgentDepsT] | None:
        return GuardedToolset(
            toolset,
            agent=self.agent,
            costs=self.costs,
            approval_timeout=self.approval_timeout,
            poll=self.poll,
        )

    def get_wrapper_model(self, model: Model) -> Model | None:
        return GuardedModel(model, self.agent) if self.gate_turns else None

    async def wrap_output_process(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        output_context: OutputContext,
        output: Any,
        handler: WrapOutputProcessHandler,
    ) -> Any:
        """Guard an output function (``ToolOutput(fn)``, ``TextOutput(fn)``, ``output_type=fn``)
        like any tool: pydantic-ai runs it apart from every toolset, so no wrapper toolset sees
        it. A refusal raises ``ToolDenied`` out of the run: the function never runs."""
        if not output_context.has_function or ctx.partial_output:
            return await handler(output)
        call = output_context.tool_call
        name = output_context.function_name or (call.tool_name if call else "output_function")
        agent = self.agent if self.agent is not None else current_agent("output function")
        arguments = to_jsonable_python(output, fallback=repr)
        cost_fn = self.costs.get(name)
        named = arguments if isinstance(arguments, dict) else {"output": arguments}
        cost = cost_fn(named) if cost_fn is not None else None
        with tracing.tool_span(
            name, agent_id=agent.agent_id, call_id=ctx.tool_call_id, arguments=arguments
        ) as span:
            try:
                asked = await adrive(
                    _ask(agent, name, arguments, cost, span, self.approval_timeout, self.poll),
                    agent,
                )
            except GuardError as exc:
                asked = _refusal_or_raise(exc)
            if isinstance(asked, Refusal):
                raise ToolDenied(asked.action_id, asked.reason)
            action_id = asked[0]
            try:
                with running(action_id):
                    value = await handler(output)
            except BaseException as exc:
                await _failed(agent, action_id, exc)
                raise
            await shielded(adrive(report(action_id, "success"), agent))
            span.result(value)
            return value

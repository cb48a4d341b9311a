"""``guard_tools``: a guardrail that asks, an invoker that runs and reports, for each FunctionTool.

One tool call crosses three SDK seams, in this order, within the call's own asyncio task:

1. the tool input guardrail (``Gate.check``) requests the call, waits for a human, and rejects
   it with the denial sentence, or leaves the allowed action in a context variable;
2. the wrapped ``on_invoke_tool`` (``Gate.__call__``) runs the SDK's own invoker (argument
   validation, the function, in a worker thread if sync) and reports the outcome;
3. in between, the SDK hands any exception of the function to the tool's failure formatter,
   which is ``Gate.format_failure``: it notes the failure for the report and words it as the
   tool's own formatter would, and it words a handed-off guarded tool's refusal as the denial
   sentence.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agents import (
    Agent,
    FunctionTool,
    RunContextWrapper,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
)
from agents.tool import (
    ToolErrorFunction,
    resolve_function_tool_failure_error_function,
    set_function_tool_failure_error_function,
)
from agents.tool_context import ToolContext

from guardkit.errors import GuardError
from guardkit.protocols import AgentGuard
from guardkit.refusals import Refusal, refusal
from guardkit.tools.flow import Flow, adrive
from guardkit.tools.handoff import Handoff, guarded, handoff, running
from guardkit.tools.outcome import report
from guardkit.tools.scope import current_agent
from guardkit.tools.shield import shielded

from ._flows import arguments, ask, recall, remember, still_allowed

__all__ = ["GUARDRAIL_NAME", "CostFn", "Gate", "function_tools", "gate_of", "nested_agent"]

#: The name of the tool input guardrail ``guard_tools`` adds (``tool_input_guardrail_results``).
GUARDRAIL_NAME = "guardkit"
CostFn = Callable[[Mapping[str, Any]], Any]
T = TypeVar("T")
log = logging.getLogger("guardkit.openai_agents")


@dataclass(slots=True)
class _Asked:
    """The guardrail's answer for the call about to run, read by the wrapped invoker."""

    gate: Gate
    call_id: str
    agent: AgentGuard
    action_id: str
    #: The invoker took this call over (and owes its outcome).
    taken: bool = False

    def abandoned(self, task: asyncio.Task[Any]) -> None:
        """The call's task ended before its invoker ran (a cancelled run, a caller's timeout):
        the allowed action still gets its one outcome, here and at once."""
        if self.taken:
            return
        self.taken = True
        why = "cancelled" if task.cancelled() else "the run ended"
        try:
            self.agent.report(
                self.action_id, "failure", f"not run: {why} before the tool ran", fault="caller"
            )
        except GuardError as exc:
            log.warning("could not report %s: %s", self.action_id, exc)


@dataclass(slots=True)
class _Running:
    """One call inside the wrapped invoker: exceptions the SDK turned into text, a handoff."""

    errors: list[BaseException] = field(default_factory=list)
    handed: Handoff | None = None


#: Set by the guardrail in the tool call's task; the SDK starts the invoker in a task copied
#: from it, so parallel calls never see each other's answers.
_asked: ContextVar[_Asked | None] = ContextVar("guardkit_openai_agents_asked", default=None)
_running: ContextVar[_Running | None] = ContextVar("guardkit_openai_agents_call", default=None)


class Gate:
    """The guardrail, the wrapped ``on_invoke_tool`` and the failure formatter of one tool."""

    def __init__(
        self,
        tool: FunctionTool,
        agent: AgentGuard | None,
        cost: CostFn | None,
        approval_timeout: float,
        poll: float,
    ) -> None:
        self.tool = tool
        self.agent = agent
        self.cost = cost
        self.timeout = approval_timeout
        self.poll = poll
        self.inner = tool.on_invoke_tool
        self.formatter = resolve_function_tool_failure_error_function(tool)
        try:
            wrapped: object = tool.__wrapped__
        except AttributeError:  # not made by @function_tool, or its invoker was replaced
            wrapped = None
        #: A ``guardkit.tool`` function asks the guard itself: it is handed the call.
        self.handed = guarded(wrapped)
        self.guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self.check, name=GUARDRAIL_NAME
        )

    def install(self) -> None:
        tool = self.tool
        if not self.handed:
            # Last, so that the tool's own guardrails reject before anything is charged.
            tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), self.guardrail]
        failure: ToolErrorFunction = self.format_failure
        set_function_tool_failure_error_function(tool, failure)
        tool.on_invoke_tool = self

    def guard(self) -> AgentGuard:
        return self.agent if self.agent is not None else current_agent("tool call")

    def ask(self, agent: AgentGuard, args: dict[str, Any]) -> Flow[str | Refusal]:
        cost = self.cost(args) if self.cost is not None else None
        return ask(agent, self.tool.name, args, cost, self.timeout, self.poll)

    async def reuse_or_ask(
        self, agent: AgentGuard, call_id: str, text: str, args: dict[str, Any]
    ) -> str | Refusal:
        """The action approved for this call while the SDK paused the run, else a new request."""
        earlier = recall(agent, call_id, self.tool.name, text)
        if earlier is not None and await adrive(
            still_allowed(earlier, self.tool.name, args), agent
        ):
            return earlier
        return await adrive(self.ask(agent, args), agent)

    # -- 1. the tool input guardrail: request, wait, refuse

    async def check(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        args = arguments(ctx.tool_arguments, self.tool.name)
        if isinstance(args, str):
            return ToolGuardrailFunctionOutput.reject_content(args)
        agent = self.guard()
        approved = ctx.is_tool_approved(self.tool.name, ctx.tool_call_id)
        if approved:
            outcome = await self.reuse_or_ask(agent, ctx.tool_call_id, ctx.tool_arguments, args)
        else:
            outcome = await adrive(self.ask(agent, args), agent)
        if isinstance(outcome, Refusal):
            return ToolGuardrailFunctionOutput.reject_content(outcome.text, outcome.to_dict())
        if approved is None and self.tool.needs_approval is not False:
            # With pre-approval guardrails (RunConfig.tool_execution) the SDK may still pause
            # this call for its own approval: resolve_interruptions and the resumed run reuse
            # this action rather than asking twice.
            remember(agent, ctx.tool_call_id, self.tool.name, ctx.tool_arguments, outcome)
        asked = _Asked(self, ctx.tool_call_id, agent, outcome)
        task = asyncio.current_task()
        if task is not None and not (approved is None and self.tool.needs_approval is not False):
            # The call's own task awaits the invoker: if it ends first, nothing ran.
            task.add_done_callback(asked.abandoned)
        _asked.set(asked)
        return ToolGuardrailFunctionOutput.allow({"action_id": outcome})

    # -- 2. the wrapped on_invoke_tool: run and report

    async def __call__(self, ctx: ToolContext[Any], input: str) -> Any:
        if self.handed:
            return await self._hand_over(ctx, input)
        asked = _asked.get()
        if asked is not None and asked.gate is self and asked.call_id == ctx.tool_call_id:
            _asked.set(None)
            asked.taken = True
            recall(asked.agent, ctx.tool_call_id, self.tool.name, input)
            return await self._run(ctx, input, asked.agent, asked.action_id)
        # Invoked without the guardrail (called directly, outside a run): ask here.
        args = arguments(input, self.tool.name)
        if isinstance(args, str):
            return args
        agent = self.guard()
        outcome = await adrive(self.ask(agent, args), agent)
        if isinstance(outcome, Refusal):
            return outcome.text
        return await self._run(ctx, input, agent, outcome)

    async def _run(self, ctx: ToolContext[Any], input: str, agent: AgentGuard, action: str) -> Any:
        call = _Running()
        token = _running.set(call)
        try:
            with running(action):
                value = await self.inner(ctx, input)
        except BaseException as exc:  # cancelled, timed out, or failure_error_function=None
            await _report_failure(agent, action, exc)
            raise
        finally:
            _running.reset(token)
        if call.errors:  # the SDK turned the tool's exception into text for the model
            await _report_failure(agent, action, call.errors[-1])
        else:
            await adrive(report(action, "success"), agent)
        return value

    async def _hand_over(self, ctx: ToolContext[Any], input: str) -> Any:
        args = arguments(input, self.tool.name)
        cost = self.cost(args) if self.cost is not None and isinstance(args, dict) else None
        with handoff(agent=self.agent, cost=cost, call_id=ctx.tool_call_id) as taken:
            token = _running.set(_Running(handed=taken))
            try:
                return await self.inner(ctx, input)
            finally:
                _running.reset(token)

    # -- 3. the failure formatter, called by the SDK's invoker with the tool's exception

    async def format_failure(self, ctx: RunContextWrapper[Any], error: Exception) -> str:
        call = _running.get()
        if call is not None and call.handed is not None and call.handed.decision != "allowed":
            found = refusal(error) if isinstance(error, GuardError) else None
            if found is not None:  # the guarded tool was refused: nothing ran
                return found.text
        if call is not None:
            call.errors.append(error)
        if self.formatter is None:  # the tool's failure_error_function=None: the run fails
            raise error
        text = self.formatter(ctx, error)
        return str(await text if inspect.isawaitable(text) else text)


async def _report_failure(agent: AgentGuard, action: str, exc: BaseException) -> None:
    try:
        # A call cancelled by the run or its caller is not the agent's failure: no scar.
        if isinstance(exc, asyncio.CancelledError):
            flow = report(action, "failure", "cancelled before it finished", "caller")
        else:
            flow = report(action, "failure", f"{type(exc).__name__}: {exc}")
        await shielded(adrive(flow, agent))
    except GuardError as problem:
        # An operator may already have recorded this action's one outcome (``harmful``), or the
        # guard went away: what the run must see is still the tool's own failure.
        exc.add_note(f"guardkit could not report the failure: {problem}")


def nested_agent(tool: FunctionTool) -> Agent[Any] | None:
    """The agent behind ``agent.as_tool(...)``: its own run has tools and model turns too."""
    found = getattr(tool, "_agent_instance", None)
    return found if isinstance(found, Agent) else None


def function_tools(found: object, seen: set[int]) -> Iterable[FunctionTool]:
    if id(found) in seen:
        return
    seen.add(id(found))
    if isinstance(found, FunctionTool):
        yield found
        nested = nested_agent(found)
        if nested is not None:  # an agent used as a tool: guard what its nested run can call
            yield from function_tools(nested, seen)
    elif isinstance(found, Agent):
        for item in (*found.tools, *found.handoffs):
            yield from function_tools(item, seen)
    elif isinstance(found, list | tuple):
        for item in found:
            yield from function_tools(item, seen)
    elif type(found).__module__.split(".")[0] != "agents":  # hosted tools, Handoff: not ours
        raise TypeError(
            f"guard_tools takes an agents.Agent, a FunctionTool or a list of them, not {found!r}"
        )


def gate_of(owner: object, name: str | None) -> Gate | None:
    """The gate of ``owner``'s (an SDK agent's) guarded tool named ``name``, if any."""
    for tool in getattr(owner, "tools", ()):
        if isinstance(tool, FunctionTool) and tool.name == name:
            gate = tool.on_invoke_tool
            return gate if isinstance(gate, Gate) else None
    return None

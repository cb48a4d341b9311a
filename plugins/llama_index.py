"""Guard a LlamaIndex agent in place: ``guard(agent_or_workflow, guard_agent)``.

::

    from llama_index.core.agent.workflow import FunctionAgent
    from guardkit.plugins.llama_index import guard

    agent = guard(FunctionAgent(tools=[...], llm=llm), my_guard.agent("bot"))
    await agent.run(user_msg="...")

Works for a ``FunctionAgent`` (any ``BaseWorkflowAgent``: ``ReActAgent``, ``CodeActAgent``) and
for an ``AgentWorkflow`` of them. Tools: every tool the agent (or the workflow) hands to the model
or calls goes through its ``get_tools``, so ``guard`` replaces ``get_tools`` on the instance with
one that guards each tool it returns: the tool object's ``call`` and ``acall`` are replaced on the
instance by ones that hand the call to ``guardkit.acall_tool`` / ``guardkit.call_tool``. So a tool
put in ``agent.tools`` after ``guard``, or found by a ``tool_retriever``, is guarded before the
model sees it; each call is requested once with its named arguments (the workflow ``Context`` a
tool takes is passed on, never recorded), run only if allowed, reported ``success`` or
``failure``, and a refusal comes back as the tool's ``ToolOutput`` (``is_error=True``, the text
"... Nothing was done. Do not retry ..."), never as an exception.

Model turns: each agent step's model call (``take_step``, and the early-stopping answer of
``early_stopping_method="generate"``) first requests ``llm_turn``. A refused turn raises
``guardkit.TurnDenied``, a ``GuardStop`` the workflow runtime lets through, so the run ends there
(and so does a terminated agent's, at its next turn). The LLM object is left alone: it may be
shared (``Settings.llm``) with code the guard does not own.

Approvals: a call the policy sends for approval waits (``approval_timeout``) for a human in the
console or the CLI, in process, on the guard's async API (the event loop keeps running). The
workflow's ``handoff`` tool is the model passing control to another agent, not an action, and is
left alone (``exempt``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from ._adapter import require
from ._settings import CostFn, GuardSettings

require("llama_index.core", "llama-index")

from llama_index.core.agent.workflow import (  # noqa: E402 - after the check that names the extra
    AgentWorkflow,
    BaseWorkflowAgent,
)
from llama_index.core.tools import (  # noqa: E402
    AsyncBaseTool,
    BaseTool,
    FunctionTool,
    ToolOutput,
    adapt_to_async_tool,
)

from guardkit.dispatch import acall_tool, call_tool  # noqa: E402
from guardkit.protocols import AgentGuard  # noqa: E402
from guardkit.refusals import Refusal  # noqa: E402
from guardkit.tools.turns import model_turn  # noqa: E402

__all__ = ["CostFn", "guard", "guard_tools"]

Guardable = TypeVar("Guardable", BaseWorkflowAgent, AgentWorkflow)
#: Set on a tool object, an agent or a workflow whose calls already go through the guard.
_MARK = "_guardkit_guarded"
#: On a guarded object: the settings of the latest ``guard`` call that took it.
_SETTINGS = "_guardkit_settings"
#: The tool object whose guarded call is running (its own ``acall`` calling its ``call`` is the
#: same action, not a second one).
_RUNNING: ContextVar[int | None] = ContextVar("guardkit_llama_index_tool", default=None)


def guard(
    agent_or_workflow: Guardable,
    guard_agent: AgentGuard | None = None,
    *,
    costs: Mapping[str, CostFn] | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
    exempt: Collection[str] = ("handoff",),
) -> Guardable:
    """Guard a ``FunctionAgent`` (any workflow agent) or an ``AgentWorkflow`` in place; return it.

    ``guard_agent`` is any ``guardkit.AgentGuard`` (``LocalAgent``, ``AgentClient``); ``None``
    asks ``guardkit.current_agent()`` at each call. ``costs`` maps a tool name to the charge of
    a call from its arguments (else the policy's cost). Calling ``guard`` twice changes nothing
    but the settings.
    """
    settings = _settings(guard_agent, costs, approval_timeout, poll, exempt)
    if isinstance(agent_or_workflow, AgentWorkflow):
        _guard_workflow(agent_or_workflow, settings)
    elif isinstance(agent_or_workflow, BaseWorkflowAgent):
        _guard_agent(agent_or_workflow, settings)
    else:
        raise TypeError(
            "guardkit.plugins.llama_index.guard takes a LlamaIndex workflow agent "
            "(FunctionAgent, ReActAgent...) or an AgentWorkflow, not "
            f"{type(agent_or_workflow).__name__}; guard a list of tools with guard_tools(tools)"
        )
    return agent_or_workflow


def guard_tools(
    tools: Iterable[BaseTool | Callable[..., Any]],
    guard_agent: AgentGuard | None = None,
    *,
    costs: Mapping[str, CostFn] | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> list[AsyncBaseTool]:
    """Guard LlamaIndex tools in place and return them: plain functions become ``FunctionTool``s,
    a sync-only ``BaseTool`` comes back in LlamaIndex's own async adapter (its ``__call__`` cannot
    be replaced on the instance).

    For tools handed to an agent or a query pipeline ``guard`` does not take, or called directly:
    ``tool.call(...)``, ``await tool.acall(...)`` and ``tool(...)`` each ask the guard once.
    """
    settings = _settings(guard_agent, costs, approval_timeout, poll, ())
    guarded: list[AsyncBaseTool] = []
    for tool in tools:
        if isinstance(tool, BaseTool):
            made = adapt_to_async_tool(tool)
        else:
            made = FunctionTool.from_defaults(tool)
        _guard_tool(made, settings)
        guarded.append(made)
    return guarded


def _settings(
    guard_agent: AgentGuard | None,
    costs: Mapping[str, CostFn] | None,
    approval_timeout: float,
    poll: float,
    exempt: Collection[str],
) -> GuardSettings:
    return GuardSettings(
        "LlamaIndex", guard_agent, dict(costs or {}), approval_timeout, poll, frozenset(exempt)
    )


def _patch(owner: object, name: str, replacement: Callable[..., Any]) -> None:
    """Replace a method on this instance only (agents are pydantic models: no plain setattr)."""
    object.__setattr__(owner, name, functools.wraps(getattr(owner, name))(replacement))


def _current(owner: object) -> GuardSettings:
    settings: GuardSettings = getattr(owner, _SETTINGS)
    return settings


def _guard_returned(
    owner: object, get_tools: Callable[..., Awaitable[Sequence[AsyncBaseTool]]]
) -> Callable[..., Awaitable[Sequence[AsyncBaseTool]]]:
    async def guarded_get_tools(*args: Any, **kwargs: Any) -> Sequence[AsyncBaseTool]:
        tools = await get_tools(*args, **kwargs)
        settings = _current(owner)
        for tool in tools:
            if tool.metadata.get_name() not in settings.exempt:
                _guard_tool(tool, settings)
        return tools

    return guarded_get_tools


def _gated(owner: object, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def gated(*args: Any, **kwargs: Any) -> Any:
        async with model_turn(_current(owner).agent()):
            return await call(*args, **kwargs)

    return gated


def _guard_agent(agent: BaseWorkflowAgent, settings: GuardSettings) -> None:
    object.__setattr__(agent, _SETTINGS, settings)
    if getattr(agent, _MARK, False):
        return
    _patch(agent, "get_tools", _guard_returned(agent, agent.get_tools))
    _patch(agent, "take_step", _gated(agent, agent.take_step))
    _patch(agent, "_get_llm_response", _gated(agent, agent._get_llm_response))
    object.__setattr__(agent, _MARK, True)


def _guard_workflow(workflow: AgentWorkflow, settings: GuardSettings) -> None:
    object.__setattr__(workflow, _SETTINGS, settings)
    for member in workflow.agents.values():
        _guard_agent(member, settings)
    if getattr(workflow, _MARK, False):
        return
    get_tools = _guard_returned(workflow, workflow.get_tools)

    async def guarded_get_tools(
        agent_name: str, *args: Any, **kwargs: Any
    ) -> Sequence[AsyncBaseTool]:
        member = workflow.agents.get(agent_name)
        if member is not None:  # an agent put in the workflow after ``guard``
            _guard_agent(member, _current(workflow))
        return await get_tools(agent_name, *args, **kwargs)

    _patch(workflow, "get_tools", guarded_get_tools)
    _patch(workflow, "_get_llm_response", _gated(workflow, workflow._get_llm_response))
    object.__setattr__(workflow, _MARK, True)


def _guard_tool(tool: AsyncBaseTool, settings: GuardSettings) -> None:
    """Hand ``tool``'s calls to the guard (``tool(...)`` goes through ``call``). A tool object
    guarded again (the same tool in another agent) answers to the latest ``guard``'s settings.
    A sync-only tool reaches here in the adapter ``get_tools`` makes for it on each call."""
    object.__setattr__(tool, _SETTINGS, settings)
    if getattr(tool, _MARK, False):
        return
    call = _ToolCall(tool)
    _patch(tool, "call", call.sync(tool.call))
    _patch(tool, "acall", call.asynchronous(tool.acall))
    object.__setattr__(tool, _MARK, True)


class _ToolCall:
    """How one tool object's calls become guard calls: its name, arguments and refusals."""

    __slots__ = ("context", "fn", "key", "name", "names", "partial", "tool")

    def __init__(self, tool: AsyncBaseTool) -> None:
        self.tool = tool
        self.key = id(tool)
        self.name = tool.metadata.get_name()
        #: The function a ``guardkit.tool`` may already guard (then it asks the guard itself).
        self.fn: Callable[..., Any] | None = None
        #: The parameter the workflow passes its ``Context`` in: passed on, never recorded.
        self.context: str | None = None
        #: Arguments the developer fixed (``partial_params``): they run, so they are recorded.
        self.partial: dict[str, Any] = {}
        if isinstance(tool, FunctionTool):
            self.fn, self.context = tool.real_fn, tool.ctx_param_name
            self.partial = dict(tool.partial_params)
        self.names = _positional_names(self.fn or tool.call, self.context)

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(self.names):
            raise TypeError(
                f"{self.name}() takes {len(self.names)} positional arguments "
                f"but {len(args)} were given"
            )
        named = {**self.partial, **dict(zip(self.names, args, strict=False)), **kwargs}
        named.pop(self.context or "", None)
        return named

    def refused(self, arguments: dict[str, Any]) -> Callable[[Refusal], ToolOutput]:
        def output(found: Refusal) -> ToolOutput:
            return ToolOutput(
                content=found.text,
                tool_name=self.name,
                raw_input={"args": (), "kwargs": arguments},
                raw_output=found.text,
                is_error=True,
            )

        return output

    def _body(self, run: Callable[[], Any]) -> Callable[..., Any]:
        """What the dispatcher runs: ``run`` marked as this tool's call, and seen as the
        ``guardkit.tool`` function it wraps, if any (so that function asks the guard, once)."""

        def body(**_: Any) -> Any:
            token = _RUNNING.set(self.key)
            try:
                value = run()
            finally:
                _RUNNING.reset(token)
            if inspect.isawaitable(value):
                return self._marked(value)
            return value

        if self.fn is not None:
            body.__wrapped__ = self.fn  # type: ignore[attr-defined]  # what ``guarded`` follows
        return body

    async def _marked(self, value: Awaitable[Any]) -> Any:
        token = _RUNNING.set(self.key)
        try:
            return await value
        finally:
            _RUNNING.reset(token)

    def sync(self, original: Callable[..., ToolOutput]) -> Callable[..., ToolOutput]:
        def guarded_call(*args: Any, **kwargs: Any) -> ToolOutput:
            if _RUNNING.get() == self.key:
                return original(*args, **kwargs)
            arguments = self.arguments(args, kwargs)
            settings = _current(self.tool)
            result: ToolOutput = call_tool(
                self.name,
                arguments,
                self._body(lambda: original(*args, **kwargs)),
                guard=settings.agent(),
                cost=settings.costs.get(self.name),
                on_refusal=self.refused(arguments),
                approval_timeout=settings.approval_timeout,
                poll=settings.poll,
            )
            return result

        return guarded_call

    def asynchronous(
        self, original: Callable[..., Awaitable[ToolOutput]]
    ) -> Callable[..., Awaitable[ToolOutput]]:
        async def guarded_acall(*args: Any, **kwargs: Any) -> ToolOutput:
            if _RUNNING.get() == self.key:
                return await original(*args, **kwargs)
            arguments = self.arguments(args, kwargs)
            settings = _current(self.tool)
            result: ToolOutput = await acall_tool(
                self.name,
                arguments,
                self._body(lambda: original(*args, **kwargs)),
                guard=settings.agent(),
                cost=settings.costs.get(self.name),
                on_refusal=self.refused(arguments),
                approval_timeout=settings.approval_timeout,
                poll=settings.poll,
            )
            return result

        return guarded_acall


def _positional_names(function: Callable[..., Any], context: str | None) -> list[str]:
    """The names positional arguments of ``function`` bind to (the ``Context`` one left out)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and p.name != context
    ]

"""``GuardHooks``: run hooks that gate every model call of an Agents SDK run with ``llm_turn``,
and guard any tool that reaches a run unguarded; ``guard_tools``, which also carries the gate
into the nested runs of agents used as tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from agents import (
    Agent,
    AgentHooks,
    FunctionTool,
    ModelResponse,
    RunContextWrapper,
    RunHooks,
    Tool,
    TResponseInputItem,
)

from guardkit.protocols import AgentGuard
from guardkit.tools.flow import adrive
from guardkit.tools.outcome import report
from guardkit.tools.scope import current_agent

from ._flows import turn
from ._tools import CostFn, Gate, function_tools, nested_agent

__all__ = ["GuardHooks", "NestedGate", "guard_tools"]

T = TypeVar("T")


class _Turns:
    """Requests ``llm_turn`` before a model call and reports it after; guards late tools."""

    def __init__(self, agent: AgentGuard | None, approval_timeout: float, poll: float) -> None:
        self._agent = agent
        self._timeout = approval_timeout
        self._poll = poll
        #: The allowed ``llm_turn`` of each run whose model call is under way, by run context.
        self._turns: dict[int, tuple[AgentGuard, str]] = {}

    async def start(self, context: RunContextWrapper[Any]) -> None:
        guard = self._agent if self._agent is not None else current_agent("model turn")
        decision = await adrive(turn(), guard)
        self._turns[id(context)] = (guard, decision["action_id"])

    async def end(self, context: RunContextWrapper[Any], response: ModelResponse) -> None:
        started = self._turns.pop(id(context), None)
        if started is None:
            return
        guard, action_id = started
        tokens = response.usage.total_tokens
        await adrive(
            report(action_id, "success", f"usage: {tokens} tokens" if tokens else ""), guard
        )

    def tool(self, tool: Tool) -> None:
        """A function tool about to run without a gate (added after ``guard_tools``, a clone's
        new tools): gated now. The SDK reads its invoker after this hook, so the call asks."""
        if isinstance(tool, FunctionTool):
            guard_tools(tool, self._agent, approval_timeout=self._timeout, poll=self._poll)


class GuardHooks(RunHooks[Any]):
    """Run hooks that request ``llm_turn`` before every model call and report it after.

    ``Runner.run(sdk_agent, input, hooks=GuardHooks(agent))``, ``agent`` being any agent guard
    (``LocalAgent``, ``AgentClient``), or None for ``guardkit.current_agent()`` at each turn.
    A refused turn raises ``guardkit.TurnDenied`` out of ``Runner.run`` before the model is
    called; its ``.code`` says why (``terminated``, ``tool_call_limit``, ``rate_limited``...)::

        try:
            result = await Runner.run(sdk_agent, task, hooks=GuardHooks(agent))
        except guardkit.TurnDenied as stop:
            print("stopped by the guard:", stop.message)

    The turn is reported ``success`` when the model answers (``usage: N tokens``); a model call
    that raises ends the run (the SDK lets the error out) and leaves its turn unreported. A
    function tool that reaches the run unguarded (appended after ``guard_tools``, a clone's new
    tools) is guarded when it is about to run, at ``on_tool_start``, with the policy's cost. To
    add hooks of your own, subclass and call ``super()`` in ``on_llm_start``, ``on_llm_end``
    and ``on_tool_start``.
    """

    def __init__(self, agent: AgentGuard | None = None) -> None:
        self._gate = _Turns(agent, 300.0, 2.0)

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        if not isinstance(agent.hooks, NestedGate):  # that agent's own hooks gate its turns
            await self._gate.start(context)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        await self._gate.end(context, response)

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
    ) -> None:
        self._gate.tool(tool)


class NestedGate(AgentHooks[Any]):
    """The agent hooks ``guard_tools`` gives an agent used as a tool (``agent.as_tool``): its
    nested run gets no run hooks from the outer one, so its own hooks gate its model turns and
    its late tools. Hooks the agent already had still run, after these."""

    def __init__(self, gate: _Turns, inner: AgentHooks[Any] | None) -> None:
        self.gate = gate
        self.inner = inner

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        await self.gate.start(context)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        await self.gate.end(context, response)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
    ) -> None:
        self.gate.tool(tool)
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    def __getattr__(self, name: str) -> Any:
        # on_start, on_end, on_handoff, on_tool_end: the agent's own hooks, if it had any.
        inner = self.__dict__.get("inner")
        if inner is None or not name.startswith("on_"):
            raise AttributeError(name)
        return getattr(inner, name)


def guard_tools(
    tools: T,
    agent: AgentGuard | None = None,
    *,
    costs: Mapping[str, CostFn] | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> T:
    """Guard every ``FunctionTool`` of an SDK ``Agent`` (and of its handoff agents, and of the
    agents it uses as tools), in place.

    ``tools`` is an ``Agent``, a ``FunctionTool`` or a list of them, and is returned. ``agent``
    is the agent guard to ask (None: ``guardkit.current_agent()`` at each call). ``costs`` maps
    a tool name to a function of the call's arguments that computes its charge in code. A
    pending call waits up to ``approval_timeout`` seconds for a human, then is refused
    (``approval_timeout``). Guarding a tool twice changes nothing. An agent used as a tool
    (``helper.as_tool(...)``) gets its tools guarded and its model turns gated by its own
    hooks (``NestedGate``), since its nested run has no run hooks. ``Handoff`` objects made
    with ``handoff(agent)`` hide their agent: guard that agent too. The guard's guardrail runs
    after the tool's own: add yours before calling ``guard_tools``.

    >>> sdk_agent = guard_tools(Agent(name="ops", tools=[restart_service]), guard.agent("ops"))
    """
    for tool in function_tools(tools, set()):
        if not isinstance(tool.on_invoke_tool, Gate):
            cost = (costs or {}).get(tool.name)
            Gate(tool, agent, cost, approval_timeout, poll).install()
        nested = nested_agent(tool)
        if nested is not None and not isinstance(nested.hooks, NestedGate):
            nested.hooks = NestedGate(_Turns(agent, approval_timeout, poll), nested.hooks)
    return tools

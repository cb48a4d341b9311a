"""``GuardHooks``: run hooks that gate every model call of an Agents SDK run with ``llm_turn``."""

from __future__ import annotations

from typing import Any

from agents import Agent, ModelResponse, RunContextWrapper, RunHooks, TResponseInputItem

from guardkit.protocols import AgentGuard
from guardkit.tools.flow import adrive
from guardkit.tools.scope import current_agent

from ._flows import report, turn

__all__ = ["GuardHooks"]


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
    that raises ends the run (the SDK lets the error out) and leaves its turn unreported. To add
    hooks of your own, subclass and call ``super()`` in ``on_llm_start`` and ``on_llm_end``.
    """

    def __init__(self, agent: AgentGuard | None = None) -> None:
        self._agent = agent
        #: The allowed ``llm_turn`` of each run whose model call is under way, by run context.
        self._turns: dict[int, tuple[AgentGuard, str]] = {}

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        guard = self._agent if self._agent is not None else current_agent("model turn")
        decision = await adrive(turn(), guard)
        self._turns[id(context)] = (guard, decision["action_id"])

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        started = self._turns.pop(id(context), None)
        if started is None:
            return
        guard, action_id = started
        tokens = response.usage.total_tokens
        await adrive(
            report(action_id, "success", f"usage: {tokens} tokens" if tokens else ""), guard
        )

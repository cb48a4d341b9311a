"""``resolve_interruptions``: the SDK's ``needs_approval`` pauses, answered by guardkit's humans."""

from __future__ import annotations

from typing import Any

from agents import RunResult, RunResultStreaming, RunState, ToolApprovalItem

from guardkit.protocols import AgentGuard
from guardkit.refusals import Refusal

from ._flows import arguments, remember
from ._tools import Gate, gate_of

__all__ = ["resolve_interruptions"]


async def resolve_interruptions(
    result: RunResult | RunResultStreaming | RunState[Any], agent: AgentGuard | None = None
) -> RunState[Any]:
    """Answer a paused run's ``needs_approval`` interruptions with the guard's decisions.

    ``result`` is what ``Runner.run`` returned with ``result.interruptions``, or a ``RunState``.
    Each interrupted call of a tool ``guard_tools`` guarded is requested (one action: pending
    until a human approves or rejects it in the console or with ``guardkit approve``/``reject``,
    for up to the tool's ``approval_timeout``), and the guard's answer approves the interruption
    or rejects it with the denial sentence for the model. A tool the policy allows without a
    human is approved: the policy, not the SDK flag, decides who must look. A ``guardkit.tool``
    function is approved here and asks the guard itself when it runs. Other interruptions
    (tools ``guard_tools`` did not guard) are left for you to approve or reject.

    Returns the state to resume with; the approved call then runs under the same action::

        while result.interruptions:
            state = await resolve_interruptions(result, agent)
            result = await Runner.run(sdk_agent, state, hooks=GuardHooks(agent))
    """
    if isinstance(result, RunState):
        state: RunState[Any] = result
        items = state.get_interruptions()
    else:
        state = result.to_state()
        items = list(result.interruptions)
    for item in items:
        gate = gate_of(item.agent, item.tool_name)
        if gate is not None:
            await _resolve(gate, item, state, agent)
    return state


async def _resolve(
    gate: Gate, item: ToolApprovalItem, state: RunState[Any], agent: AgentGuard | None
) -> None:
    if gate.handed:  # the guarded tool asks, and waits for a human, when it runs
        state.approve(item)
        return
    guard = agent if agent is not None else gate.guard()
    text, call_id = item.arguments or "", item.call_id or ""
    args = arguments(text, gate.tool.name)
    if isinstance(args, str):
        state.reject(item, rejection_message=args)
        return
    outcome = await gate.reuse_or_ask(guard, call_id, text, args)
    if isinstance(outcome, Refusal):
        state.reject(item, rejection_message=outcome.text)
        return
    remember(guard, call_id, gate.tool.name, text, outcome)
    state.approve(item)

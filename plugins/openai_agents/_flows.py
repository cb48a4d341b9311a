"""What the integration asks the guard, written once as flows, and calls asked for but not run yet.

The flows are driven with ``adrive`` (the SDK is async): an agent guard's ``async`` API is
awaited, any other agent guard is called in a worker thread, so the event loop never waits on a
store, the network or a human.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from guardkit import tracing
from guardkit.decisions import Action, DecisionDict
from guardkit.errors import GuardError, TurnDenied
from guardkit.protocols import AgentGuard
from guardkit.refusals import Refusal, refusal, refusal_or_stop
from guardkit.tools import asking
from guardkit.tools.enforce import RESERVED_KEY, checked_request
from guardkit.tools.flow import Flow, Op
from guardkit.tools.turns import LLM_TURN

__all__ = ["arguments", "ask", "recall", "remember", "still_allowed", "turn"]


def turn() -> Flow[DecisionDict]:
    """Request ``llm_turn``; a refusal raises ``TurnDenied``."""
    decision: DecisionDict = yield Op("request", (LLM_TURN, {}))
    if decision["decision"] != "allowed":
        raise TurnDenied(decision["action_id"], decision.get("reason") or {"code": "denied"})
    return decision


def ask(
    agent: AgentGuard, tool: str, args: dict[str, Any], cost: Any, timeout: float, poll: float
) -> Flow[str | Refusal]:
    """Request the call and wait for a human if need be: the allowed action id, or the refusal."""
    try:
        # The policy's declared checks first (paths, egress, provenance): guardkit.tools.enforce.
        decision = yield from checked_request(agent, tool, args, cost)
        span = tracing.current_tool()
        span.decision(decision, agent_id=agent.agent_id)
        decision = yield from asking.settle(
            agent, decision, approval_timeout=timeout, poll=poll, span=span
        )
    except GuardError as exc:
        found = refusal_or_stop(exc, f"tool call {tool!r}")  # nothing runs
        if found is None:
            raise
        return found
    found = refusal(decision)
    return decision["action_id"] if found is None else found


def still_allowed(action_id: str, tool: str, args: dict[str, Any]) -> Flow[bool]:
    """Whether an action approved earlier may run this call: allowed, same tool and input."""
    action: Action = yield Op("action", (action_id,))
    recorded = {k: v for k, v in action["input"].items() if k != RESERVED_KEY}
    return action["status"] == "allowed" and action["tool"] == tool and recorded == args


def arguments(text: str, tool: str) -> dict[str, Any] | str:
    """The call's JSON arguments, or what to tell the model when they are not a JSON object.

    Such a call is never requested: there is nothing the guard could decide on.
    """
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    return (
        f"Error: the arguments for {tool} are not a JSON object. Nothing was done; call the tool "
        "again with arguments that match its schema."
    )


#: Calls that were asked for while their tool could not run yet, because the SDK paused the run
#: for its own approval: ``(agent_id, call_id) -> (tool, arguments, action_id)``. When the run
#: resumes in this process the approved action is reused instead of asking again. Bounded: a
#: forgotten entry only means the call is requested again.
_waiting: OrderedDict[tuple[str, str], tuple[str, str, str]] = OrderedDict()
_WAITING_MAX = 1024


def remember(agent: AgentGuard, call_id: str, tool: str, text: str, action_id: str) -> None:
    _waiting[(agent.agent_id, call_id)] = (tool, text, action_id)
    while len(_waiting) > _WAITING_MAX:
        _waiting.popitem(last=False)


def recall(agent: AgentGuard, call_id: str, tool: str, text: str) -> str | None:
    """The action remembered for this very call (same tool and arguments), taken once."""
    entry = _waiting.pop((agent.agent_id, call_id), None)
    if entry is None or entry[:2] != (tool, text):
        return None
    return entry[2]

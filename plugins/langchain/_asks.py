"""What ``GuardMiddleware`` asks the guard, written once as flows for sync and async agents.

Each step is a ``guardkit.tools.flow`` generator: the middleware drives it with the agent's
blocking calls (``invoke``) or its ``async`` twins (``ainvoke``), so the event loop never waits
on the guard. Nothing here knows LangChain's types: decisions in, decisions and refusals out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from guardkit import GuardUnavailable, InvalidState
from guardkit.decisions import Action, DecisionDict, Reason
from guardkit.protocols import AgentGuard
from guardkit.refusals import Refusal, refusal
from guardkit.tools.asking import settle
from guardkit.tools.enforce import checked_request
from guardkit.tools.flow import Flow, Op
from guardkit.tools.outcome import report
from guardkit.tools.turns import LLM_TURN

__all__ = ["Asks", "CostFn", "denied", "refused"]

#: Computes a tool call's charge from its arguments (never trust a cost the model states).
CostFn = Callable[[Mapping[str, Any]], Any]
#: The longest outcome detail sent to the guard (as guarded tools cut theirs).


def denied(action_id: str, reason: Reason | None, fallback: str) -> DecisionDict:
    """A denied decision for ``action_id`` (``reason``, or just ``fallback`` as its code)."""
    return {"decision": "denied", "action_id": action_id, "reason": reason or {"code": fallback}}


def refused(decision: DecisionDict) -> Refusal:
    """The refusal of a decision that is not ``allowed`` (``pending_approval`` included)."""
    found = refusal(denied(decision["action_id"], decision.get("reason"), decision["decision"]))
    assert found is not None  # a denied decision always carries a refusal
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Asks:
    """The guard conversations of one middleware: its costs and how long to wait for a human."""

    costs: Mapping[str, CostFn]
    approval_timeout: float
    poll: float

    # -- model turns ------------------------------------------------------------------------------

    def gate(self) -> Flow[DecisionDict | Refusal]:
        """Request ``llm_turn``: the allowed decision, or the refusal that ends the run.

        An unreachable guard refuses too (nothing may run unguarded); any other guard error
        (an unknown agent, a bad token) is a misconfiguration and propagates.
        """
        try:
            decision: DecisionDict = yield Op("request", (LLM_TURN, {}))
        except GuardUnavailable as exc:
            found = refusal(exc)
            assert found is not None
            return found
        return decision if decision["decision"] == "allowed" else refused(decision)

    def outcome(self, action_id: str, failure: str | None, detail: str = "") -> Flow[None]:
        """Report an allowed action's one outcome: ``success`` (with ``detail``), or ``failure``
        with why."""
        # A monitor holding the operator side may already have recorded this action's outcome
        # (``harmful`` for a call it blocked); and a graph node LangGraph runs again (a resumed
        # tool) reports a second time: the first outcome stands.
        with contextlib.suppress(InvalidState):
            if failure is None:
                yield from report(action_id, "success", detail)
            else:
                yield from report(action_id, "failure", failure)

    # -- tool calls -------------------------------------------------------------------------------

    def cost(self, tool: str, args: Mapping[str, Any]) -> Any:
        cost_fn = self.costs.get(tool)
        return None if cost_fn is None else cost_fn(args)

    def request(self, agent: AgentGuard, tool: str, args: Mapping[str, Any]) -> Flow[DecisionDict]:
        """The policy's declared checks (``guardkit.tools.enforce``), then the request."""
        return (yield from checked_request(agent, tool, args, self.cost(tool, args)))

    def settle(self, agent: AgentGuard, decision: DecisionDict, span: Any) -> Flow[DecisionDict]:
        """Wait in-process for a human when ``decision`` is pending: ``allowed`` or ``denied``."""
        settled = yield from settle(
            agent, decision, approval_timeout=self.approval_timeout, poll=self.poll, span=span
        )
        return settled

    def verdict(self, action_id: str) -> Flow[DecisionDict]:
        """The decision an action ended with, as its record says (``allowed`` once approved)."""
        action: Action = yield Op("action", (action_id,))
        if action["status"] in ("allowed", "completed"):
            return {"decision": "allowed", "action_id": action_id}
        if action["status"] == "pending_approval":
            return {"decision": "pending_approval", "action_id": action_id}
        return denied(action_id, action["reason"], "rejected")

    def verdicts(self, action_ids: Iterable[str]) -> Flow[dict[str, DecisionDict]]:
        """``verdict`` of each action, by action id."""
        found: dict[str, DecisionDict] = {}
        for action_id in action_ids:
            found[action_id] = yield from self.verdict(action_id)
        return found

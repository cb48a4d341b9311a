"""Asking the guard for one call and waiting for a human: the conversation every caller shares.

The loop, the tool pipeline and each framework integration request a call and, when the guard
answers ``pending_approval``, wait for a human; a wait that times out withdraws the action so it
ends ``denied`` in the ledger (or goes ahead if a human approved just in time). Written once, as
flows (``guardkit.tools.flow``), so sync and async callers drive the same steps::

    decision = drive(ask(agent, "pay", {"invoice": "INV-7"}, 1200, approval_timeout=600), agent)
    if decision["decision"] != "allowed":
        return guardkit.refusal(decision).text
"""

from __future__ import annotations

from typing import Any

from guardkit import tracing
from guardkit.decisions import Action, ActionStatusName, DecisionDict, DenyCode, Reason
from guardkit.errors import ApprovalTimeout
from guardkit.protocols import AgentGuard, WithdrawsActions
from guardkit.tools.flow import Flow, Op

__all__ = ["ask", "end_wait", "settle"]


def ask(
    agent: AgentGuard,
    tool: str,
    input: Any,
    cost: Any = None,
    *,
    approval_timeout: float,
    poll: float,
    span: Any = None,
) -> Flow[DecisionDict]:
    """Request a call, then ``settle`` it: ``allowed`` or ``denied``, never pending.

    ``span`` is the call's ``execute_tool`` span (default: the current one); the guard's answers
    are recorded on it.
    """
    span = tracing.current_tool() if span is None else span
    decision: DecisionDict = yield Op("request", (tool, input, cost))
    span.decision(decision, agent_id=agent.agent_id)
    return (
        yield from settle(agent, decision, approval_timeout=approval_timeout, poll=poll, span=span)
    )


def settle(
    agent: AgentGuard,
    decision: DecisionDict,
    *,
    approval_timeout: float,
    poll: float,
    span: Any = None,
) -> Flow[DecisionDict]:
    """The decision once any human involved has decided: a pending one is waited for.

    After ``approval_timeout`` the action is withdrawn (``end_wait``). A rejection carries the
    rejecter's reason, read from the action.
    """
    if decision["decision"] != "pending_approval":
        return decision
    span = tracing.current_tool() if span is None else span
    action_id = decision["action_id"]
    try:
        with span.approval_wait(action_id, approval_timeout) as waiting:
            final: ActionStatusName = yield Op(
                "wait_for_approval", (action_id, approval_timeout, poll)
            )
            waiting.status(final)
    except ApprovalTimeout:
        final, reason = yield from end_wait(agent, action_id, approval_timeout)
        if final != "allowed":
            return {"decision": "denied", "action_id": action_id, "reason": reason}
    if final == "allowed":
        return {"decision": "allowed", "action_id": action_id}
    action: Action = yield Op("action", (action_id,))
    denied: DecisionDict = {
        "decision": "denied",
        "action_id": action_id,
        "reason": action["reason"] or {"code": DenyCode.REJECTED.value},
    }
    span.decision(denied)
    return denied


def end_wait(
    agent: AgentGuard, action_id: str, timeout: float
) -> Flow[tuple[ActionStatusName, Reason]]:
    """After a wait for a human timed out: withdraw the action so it ends denied in the ledger.

    Returns the action's final status and why: ``allowed`` when a human approved it just in
    time (the call goes ahead), else ``denied`` with the reason to show. An agent guard that
    cannot withdraw leaves the action pending; the caller still treats it as timed out.
    """
    timed_out: Reason = {"code": DenyCode.APPROVAL_TIMEOUT.value, "timeout": timeout}
    if not isinstance(agent, WithdrawsActions):
        return "denied", timed_out
    action: Action = yield Op("withdraw", (action_id, timeout))
    if action["status"] in ("allowed", "completed"):
        return "allowed", timed_out
    return "denied", action["reason"] or timed_out

"""The one definition of what each ledger record does to an agent and to an action.

The engine decides and appends records; ``apply`` folds each record into the agent's state
(budget, scars, counts, open actions) and ``apply_action`` into the action's row. The same two
functions replay a ledger at open, fold in records another process appended, and rebuild one
action from its records, so the state a decision reads is always what the chain says. Records a
guard could never have written (an allow over budget, an outcome before an allow, a second
genesis) raise ``LedgerInvalid``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from guardkit._canonical import canonical_json
from guardkit.decisions import REPLAY_CODE, SCAR_CAP, DenyCode, Fault, Reason, Severity
from guardkit.policy import Policy
from guardkit.rules import APPROVAL_CODE, EFFECTS
from guardkit.store.state import (
    ALLOWED,
    COMPLETED,
    CONSUMED,
    DENIED,
    OUTCOMES,
    PENDING,
    REQUESTED,
    SPAWN_TOOL,
    ActionRow,
    AgentState,
    OpenAction,
    status_name,
)

__all__ = [
    "ACTION_KINDS",
    "AGENT_HANDLERS",
    "KINDS",
    "LedgerInvalid",
    "NEXT_STATUS",
    "action_number",
    "apply",
    "apply_action",
    "missing_termination",
    "start",
]

#: Records about one action (they carry its ``action_id``, and the store indexes them by it).
ACTION_KINDS = frozenset(
    {
        "action_requested",
        "approval_required",
        "action_allowed",
        "action_denied",
        "action_rejected",
        "outcome",
        # guardkit: a backend consumed the allowed action (at most once).
        "action_consumed",
    }
)
KINDS = ACTION_KINDS | {"genesis", "policy", "scar", "terminated"}


RULE_DENIED = DenyCode.RULE_DENIED.value
#: Whose fault a failure outcome names when it is not the agent's (the agent's is left out).
_FAULTS = frozenset(f.value for f in Fault) - {Fault.AGENT.value}


class LedgerInvalid(ValueError):
    """A record no guard could have written where it stands."""


def action_number(action_id: Any) -> int:
    """The N of ``act-N``; ``LedgerInvalid`` for anything else."""
    if isinstance(action_id, str) and action_id.startswith("act-") and action_id[4:].isdigit():
        number = int(action_id[4:])
        if number > 0 and action_id[4] != "0":
            return number
    raise LedgerInvalid(f"bad action id {action_id!r}")


def start(agent_id: str, genesis: dict[str, Any], policy: dict[str, Any]) -> AgentState:
    """The state of a ledger after its genesis and policy records."""
    if genesis.get("log_id") != agent_id:
        raise LedgerInvalid(f"genesis names log {genesis.get('log_id')!r}, not {agent_id!r}")
    key = genesis.get("public_key")
    if key is not None and not isinstance(key, str):
        raise LedgerInvalid("genesis public key is not a string")
    return AgentState(agent_id=agent_id, policy=Policy.from_dict(policy["policy"]), public_key=key)


def apply(
    state: AgentState, seq: int, kind: str, payload: Any, epoch: float, number: int | None
) -> None:
    """Fold one record into ``state``: its ``seq``, ``kind``, parsed ``payload``, the instant of
    its timestamp, and (for a record about an action) the action's number."""
    handler = AGENT_HANDLERS.get(kind)
    if handler is None:
        raise LedgerInvalid(f"{kind!r} record at seq {seq}")
    handler(state, seq, payload, epoch, number)


def _open(state: AgentState, number: int, kind: str) -> OpenAction:
    action = state.open.get(number)
    if action is None:
        raise LedgerInvalid(f"{kind} for act-{number}, which is not waiting for a decision")
    return action


def _requested(state: AgentState, seq: int, payload: Any, epoch: float, number: int) -> None:
    if number != state.next_action + 1:
        raise LedgerInvalid(f"act-{number} requested after act-{state.next_action}")
    tool, cost = payload["tool"], payload["cost"]
    if not isinstance(tool, str) or type(cost) is not int or cost < 0:
        raise LedgerInvalid(f"act-{number} has a bad tool or cost")
    child = None
    if tool == SPAWN_TOOL:  # the engine refuses the name in a request: only spawn() writes it
        value = payload["input"]
        child = value.get("child_id") if isinstance(value, dict) else None
    state.next_action = number
    state.open[number] = OpenAction(tool, cost, epoch, seq, child=child)
    state.statuses.append(REQUESTED)


def _rule_named(
    state: AgentState, tool: str, found: Any, effects: tuple[str, ...], number: int
) -> None:
    """A recorded rule index must name a rule of the tool's policy that decides that way."""
    rule = state.policy.rule_for(tool)
    rules = rule.conditions.rules if rule is not None and rule.conditions is not None else ()
    if type(found) is not int or not 0 <= found < len(rules) or rules[found].effect not in effects:
        raise LedgerInvalid(f"act-{number} names rule {found!r}, which its tool's policy has not")


def _approval(state: AgentState, seq: int, payload: Any, epoch: float, number: int) -> None:
    action = _open(state, number, "approval_required")
    if action.pending:
        raise LedgerInvalid(f"act-{number} asked for approval twice")
    reason = payload.get("reason")
    if isinstance(reason, dict) and reason.get("code") == APPROVAL_CODE:
        _rule_named(state, action.tool, reason.get("rule"), ("requires_approval",), number)
    action.pending = True
    state.actions_pending += 1
    state.statuses[number] = PENDING


def _allowed(state: AgentState, seq: int, payload: Any, epoch: float, number: int) -> None:
    action = state.open.pop(number, None)
    if action is None:
        raise LedgerInvalid(f"action_allowed for act-{number}, which is not waiting for a decision")
    if not state.alive:
        raise LedgerInvalid(f"act-{number} allowed for a terminated agent")
    if action.cost > state.policy.budget - state.spent:
        raise LedgerInvalid(f"act-{number} allowed beyond the budget")
    if "rule" in payload:
        _rule_named(state, action.tool, payload["rule"], ("allow",), number)
    if action.pending:  # _decided, spelt out: every allowed request runs this
        state.actions_pending -= 1
        state.late[number] = seq
    elif seq != action.requested_seq + 1:
        raise LedgerInvalid(f"act-{number} decided at seq {seq}, away from its request")
    state.statuses[number] = ALLOWED
    state.spent += action.cost
    state.actions_allowed += 1
    state.tool_counts[action.tool] = state.tool_counts.get(action.tool, 0) + 1
    limit = state.policy.rate_limit
    if limit is not None:
        # Keep the timestamps the sliding window can still need: the newest max_actions.
        recent = state.recent_allowed
        recent.append(epoch)
        if len(recent) > limit.max_actions:
            del recent[: len(recent) - limit.max_actions]
    if isinstance(action.child, str):
        state.children.append(action.child)


def _denied(state: AgentState, seq: int, payload: Any, epoch: float, number: int) -> None:
    action = state.open.pop(number, None)
    if action is None:
        raise LedgerInvalid(f"denial for act-{number}, which is not waiting for a decision")
    _decided(state, seq, number, action, DENIED)
    reason = payload.get("reason")
    if isinstance(reason, dict) and reason.get("code") == RULE_DENIED:
        _rule_named(state, action.tool, reason.get("rule"), EFFECTS, number)
    if not (isinstance(reason, dict) and reason.get("code") == REPLAY_CODE):
        state.actions_denied += 1  # a replayed idempotent result is recorded, not a denial


def _decided(state: AgentState, seq: int, number: int, action: OpenAction, status: int) -> None:
    if action.pending:
        state.actions_pending -= 1
        state.late[number] = seq
    elif seq != action.requested_seq + 1:
        # The engine decides in the transaction that records the request, right after it.
        raise LedgerInvalid(f"act-{number} decided at seq {seq}, away from its request")
    state.statuses[number] = status


def _outcome(state: AgentState, seq: int, payload: Any, epoch: float, number: int) -> None:
    statuses = state.statuses
    if not 0 < number < len(statuses):  # _code, spelt out: every report runs this
        raise LedgerInvalid(f"act-{number} was never requested")
    code = statuses[number]
    status = payload["status"]
    if code & 7 != ALLOWED or status not in OUTCOMES:
        raise LedgerInvalid(f"outcome for act-{number}, which is {status_name(code)}")
    if "fault" in payload and (status != "failure" or payload["fault"] not in _FAULTS):
        raise LedgerInvalid(f"outcome for act-{number} blames {payload['fault']!r} for {status!r}")
    statuses[number] = COMPLETED | (code & CONSUMED) | OUTCOMES.index(status) << 4


def _consumed(state: AgentState, seq: int, payload: Any, epoch: float, number: int) -> None:
    code = _code(state, number)
    if code & 7 not in (ALLOWED, COMPLETED) or code & CONSUMED:
        consumed = " and consumed" if code & CONSUMED else ""
        raise LedgerInvalid(f"act-{number} consumed, but it is {status_name(code)}{consumed}")
    state.statuses[number] = code | CONSUMED


def _code(state: AgentState, number: int) -> int:
    if not 0 < number < len(state.statuses):
        raise LedgerInvalid(f"act-{number} was never requested")
    return state.statuses[number]


def _scar(state: AgentState, seq: int, payload: Any, epoch: float, number: None) -> None:
    severity = Severity(payload["severity"])
    reason, action_id = payload["reason"], payload["action_id"]
    if not isinstance(reason, str) or not (action_id is None or isinstance(action_id, str)):
        raise LedgerInvalid(f"scar at seq {seq} has a bad reason or action id")
    state.scars.append(
        {"seq": seq, "severity": severity.value, "reason": reason, "action_id": action_id}
    )
    state.scar_score = min(SCAR_CAP, state.scar_score + severity.weight)


def _terminated(state: AgentState, seq: int, payload: Any, epoch: float, number: None) -> None:
    reason = payload["reason"]
    if not isinstance(reason, str):
        raise LedgerInvalid(f"termination at seq {seq} has no reason")
    if state.alive:
        state.alive = False
        state.termination_reason = reason


#: What each kind of record does to the agent's state (``apply`` dispatches here).
AGENT_HANDLERS: dict[str, Callable[[AgentState, int, Any, float, Any], None]] = {
    "action_requested": _requested,
    "approval_required": _approval,
    "action_allowed": _allowed,
    "action_denied": _denied,
    "action_rejected": _denied,
    "outcome": _outcome,
    "action_consumed": _consumed,
    "scar": _scar,
    "terminated": _terminated,
}

# -- one action --------------------------------------------------------------------------------

#: (status before, record kind) -> status after; anything else is a record out of place.
NEXT_STATUS = {
    ("requested", "approval_required"): "pending_approval",
    ("requested", "action_allowed"): "allowed",
    ("pending_approval", "action_allowed"): "allowed",
    ("requested", "action_denied"): "denied",
    ("pending_approval", "action_denied"): "denied",
    ("pending_approval", "action_rejected"): "denied",
    ("allowed", "outcome"): "completed",
    ("allowed", "action_consumed"): "allowed",
    ("completed", "action_consumed"): "completed",
}


def apply_action(
    row: ActionRow | None,
    agent_id: str,
    number: int,
    seq: int,
    kind: str,
    payload: Any,
    epoch: float,
    input_json: str | None = None,
) -> ActionRow:
    """Fold one record about action ``number`` into its row (None before it was requested)."""
    if kind == "action_requested":
        if row is not None:
            raise LedgerInvalid(f"{row.action_id} requested twice")
        return ActionRow(
            agent_id=agent_id,
            number=number,
            tool=payload["tool"],
            input_json=canonical_json(payload["input"]) if input_json is None else input_json,
            cost=payload["cost"],
            status="requested",
            requested_at=epoch,
            requested_seq=seq,
        )
    if row is None:
        raise LedgerInvalid(f"{kind} at seq {seq} before its action was requested")
    after = NEXT_STATUS.get((row.status, kind))
    if after is None or (kind == "action_consumed" and row.consumed):
        raise LedgerInvalid(f"{kind} for {row.action_id}, which is {row.status}")
    row.status = after
    if kind == "action_allowed":
        row.allowed_at, row.approved_by = epoch, payload["approved_by"]
    elif kind == "approval_required":
        found = payload.get("reason")
        row.approval_reason = cast(Reason, found) if isinstance(found, dict) else None
    elif kind == "action_denied":
        row.reason = payload["reason"]
    elif kind == "action_rejected":
        row.reason = {"code": "rejected", "by": payload["by"], "reason": payload["reason"]}
    elif kind == "outcome":
        row.outcome = payload["status"]
    elif kind == "action_consumed":
        row.consumed = True
    return row


def missing_termination(state: AgentState) -> str | None:
    """Why the agent should be terminated though no ``terminated`` record says so (LINEAGE §8)."""
    if not state.alive:
        return None
    if state.scars and state.scar_score >= state.policy.scar_limit:
        return (
            f"scar limit reached ({state.scar_score} >= {state.policy.scar_limit}); "
            "termination record missing from the log"
        )
    if state.actions_allowed and state.spent >= state.policy.budget:
        return "budget exhausted; termination record missing from the log"
    return None

"""The outbox: the events a ledger record announces, derived from the record as it is appended.

A record that asks a human for something (``approval_required``), that settles what a human was
asked (an allow, rejection or denial of a pending action) or that ends an agent (``terminated``)
also yields one event, written by the store in the same transaction as the record: the event
exists exactly when its record does. Delivery (``guardkit.notify``) reads the events; nothing
that decides anything ever does. The outbox is outside the hash chain: an event names the record
it came from (``ledger.seq`` and ``ledger.hash``), and a receiver that doubts it checks that
record, never the event.

Event ids are derived from the record's hash (``evt_`` and its first 32 hex digits), so an id
is stable across deliveries and retries: a receiver drops a repeat by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from guardkit._canonical import canonical_json
from guardkit.decisions import DenyCode, Reason
from guardkit.store.chain import Record

__all__ = [
    "EVENT_KINDS",
    "EVENT_TYPES",
    "Event",
    "EventAction",
    "EventType",
    "OutboxEvent",
    "build_event",
]

EventType = Literal[
    "approval.pending",
    "approval.approved",
    "approval.rejected",
    "approval.expired",
    "agent.terminated",
]
EVENT_TYPES: tuple[EventType, ...] = (
    "approval.pending",
    "approval.approved",
    "approval.rejected",
    "approval.expired",
    "agent.terminated",
)
#: Record kinds that may yield an event (the rest never do, and cost one set lookup).
EVENT_KINDS = frozenset(
    {"approval_required", "action_allowed", "action_denied", "action_rejected", "terminated"}
)
_EXPIRY = frozenset({DenyCode.APPROVAL_EXPIRED.value, DenyCode.APPROVAL_TIMEOUT.value})


class EventAction(TypedDict):
    """The action an approval event is about, as its request record says."""

    tool: str
    input: Any
    cost: int
    #: SHA-256 of the canonical input: what an approval binds to.
    input_sha256: str
    #: Why it waits for a human: the check's or rule's reason, or the tool's policy.
    waits_because: Reason


class EventLedger(TypedDict):
    seq: int
    hash: str


class Event(TypedDict):
    """The JSON body every sink delivers (docs/notifications.md)."""

    id: str
    type: EventType
    #: The record's timestamp (ISO 8601, UTC).
    timestamp: str
    agent_id: str
    action_id: str | None
    action: EventAction | None
    #: What settled it: ``approved_by`` and ``note``; ``by`` and ``reason`` (a rejection or a
    #: termination); ``reason`` (a denial code and its fields: expiry, or a check that failed
    #: when the approval was given). Empty for ``approval.pending``.
    decision: dict[str, Any]
    ledger: EventLedger


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """An event ready to be written: its id, type, agent and canonical JSON body."""

    id: str
    type: EventType
    agent_id: str
    body: str


def _action(row: dict[str, Any], tool_reason: Reason | None) -> EventAction:
    waits: Reason = tool_reason or {
        "code": "requires_approval",
        "reason": f"the policy requires approval for {row['tool']}",
    }
    return {
        "tool": row["tool"],
        "input": row["input"],
        "cost": row["cost"],
        "input_sha256": row["input_sha256"],
        "waits_because": waits,
    }


def _settled(kind: str, payload: dict[str, Any]) -> tuple[EventType, dict[str, Any]]:
    if kind == "action_allowed":
        decision = {"approved_by": payload.get("approved_by"), "note": payload.get("note")}
        return "approval.approved", decision
    if kind == "action_rejected":
        return "approval.rejected", {"by": payload.get("by"), "reason": payload.get("reason")}
    reason = payload.get("reason")
    code = reason.get("code") if isinstance(reason, dict) else None
    # A denial of a pending action is its expiry (the TTL, or the agent stopped waiting), or
    # the guard's own refusal when a human approved it (a check failed again: budget spent).
    if code in _EXPIRY:
        return "approval.expired", {"reason": reason}
    return "approval.rejected", {"by": "guard", "reason": reason}


def build_event(
    record: Record,
    payload: dict[str, Any],
    row: dict[str, Any] | None,
) -> OutboxEvent:
    """The event ``record`` announces; ``row`` is its action (``ActionRow.to_dict()``) as it
    stood before the record, None for a termination."""
    action_id: str | None = None
    action: EventAction | None = None
    decision: dict[str, Any]
    if record.kind == "terminated":
        kind: EventType = "agent.terminated"
        decision = {"by": payload.get("by"), "reason": payload.get("reason")}
    else:
        assert row is not None
        action_id = row["action_id"]
        if record.kind == "approval_required":
            kind, decision = "approval.pending", {}
            action = _action(row, payload.get("reason"))
        else:
            kind, decision = _settled(record.kind, payload)
            action = _action(row, row.get("approval_reason"))
    event: Event = {
        "id": f"evt_{record.hash[:32]}",
        "type": kind,
        "timestamp": record.timestamp,
        "agent_id": record.actor,
        "action_id": action_id,
        "action": action,
        "decision": decision,
        "ledger": {"seq": record.seq, "hash": record.hash},
    }
    return OutboxEvent(event["id"], kind, record.actor, canonical_json(event))

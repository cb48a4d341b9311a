"""Checking an event against the ledger before it is delivered.

The outbox is outside the hash chain, so a person with write access to the database could edit
an event to show an approver another input than the one waiting. The worker delivers an event
only if the record it names is in the ledger with that hash and the action it shows is the
action as its verified records say (tool, input, cost, input hash).
"""

from __future__ import annotations

from guardkit.errors import GuardError
from guardkit.store.base import Transaction
from guardkit.store.outbox import Event

__all__ = ["mismatch"]


def mismatch(tx: Transaction, event: Event) -> str | None:
    """Why ``event`` is not what the ledger says (None: it is), read in ``tx``."""
    ledger = event["ledger"]
    if event["id"] != f"evt_{ledger['hash'][:32]}":
        return "its id is not derived from the record it names"
    try:
        found = tx.records(event["agent_id"], after=ledger["seq"] - 1, limit=1)
        if not found or found[0].seq != ledger["seq"] or found[0].hash != ledger["hash"]:
            return f"record {ledger['seq']} of {event['agent_id']!r} is not the one it names"
        if event["action_id"] is None or event["action"] is None:
            return None
        number = int(event["action_id"].removeprefix("act-"))
        row = tx.get_action(event["agent_id"], number)
    except (GuardError, ValueError) as exc:
        return f"its ledger can't be read: {exc}"
    shown = event["action"]
    if row is None or (row.tool, row.cost, row.input_sha256) != (
        shown["tool"],
        shown["cost"],
        shown["input_sha256"],
    ):
        return f"{event['action_id']} is not the action it shows"
    if row.to_dict()["input"] != shown["input"]:
        return f"the input of {event['action_id']} is not the one it shows"
    return None

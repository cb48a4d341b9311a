"""Reading one action back from its records, each checked where it is read.

An action's status is in its agent's verified state; what it was (tool, input, cost, who
approved it, why it was denied) is in its request record and the record that decided it. They
are found without an index (the request by a binary search over the records' stored request
counts; the decision right after the request, or where the state says a human decided it) and
each must verify on its own and agree with the status, or the agent is quarantined.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from guardkit.store.chain import Record, check_record, parse_timestamp
from guardkit.store.fold import LedgerInvalid, apply_action
from guardkit.store.replay import record_action
from guardkit.store.state import (
    COMPLETED,
    CONSUMED,
    OUTCOMES,
    REQUESTED,
    ActionRow,
    AgentState,
    status_name,
)

__all__ = ["read_action"]


class Transaction(Protocol):
    """What reading an action needs of a store transaction (``guardkit.store.base``)."""

    #: Records this transaction appended and has not written yet: ``(agent, record, count)``.
    _records: list[tuple[str, Record, int]]

    def _read_rows(
        self, agent_id: str, after: int | None, limit: int | None
    ) -> list[tuple[Record, int]]: ...

    def _requested_at(self, agent_id: str, seq: int) -> int | None: ...


def read_action(tx: Transaction, state: AgentState, number: int) -> ActionRow:
    """Read an action's request and decision records back, each checked on its own."""
    code = state.statuses[number]
    waiting = state.open.get(number)
    start = waiting.requested_seq if waiting else _find_request(tx, state, number)
    seqs = [start]
    if code & 7 != REQUESTED:
        seqs.append(start + 1)  # the decision, or the call for approval
    if number in state.late:
        seqs.append(state.late[number])
    row: ActionRow | None = None
    for seq in seqs:
        record, payload = _checked_record(tx, state, seq, number)
        epoch = parse_timestamp(record.timestamp)
        row = apply_action(row, state.agent_id, number, seq, record.kind, payload, epoch)
    assert row is not None
    # The outcome is not read back: a completed action's records end at its allow.
    folded = "allowed" if code & 7 == COMPLETED else status_name(code)
    if row.status != folded:
        raise LedgerInvalid(
            f"act-{number} of {state.agent_id!r} is {status_name(code)}, but its records say "
            f"{row.status}"
        )
    if code & 7 == COMPLETED:
        row.status, row.outcome = "completed", OUTCOMES[code >> 4 & 3]
    row.consumed = bool(code & CONSUMED)
    return row


def _checked_record(
    tx: Transaction, state: AgentState, seq: int, number: int
) -> tuple[Record, Any]:
    """Record ``seq``, checked on its own and with its links: its ``prev_hash`` is its
    predecessor's hash, and its hash is its successor's ``prev_hash`` (or, for the newest
    record, the head this guard verified), so one record re-hashed in place is caught."""
    who = state.agent_id
    unwritten = {record.seq: record for agent_id, record, _ in tx._records if agent_id == who}
    record = unwritten.get(seq)
    problem = ""
    if record is None:  # written before this transaction: read it with its neighbours
        near = {r.seq: r for r, _ in tx._read_rows(who, seq - 2, 3)} | unwritten
        record = near.get(seq)
        if record is None:
            problem = "it is missing"
        else:
            problem = _broken_link(record, near.get(seq - 1), near.get(seq + 1), state) or ""
    if record is not None and not problem:
        problem = check_record(record, state.public_key) or ""
        if not problem and record.actor != who:
            problem = "it is not a record of this ledger"
        if not problem:
            payload = json.loads(record.payload_json)
            if record_action(record.kind, payload) == number:
                return record, payload
            problem = f"it is not about act-{number}"
    raise LedgerInvalid(f"record {seq} of {who!r} (act-{number}) does not verify: {problem}")


def _broken_link(
    record: Record, before: Record | None, after: Record | None, state: AgentState
) -> str | None:
    if before is None or before.hash != record.prev_hash:
        return "its prev_hash is not the hash of the record before it"
    if after is not None:
        if after.prev_hash != record.hash:
            return "the record after it does not follow it (prev_hash)"
    elif record.seq != state.head_seq:
        return "the record after it is missing"
    elif record.hash != state.head_hash:
        return "it is not the head this guard verified"
    return None


def _find_request(tx: Transaction, state: AgentState, number: int) -> int:
    """The seq of act-N's request: the first record whose stored count reaches N.

    The count is only a search aid: the record found is checked to be that request.
    """
    low, high = 2, state.head_seq
    unwritten = {r.seq: n for a, r, n in tx._records if a == state.agent_id}
    while low < high:
        middle = (low + high) // 2
        count = unwritten.get(middle)
        if count is None:
            count = tx._requested_at(state.agent_id, middle)
        if count is None:
            raise LedgerInvalid(f"record {middle} of {state.agent_id!r} is missing")
        if count >= number:
            high = middle
        else:
            low = middle + 1
    return low

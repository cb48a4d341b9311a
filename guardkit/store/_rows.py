"""Column values of agent and action rows, shared by the SQL backends (same columns, same order)."""

from __future__ import annotations

import json
from typing import Any

from guardkit.store.base import ActionRow, AgentState

__all__ = ["action_from_columns", "action_values", "agent_values", "compact", "reason_json"]

#: Compact JSON for the list and dict columns.
compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_sorted = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode


def agent_values(state: AgentState) -> tuple[Any, ...]:
    """The mutable columns of an agent row, in the order both schemas declare them."""
    return (
        state.spent,
        state.scar_score,
        state.alive,
        state.termination_reason,
        state.next_action,
        state.head_seq,
        state.head_hash,
        state.actions_allowed,
        state.actions_denied,
        state.actions_pending,
        compact(state.tool_counts),
        compact(state.scars),
        compact(state.recent_allowed),
    )


def reason_json(row: ActionRow) -> str | None:
    return None if row.reason is None else _sorted(row.reason)


def action_values(row: ActionRow) -> tuple[Any, ...]:
    """Every column of an action row, in schema order."""
    return (
        row.agent_id,
        row.number,
        row.tool,
        row.input_json,
        row.input_sha256,
        row.cost,
        row.status,
        row.outcome,
        reason_json(row),
        row.requested_at,
        row.requested_seq,
        row.allowed_at,
        row.approved_by,
    )


def action_from_columns(r: tuple[Any, ...] | Any) -> ActionRow:
    """An action row read back in schema order."""
    return ActionRow(
        agent_id=r[0],
        number=r[1],
        tool=r[2],
        input_json=r[3],
        input_sha256=r[4],
        cost=r[5],
        status=r[6],
        outcome=r[7],
        reason=None if r[8] is None else json.loads(r[8]),
        requested_at=r[9],
        requested_seq=r[10],
        allowed_at=r[11],
        approved_by=r[12],
        stored=True,
    )

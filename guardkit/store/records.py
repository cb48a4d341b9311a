"""Ledger record kinds, replay of a ledger into state, and Lineage-format JSON Lines export."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from guardkit.decisions import REPLAY_CODE, SCAR_CAP, Severity
from guardkit.store.chain import Record

__all__ = ["KINDS", "Replay", "replay", "write_jsonl"]

KINDS = frozenset(
    {
        "genesis",
        "policy",
        "action_requested",
        "approval_required",
        "action_allowed",
        "action_denied",
        "action_rejected",
        "outcome",
        "scar",
        "terminated",
    }
)


@dataclass(slots=True, kw_only=True)
class Replay:
    """State derived from a ledger alone, to check the materialised state against."""

    budget: int = 0
    scar_limit: int = 0
    spent: int = 0
    scar_score: int = 0
    scars: int = 0
    alive: bool = True
    termination_reason: str | None = None
    next_action: int = 0
    actions_allowed: int = 0
    actions_denied: int = 0
    pending: set[str] = field(default_factory=set)
    tool_counts: dict[str, int] = field(default_factory=dict)
    head_seq: int = -1
    head_hash: str = ""

    def missing_termination(self) -> str | None:
        """Why the agent should be terminated though no ``terminated`` record says so."""
        if not self.alive:
            return None
        if self.scars and self.scar_score >= self.scar_limit:
            return (
                f"scar limit reached ({self.scar_score} >= {self.scar_limit}); "
                "termination record missing from the log"
            )
        if self.actions_allowed and self.spent >= self.budget:
            return "budget exhausted; termination record missing from the log"
        return None


def replay(records: Iterable[Record]) -> Replay:
    """Fold records into state; raises ``ValueError`` on an unknown kind or a broken sequence."""
    state = Replay()
    requested: dict[str, tuple[str, int]] = {}
    for record in records:
        if record.kind not in KINDS:
            raise ValueError(f"unknown record kind {record.kind!r} at seq {record.seq}")
        _apply(state, requested, record.kind, json.loads(record.payload_json))
        state.head_seq = record.seq
        state.head_hash = record.hash
    return state


def _apply(
    state: Replay, requested: dict[str, tuple[str, int]], kind: str, payload: dict[str, Any]
) -> None:
    if kind == "policy":
        state.budget = payload["policy"]["budget"]
        state.scar_limit = payload["policy"]["scar_limit"]
    elif kind == "action_requested":
        state.next_action = max(state.next_action, int(payload["action_id"].split("-", 1)[1]))
        requested[payload["action_id"]] = (payload["tool"], payload["cost"])
    elif kind == "approval_required":
        state.pending.add(payload["action_id"])
    elif kind == "action_allowed":
        tool, cost = requested[payload["action_id"]]
        state.pending.discard(payload["action_id"])
        state.spent += cost
        state.actions_allowed += 1
        state.tool_counts[tool] = state.tool_counts.get(tool, 0) + 1
    elif kind in ("action_denied", "action_rejected"):
        state.pending.discard(payload["action_id"])
        if kind == "action_rejected" or payload["reason"].get("code") != REPLAY_CODE:
            state.actions_denied += 1
    elif kind == "scar":
        state.scars += 1
        state.scar_score = min(SCAR_CAP, state.scar_score + Severity(payload["severity"]).weight)
    elif kind == "terminated" and state.alive:
        state.alive = False
        state.termination_reason = payload["reason"]


def write_jsonl(records: Iterable[Record], out: IO[str]) -> int:
    """Write records as Lineage-format JSON Lines (one canonical object a line)."""
    count = 0
    for record in records:
        out.write(
            json.dumps(record.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        )
        out.write("\n")
        count += 1
    return count

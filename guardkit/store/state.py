"""What the guard knows about an agent and an action, derived from ledger records alone.

Nothing here is read from a table: ``AgentState`` is the fold of an agent's whole ledger and
``ActionRow`` the fold of one action's records (``guardkit.store.fold``). Both hold only what
their records say, so a store can always rebuild them and check them against the chain.

Every action's status lives in the agent's state as one byte (``statuses[n]`` for ``act-n``): a
decision that depends on it (approve, reject, report, consume) reads no table at all, and a
million actions cost a megabyte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import cast

from guardkit._canonical import sha256_hex
from guardkit.decisions import Action, ActionStatusName, OutcomeName, Reason, Scar
from guardkit.policy import Policy
from guardkit.store.chain import GENESIS_PREV

__all__ = [
    "ALLOWED",
    "COMPLETED",
    "CONSUMED",
    "DENIED",
    "OUTCOMES",
    "PENDING",
    "REQUESTED",
    "SPAWN_TOOL",
    "ActionRow",
    "AgentState",
    "OpenAction",
    "status_name",
]

#: The tool name under which a parent's ledger records the budget carved out for a sub-agent.
SPAWN_TOOL = "guardkit.spawn"

# An action's status byte: the status in the low three bits, a consumption in bit 3, and for a
# completed action its outcome in bits 4-5.
REQUESTED, PENDING, ALLOWED, DENIED, COMPLETED = 1, 2, 3, 4, 5
CONSUMED = 8
OUTCOMES = ("success", "failure", "harmful")
_NAMES = {
    REQUESTED: "requested",
    PENDING: "pending_approval",
    ALLOWED: "allowed",
    DENIED: "denied",
    COMPLETED: "completed",
}


def status_name(code: int) -> str:
    """The status word of a status byte."""
    return _NAMES[code & 7]


@dataclass(slots=True)
class OpenAction:
    """An action requested and not decided yet (in a committed ledger: one pending approval)."""

    tool: str
    cost: int
    #: When it was requested (its record's timestamp), and that record's seq.
    requested_at: float
    requested_seq: int
    pending: bool = False
    #: For a spawn: the child it creates.
    child: str | None = None


@dataclass(slots=True, kw_only=True)
class AgentState:
    """The state of one agent after its newest record."""

    agent_id: str
    policy: Policy
    #: From the agents table, checked against the parent's ledger (its spawn record).
    parent_id: str | None = None
    public_key: str | None = None
    spent: int = 0
    scar_score: int = 0
    alive: bool = True
    termination_reason: str | None = None
    #: Number of the last action id handed out (``act-N``).
    next_action: int = 0
    head_seq: int = -1
    head_hash: str = GENESIS_PREV
    actions_allowed: int = 0
    actions_denied: int = 0
    actions_pending: int = 0
    tool_counts: dict[str, int] = field(default_factory=dict)
    #: When the newest allowed actions were allowed (at most the rate limit's max_actions).
    recent_allowed: list[float] = field(default_factory=list)
    #: ``{seq, severity, reason, action_id}`` for every scar, oldest first.
    scars: list[Scar] = field(default_factory=list)
    #: Actions requested and not decided yet, by number.
    open: dict[int, OpenAction] = field(default_factory=dict)
    #: Sub-agents spawned from this agent, in spawn order.
    children: list[str] = field(default_factory=list)
    #: The status byte of every action, by number (index 0 unused).
    statuses: bytearray = field(default_factory=lambda: bytearray(1))
    #: Seq of the decision record of each action that waited for a human (any other action is
    #: decided by the record right after its request).
    late: dict[int, int] = field(default_factory=dict)
    #: Changed by the transaction that holds it (not committed yet).
    dirty: bool = False

    @property
    def remaining(self) -> int:
        return self.policy.budget - self.spent

    def copy(self) -> AgentState:
        """An independent copy (``dataclasses.replace`` costs ten times as much)."""
        return AgentState(
            agent_id=self.agent_id,
            policy=self.policy,
            parent_id=self.parent_id,
            public_key=self.public_key,
            spent=self.spent,
            scar_score=self.scar_score,
            alive=self.alive,
            termination_reason=self.termination_reason,
            next_action=self.next_action,
            head_seq=self.head_seq,
            head_hash=self.head_hash,
            actions_allowed=self.actions_allowed,
            actions_denied=self.actions_denied,
            actions_pending=self.actions_pending,
            tool_counts=dict(self.tool_counts),
            recent_allowed=list(self.recent_allowed),
            scars=list(self.scars),
            open={n: OpenAction(*_fields(a)) for n, a in self.open.items()},
            children=list(self.children),
            statuses=bytearray(self.statuses),
            late=dict(self.late),
            dirty=self.dirty,
        )


def _fields(action: OpenAction) -> tuple[str, int, float, int, bool, str | None]:
    return (
        action.tool,
        action.cost,
        action.requested_at,
        action.requested_seq,
        action.pending,
        action.child,
    )


@dataclass(slots=True, kw_only=True)
class ActionRow:
    """One action, as its records say."""

    agent_id: str
    number: int
    tool: str
    input_json: str
    cost: int
    status: str
    requested_at: float
    requested_seq: int
    outcome: str | None = None
    reason: Reason | None = None
    allowed_at: float | None = None
    approved_by: str | None = None
    consumed: bool = False
    #: Why a local check sent this one call to a human (``approval_required``'s reason).
    approval_reason: Reason | None = None
    _sha: str | None = None

    @property
    def action_id(self) -> str:
        return f"act-{self.number}"

    @property
    def input_sha256(self) -> str:
        """SHA-256 of the canonical input: what an approval binds to (computed on first use)."""
        if self._sha is None:
            self._sha = sha256_hex(self.input_json)
        return self._sha

    def copy(self) -> ActionRow:
        return ActionRow(
            agent_id=self.agent_id,
            number=self.number,
            tool=self.tool,
            input_json=self.input_json,
            cost=self.cost,
            status=self.status,
            requested_at=self.requested_at,
            requested_seq=self.requested_seq,
            outcome=self.outcome,
            reason=self.reason,
            allowed_at=self.allowed_at,
            approved_by=self.approved_by,
            consumed=self.consumed,
            approval_reason=self.approval_reason,
            _sha=self._sha,
        )

    def to_dict(self) -> Action:
        """Lineage's action shape, plus guardkit's ``input_sha256``, ``reason``, ``approved_by``
        (and ``approval_reason`` when a check sent the call to a human)."""
        action: Action = {
            "action_id": self.action_id,
            "tool": self.tool,
            "input": json.loads(self.input_json),
            "cost": self.cost,
            "status": cast(ActionStatusName, self.status),
            "outcome": cast(OutcomeName | None, self.outcome),
            "input_sha256": self.input_sha256,
            "reason": self.reason,
            "approved_by": self.approved_by,
        }
        if self.approval_reason is not None:
            action["approval_reason"] = self.approval_reason
        return action

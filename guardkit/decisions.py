"""Decisions, reasons, scar severities and action states: the words of the Lineage guard."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from guardkit.errors import describe_reason

__all__ = [
    "ActionStatus",
    "Decision",
    "DenyCode",
    "Outcome",
    "SCAR_CAP",
    "Severity",
    "scar_text",
]


class Severity(StrEnum):
    """Scar severities; weights are fixed in code, as in Lineage."""

    MINOR = "minor"
    MODERATE = "moderate"
    SEVERE = "severe"
    FATAL = "fatal"

    @property
    def weight(self) -> int:
        return _WEIGHTS[self]


#: The saturation point of a scar score; a fatal scar weighs this much, so it always terminates.
SCAR_CAP = 2**32 - 1

_WEIGHTS = {
    Severity.MINOR: 1,
    Severity.MODERATE: 3,
    Severity.SEVERE: 10,
    Severity.FATAL: SCAR_CAP,
}


class DenyCode(StrEnum):
    """Machine-readable denial codes: Lineage's first, then guardkit's additions."""

    TERMINATED = "terminated"
    TOOL_NOT_ALLOWED = "tool_not_allowed"
    TOOL_CALL_LIMIT = "tool_call_limit"
    RATE_LIMITED = "rate_limited"
    INSUFFICIENT_BUDGET = "insufficient_budget"
    REJECTED = "rejected"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_TIMEOUT = "approval_timeout"
    PATH_DENIED = "path_denied"
    EGRESS_DENIED = "egress_denied"
    UNTRUSTED_PROVENANCE = "untrusted_provenance"


class ActionStatus(StrEnum):
    """Where an action stands; ``completed`` once its one outcome is reported."""

    REQUESTED = "requested"
    PENDING_APPROVAL = "pending_approval"
    ALLOWED = "allowed"
    DENIED = "denied"
    COMPLETED = "completed"


class Outcome(StrEnum):
    """What happened when an allowed action ran; ``harmful`` is for operators only."""

    SUCCESS = "success"
    FAILURE = "failure"
    HARMFUL = "harmful"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """The guard's answer to a request; a denial is a value, never an exception."""

    #: ``allowed``, ``denied`` or ``pending_approval``.
    decision: str
    #: The ``act-N`` id the request was recorded under.
    action_id: str
    #: The charge, for an allowed action.
    cost: int | None = None
    #: Budget left after the charge, for an allowed action.
    remaining: int | None = None
    #: Why it was denied: ``{"code": ..., <code's fields>}``.
    reason: dict[str, Any] | None = field(default=None)

    @property
    def allowed(self) -> bool:
        return self.decision == "allowed"

    def to_dict(self) -> dict[str, Any]:
        """The Lineage wire shape of this decision."""
        if self.decision == "allowed":
            return {
                "decision": "allowed",
                "action_id": self.action_id,
                "cost": self.cost,
                "remaining": self.remaining,
            }
        if self.decision == "denied":
            return {"decision": "denied", "action_id": self.action_id, "reason": self.reason}
        return {"decision": self.decision, "action_id": self.action_id}


def scar_text(reason: dict[str, Any]) -> str:
    """The scar reason Lineage writes for a denial, e.g. ``tool 'rm' is not allowed``."""
    return describe_reason(reason)

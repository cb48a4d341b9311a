"""The request bodies every route accepts: the single source for validation and the OpenAPI doc."""

from __future__ import annotations

from guardkit.server.wire import Field

__all__ = ["BODIES"]

_STR = Field(("string",), required=True)
_OPT_STR = Field(("string", "null"))
_COST = Field(("number", "null"))

BODIES: dict[str, dict[str, Field]] = {
    "CreateAgent": {"agent_id": _STR, "policy": Field(("object",), required=True)},
    "Spawn": {
        "child_id": _STR,
        "policy": Field(("object",), required=True),
        "budget": Field(("integer",), required=True),
    },
    "Request": {
        "tool": _STR,
        "input": Field(("any",)),
        "cost": _COST,
        # guardkit: send this one call to a human, for this reason (a local check's)
        "approval_reason": Field(("object", "null")),
    },
    # guardkit: fault = agent (default, a failure scars) | upstream | caller (no scar)
    "Outcome": {"status": _STR, "detail": _OPT_STR, "fault": _OPT_STR},
    "Approve": {"approver": _STR, "note": _OPT_STR},
    "Reject": {"approver": _STR, "reason": _STR, "scar": _OPT_STR},
    "Scar": {"severity": _STR, "reason": _STR, "action_id": _OPT_STR},
    "Terminate": {"reason": _STR, "by": _STR},
    "Denial": {
        "tool": _STR,
        "input": Field(("any",)),
        "reason": Field(("object",), required=True),
        "severity": _OPT_STR,
    },
    "Withdraw": {"timeout": Field(("number",), required=True)},
    # guardkit: a signed approval link's token decides the action it names (docs/notifications.md)
    "Link": {"link": _STR},
    "LinkApprove": {"link": _STR, "name": _OPT_STR, "note": _OPT_STR},
    "LinkReject": {"link": _STR, "name": _OPT_STR, "reason": _OPT_STR},
    "Consume": {"tool": _STR, "input": Field(("any",)), "cost": _COST, "by": _OPT_STR},
}

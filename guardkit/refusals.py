"""The one place a refusal becomes words: what a model reads when the guard did not let a call run.

Every integration (the loop, LangChain, pydantic-ai, the Agents SDK, MCP) hands a denial, a
rejection, a termination, an approval timeout or an unreachable guard to ``refusal()`` and gives
the model ``.text``; frameworks that carry structured errors take ``.to_dict()``::

    try:
        result = pay_invoice(**args)
    except guardkit.GuardError as exc:
        found = guardkit.refusal(exc)
        if found is None:
            raise
        return found.text      # "Denied by the policy guard: ... Do not retry; ..."
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, cast

from guardkit.decisions import DenyCode, Reason, denial_text
from guardkit.errors import (
    ActionDenied,
    ApprovalTimeout,
    GuardError,
    GuardFailed,
    GuardUnavailable,
    StoreError,
)

__all__ = ["GUARD_UNREACHABLE", "Refusal", "RefusalDict", "refusal", "refusal_or_stop"]

#: What the model is told when the guard can't be reached: nothing ran.
GUARD_UNREACHABLE = (
    "The policy guard could not be reached, so nothing was done. Do not retry; tell a human."
)
#: The code of an unreachable guard (not a deny code: the guard never answered).
UNREACHABLE_CODE = "guard_unreachable"


class RefusalDict(TypedDict):
    """A refusal as structured data: what frameworks put in an error result."""

    refused: Literal[True]
    code: str
    message: str
    action_id: str | None
    terminated: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """Why a tool call (or a model turn) did not run, and what to tell the model."""

    #: The sentence for the model: what happened, that nothing was done, not to retry.
    text: str
    #: The deny code (``tool_not_allowed``, ``rejected``...), or ``guard_unreachable``.
    code: str
    reason: Reason
    #: The action the refusal was recorded under, when there is one.
    action_id: str | None = None
    #: The agent is terminated: nothing it asks will run again, so stop the run.
    terminated: bool = False

    def to_dict(self) -> RefusalDict:
        return {
            "refused": True,
            "code": self.code,
            "message": self.text,
            "action_id": self.action_id,
            "terminated": self.terminated,
        }


def refusal(source: BaseException | Mapping[str, Any] | None) -> Refusal | None:
    """The refusal carried by ``source``, or None when it carries none.

    ``source`` is a guard error a guarded call raised (``ToolDenied``, ``ActionDenied``,
    ``ApprovalTimeout``, ``GuardUnavailable``), a decision dict (``{"decision": "denied", ...}``)
    or a bare reason (``{"code": ...}``). An allowed or pending decision, and any other
    exception, carries none.

    >>> refusal({"decision": "denied", "action_id": "act-3",
    ...          "reason": {"code": "tool_not_allowed", "tool": "rm"}}).text
    "Denied by the policy guard: tool 'rm' is not allowed. Nothing was done. Do not retry; ..."
    """
    if isinstance(source, ApprovalTimeout):
        reason: Reason = {"code": DenyCode.APPROVAL_TIMEOUT.value, "timeout": source.timeout}
        return _from_reason(reason, source.action_id)
    if isinstance(source, ActionDenied):
        return _from_reason(source.reason, source.action_id)
    if isinstance(source, GuardUnavailable):
        return Refusal(
            text=GUARD_UNREACHABLE,
            code=UNREACHABLE_CODE,
            reason={"code": UNREACHABLE_CODE, "message": source.message},
        )
    if isinstance(source, Mapping):
        if "decision" in source:
            if source["decision"] != "denied":
                return None
            found = source.get("reason")
            action_id = source.get("action_id")
            return _from_reason(
                _as_reason(found), action_id if isinstance(action_id, str) else None
            )
        if isinstance(source.get("code"), str):
            return _from_reason(_as_reason(source), None)
    return None


def refusal_or_stop(exc: GuardError, site: str) -> Refusal | None:
    """What a guard error at an integration's call ``site`` means for the model: the refusal it
    reads (denied, timed out, guard unreachable); ``GuardFailed`` raised when the guard cannot
    record (its store failed), so the agent stops and no model is handed the store's error;
    else None (input the guard refuses: the caller words it or raises it on)."""
    if isinstance(exc, StoreError) and not isinstance(exc, GuardUnavailable):
        raise GuardFailed.at(site, exc) from exc
    return refusal(exc)


def _as_reason(found: Any) -> Reason:
    if isinstance(found, Mapping) and isinstance(found.get("code"), str):
        return cast(Reason, dict(found))
    return {"code": "denied"}


def _from_reason(reason: Reason, action_id: str | None) -> Refusal:
    code = reason["code"]
    return Refusal(
        text=denial_text(reason),
        code=code,
        reason=reason,
        action_id=action_id,
        terminated=code == DenyCode.TERMINATED.value,
    )

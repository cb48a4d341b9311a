"""The words of the Lineage guard: decisions, reasons, scars, statuses and their wire shapes.

The wire shapes are ``TypedDict``s: at run time they are the plain dicts Lineage's API sends
(``json.dumps`` of a decision is Lineage's bytes), while mypy checks every key a caller reads.
``Denial`` is the one value for "refused before anything ran", whoever refused (the engine's
checks, a tool's local checks); ``describe_reason`` and ``denial_text`` word it, keyed by code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, NotRequired, Required, TypedDict

__all__ = [
    "ActionStatus",
    "Decision",
    "DenyCode",
    "Denial",
    "Fault",
    "Outcome",
    "REPLAY_CODE",
    "SCAR_CAP",
    "Severity",
    "describe_reason",
    "denial_text",
    "scar_text",
    # the wire shapes
    "DecisionName",
    "ActionStatusName",
    "OutcomeName",
    "FaultName",
    "SeverityName",
    "Reason",
    "DecisionDict",
    "Action",
    "ConsumedAction",
    "Scar",
    "Head",
    "AgentStatus",
    "AgentEntry",
    "NewAgent",
    "PendingAction",
    "PendingItem",
    "LedgerRecord",
    "LogPage",
    "Verification",
    "VerifyFailure",
    "PublicKeyInfo",
    "JSONObject",
    "JSONValue",
]

#: A JSON value as the wire and the ledger carry it (``json.loads`` gives one).
JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]
#: A JSON object: a policy, a ledger payload, a JSON Schema, a request body.
JSONObject = dict[str, JSONValue]

DecisionName = Literal["allowed", "denied", "pending_approval"]
ActionStatusName = Literal["requested", "pending_approval", "allowed", "denied", "completed"]
OutcomeName = Literal["success", "failure", "harmful"]
#: Whose fault a ``failure`` was: the agent's (a minor scar, as in Lineage), the service that
#: runs the tool (an MCP upstream, a remote API: it failed or timed out), or the caller that
#: cancelled the call. Only ``agent`` scars.
FaultName = Literal["agent", "upstream", "caller"]
SeverityName = Literal["minor", "moderate", "severe", "fatal"]


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
    #: An allowed host that did not resolve: the world failed, not the agent (no scar).
    EGRESS_UNRESOLVED = "egress_unresolved"
    UNTRUSTED_PROVENANCE = "untrusted_provenance"
    #: A rule of the tool's policy matched the input and denies it (``rule``, ``message``).
    RULE_DENIED = "rule_denied"
    #: The input does not satisfy the tool's ``input_schema`` (``message``, ``argument``).
    INVALID_INPUT = "invalid_input"


#: The reason code of a request answered from its idempotency record (guardkit's): recorded as
#: ``action_denied`` (nothing runs, nothing is charged) but not a denial: the agent's status does
#: not count it in ``actions_denied``.
REPLAY_CODE = "idempotent_replay"


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


class Fault(StrEnum):
    """Whose fault a ``failure`` was; only the agent's scars it."""

    AGENT = "agent"
    UPSTREAM = "upstream"
    CALLER = "caller"


# -- wire shapes ---------------------------------------------------------------------------------


class Reason(TypedDict, total=False):
    """Why an action was denied: a ``code`` and that code's fields.

    ``{"code": "tool_not_allowed", "tool": "rm"}``; local checks add ``argument`` and
    ``message`` (the sentence the model reads).
    """

    code: Required[str]
    tool: str
    cost: int
    remaining: int
    max_calls: int
    max_actions: int
    window_secs: int | float
    #: ``terminated``: why the agent was terminated; ``rejected``: the approver's reason.
    reason: str | None
    #: ``rejected``: who rejected.
    by: str
    ttl: int | float
    timeout: float
    message: str
    argument: str
    #: ``path_denied``: the resolved path (None when it could not be resolved).
    path: str | None
    sources: list[str]
    #: ``untrusted_provenance`` that a human may still approve.
    needs: str
    #: ``rule_denied``/``rule_requires_approval``: the index of the tool's rule that matched.
    rule: int
    #: ``idempotent_replay``: the action whose result was replayed, and the key.
    of: str
    key: str


class DecisionDict(TypedDict):
    """Lineage's answer to a request: ``cost``/``remaining`` if allowed, ``reason`` if denied."""

    decision: DecisionName
    action_id: str
    cost: NotRequired[int]
    remaining: NotRequired[int]
    reason: NotRequired[Reason]


class Action(TypedDict):
    """One action as ``GET .../actions/{id}`` returns it (Lineage's fields, then guardkit's)."""

    action_id: str
    tool: str
    input: Any
    cost: int
    status: ActionStatusName
    outcome: OutcomeName | None
    input_sha256: str
    reason: Reason | None
    approved_by: str | None
    #: Why this one call was sent to a human though its rule does not require approval (a
    #: local check's reason, ``untrusted_provenance``), when it was; from the ledger.
    approval_reason: NotRequired[Reason]


class ConsumedAction(Action):
    """``consume``'s answer: the action, and that this call consumed it."""

    consumed: bool


class Scar(TypedDict):
    seq: int
    severity: SeverityName
    reason: str
    action_id: str | None


class Head(TypedDict):
    """The newest record of a ledger: what a checkpoint publishes."""

    seq: int
    hash: str


class AgentStatus(TypedDict):
    """``GET /v1/agents/{id}``: Lineage's status fields, then guardkit's ``parent_id``."""

    agent_id: str
    alive: bool
    termination_reason: str | None
    budget: int
    spent: int
    remaining: int
    scar_score: int
    scar_limit: int
    scars: list[Scar]
    actions_allowed: int
    actions_denied: int
    actions_pending: int
    head: Head
    public_key: str | None
    parent_id: str | None


class AgentEntry(TypedDict):
    """One row of ``GET /v1/agents``: the status, or why the agent is quarantined."""

    agent_id: str
    state: Literal["active", "quarantined"]
    status: NotRequired[AgentStatus]
    error: NotRequired[str]


class NewAgent(TypedDict):
    """``create_agent``/``spawn``: the new agent's status and its token."""

    agent: AgentStatus
    token: str


class PendingAction(TypedDict):
    action_id: str
    tool: str
    input: Any
    cost: int
    #: Why a human must decide this call, when a check (not the policy) asked; as on ``Action``.
    approval_reason: NotRequired[Reason]


class PendingItem(TypedDict):
    """One entry of ``GET .../actions/pending``: what the approver sees."""

    requested_at: str
    seq: int
    action: PendingAction


class LedgerRecord(TypedDict):
    """One ledger line in Lineage's export format."""

    seq: int
    timestamp: str
    actor: str
    kind: str
    payload: Any
    prev_hash: str
    hash: str
    signature: str | None


class LogPage(TypedDict):
    """``GET .../log``: records after a sequence number, and the head."""

    records: list[LedgerRecord]
    head: Head


class VerifyFailure(TypedDict):
    """The first line that does not verify (1-based), its ``seq``, and why."""

    line: int
    seq: int | None
    reason: str


class Verification(TypedDict):
    """``GET .../verify``: ``ok`` with the head, or the first failing line."""

    ok: bool
    records: int
    failure: NotRequired[VerifyFailure]
    public_key: NotRequired[str | None]
    head: NotRequired[Head]


class PublicKeyInfo(TypedDict):
    public_key: str | None
    algorithm: str


# -- values ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """The guard's answer to a request; a denial is a value, never an exception."""

    #: ``allowed``, ``denied`` or ``pending_approval``.
    decision: DecisionName
    #: The ``act-N`` id the request was recorded under.
    action_id: str
    #: The charge, for an allowed action.
    cost: int | None = None
    #: Budget left after the charge, for an allowed action.
    remaining: int | None = None
    #: Why it was denied.
    reason: Reason | None = field(default=None)

    @property
    def allowed(self) -> bool:
        return self.decision == "allowed"

    def to_dict(self) -> DecisionDict:
        """The Lineage wire shape of this decision."""
        if self.decision == "allowed":
            assert self.cost is not None
            assert self.remaining is not None
            return {
                "decision": "allowed",
                "action_id": self.action_id,
                "cost": self.cost,
                "remaining": self.remaining,
            }
        if self.decision == "denied":
            assert self.reason is not None
            return {"decision": "denied", "action_id": self.action_id, "reason": self.reason}
        return {"decision": self.decision, "action_id": self.action_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class Denial:
    """A refusal decided before anything ran, by the engine's checks or a tool's local checks.

    Recorded in the ledger as ``action_denied`` with ``reason``, plus a scar of ``severity``.
    """

    reason: Reason
    #: The scar the denial leaves; None for none (running low on budget is not misbehaviour).
    severity: Severity | None = Severity.MODERATE


#: How each deny code reads (Lineage's Rust ``Display``, then guardkit's codes).
_WORDING = {
    "terminated": "agent is terminated: {reason}",
    "tool_not_allowed": "tool '{tool}' is not allowed",
    "insufficient_budget": "cost {cost} exceeds remaining budget {remaining}",
    "tool_call_limit": "tool '{tool}' reached its limit of {max_calls} calls",
    "rate_limited": "rate limit of {max_actions} actions per {window_secs}s exceeded",
    "rejected": "rejected by {by}: {reason}",
    "approval_expired": "approval expired after {ttl}s",
    "approval_timeout": "no approval within {timeout}s",
    "rule_denied": "tool '{tool}' denied by rule {rule}: {message}",
    "invalid_input": "invalid input for tool '{tool}': {message}",
    "rule_requires_approval": "rule {rule} of tool '{tool}' asks for approval: {message}",
}


def describe_reason(reason: Reason | Mapping[str, object]) -> str:
    """A denial reason in words, e.g. ``tool 'rm' is not allowed``.

    Codes without a fixed wording (the local checks') read as ``code: message``.
    """
    code = reason.get("code")
    template = _WORDING.get(str(code))
    if template is not None:
        try:
            return template.format(**reason)
        except KeyError:
            pass
    detail = reason.get("message") or reason.get("reason")
    return f"{code}: {detail}" if detail else str(code)


def denial_text(reason: Reason | Mapping[str, object]) -> str:
    """The sentence that tells a model its tool call was denied and must not be retried.

    >>> denial_text({"code": "tool_not_allowed", "tool": "rm"})
    "Denied by the policy guard: tool 'rm' is not allowed. Nothing was done. Do not retry; ..."
    """
    return (
        f"Denied by the policy guard: {describe_reason(reason)}. Nothing was done. "
        "Do not retry; choose another approach or ask a human."
    )


def scar_text(reason: Reason | Mapping[str, object]) -> str:
    """The scar reason Lineage writes for a denial, e.g. ``tool 'rm' is not allowed``."""
    return describe_reason(reason)

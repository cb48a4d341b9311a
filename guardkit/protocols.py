"""The seams between layers: what tools, loops and integrations talk to, and what a model is.

``AgentGuard`` is one agent's guard, in-process (``LocalAgent``) or over HTTP (``AgentClient``);
``AsyncAgentGuard`` is the same guard for ``async`` code. The optional protocols say what else an
agent guard may offer the tool layer: recording a local check's denial in the ledger
(``RecordsLocalDenials``), ending a wait that timed out (``WithdrawsActions``), its policy
(``KnowsPolicy``, so policy check sections apply), sending one call to a human though its
policy does not ask for it (``AsksApproval``), and a store for idempotency records
(``KeepsIdempotency``). The tool layer asks with ``isinstance``.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from guardkit.decisions import (
    Action,
    ActionStatusName,
    AgentStatus,
    DecisionDict,
    FaultName,
    Reason,
    SeverityName,
)

if TYPE_CHECKING:
    from guardkit.policy import Policy

__all__ = [
    "AgentGuard",
    "AsksApproval",
    "AsyncAgentGuard",
    "IdemRecord",
    "IdempotencyStore",
    "IdempotencyTransaction",
    "KeepsIdempotency",
    "KnowsPolicy",
    "Model",
    "ModelReply",
    "RecordsLocalDenials",
    "ToolCall",
    "WithdrawsActions",
    "implements",
]


@runtime_checkable
class AgentGuard(Protocol):
    """One agent's guard: Lineage ``AgentClient``'s five primitives and the agent's id."""

    @property
    def agent_id(self) -> str: ...

    def request(self, tool: str, input: Any = None, cost: Any = None) -> DecisionDict:
        """Ask before acting; the answer is ``allowed``, ``denied`` or ``pending_approval``."""
        ...

    def report(
        self, action_id: str, status: str, detail: str = "", *, fault: FaultName = "agent"
    ) -> AgentStatus:
        """Report an allowed action's one outcome: ``success`` or ``failure``; a failure that
        was not the agent's (``fault="upstream"`` or ``"caller"``) leaves no scar."""
        ...

    def status(self) -> AgentStatus: ...

    def action(self, action_id: str) -> Action: ...

    def wait_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        """Block until a human decides; ``allowed`` or ``denied``. ``ApprovalTimeout`` after."""
        ...


@runtime_checkable
class AsyncAgentGuard(Protocol):
    """``AgentGuard`` for ``async`` code: the same calls, awaited, never blocking the loop."""

    @property
    def agent_id(self) -> str: ...

    async def arequest(self, tool: str, input: Any = None, cost: Any = None) -> DecisionDict: ...

    async def areport(
        self, action_id: str, status: str, detail: str = "", *, fault: FaultName = "agent"
    ) -> AgentStatus: ...

    async def astatus(self) -> AgentStatus: ...

    async def aaction(self, action_id: str) -> Action: ...

    async def await_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName: ...


@runtime_checkable
class RecordsLocalDenials(Protocol):
    """An agent guard that records a denial a local check decided (``path_denied``...)."""

    def deny_local(
        self, tool: str, input: Any, reason: Reason, severity: SeverityName | None = "moderate"
    ) -> DecisionDict: ...


@runtime_checkable
class WithdrawsActions(Protocol):
    """An agent guard that can end its own wait: a pending action is denied (``approval_timeout``).

    Without it, an action whose wait timed out stays ``pending_approval`` until a human decides.
    """

    def withdraw(self, action_id: str, timeout: float) -> Action: ...


@runtime_checkable
class AsksApproval(Protocol):
    """An agent guard that can send one call to a human though its policy does not require it.

    ``request_approval`` is ``request`` whose answer is ``pending_approval`` whenever the checks
    pass; ``reason`` (a local check's, ``untrusted_provenance``) is recorded with the
    ``approval_required`` record and shown to the approver (``Action["approval_reason"]``).
    """

    def request_approval(
        self, tool: str, input: Any, cost: Any, reason: Reason
    ) -> DecisionDict: ...


@runtime_checkable
class KnowsPolicy(Protocol):
    """An agent guard that can tell its agent's policy (fixed for the agent's life)."""

    def policy(self) -> Policy: ...


@dataclass(slots=True, kw_only=True)
class IdemRecord:
    """An idempotency record: IN_PROGRESS under a lease, or COMPLETED with the stored result."""

    key: str
    status: str
    payload_hash: str
    owner: str
    lease_expires: float
    expires_at: float | None = None
    result_json: str | None = None
    action_id: str | None = None
    agent_id: str | None = None


class IdempotencyTransaction(Protocol):
    """The part of a store transaction idempotency records need."""

    def idem_get(self, key: str) -> IdemRecord | None: ...

    def idem_put(self, record: IdemRecord) -> None: ...

    def idem_delete(self, key: str) -> None: ...


class IdempotencyStore(Protocol):
    """Where idempotency records live: any guardkit store (``guardkit.store.open_store``)."""

    def transaction(
        self, *, write: bool = True
    ) -> AbstractContextManager[IdempotencyTransaction]: ...


@runtime_checkable
class KeepsIdempotency(Protocol):
    """An agent guard with a store for idempotency records (its own ledger's store)."""

    @property
    def idempotency_store(self) -> IdempotencyStore: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call the model asked for."""

    #: The provider's id for the call (``toolu_...``, ``call_...``).
    id: str
    name: str
    #: Parsed arguments.
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelReply:
    """What a model turn produced, in provider-neutral form."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    #: Tokens (or any unit) the turn consumed, if the provider says.
    usage: int | None = None
    #: The provider's own message to append to the conversation unchanged.
    message: Any = None
    stop_reason: str | None = None


class Model(Protocol):
    """A model behind some provider: one turn over the conversation so far."""

    def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]]) -> ModelReply: ...

    def assistant_message(self, reply: ModelReply) -> Any:
        """The message to append for the model's own turn."""
        ...

    def tool_result_message(self, call: ToolCall, result: str, *, is_error: bool) -> Any:
        """The message that carries one tool result back to the model."""
        ...


#: ``isinstance`` against a runtime-checkable protocol inspects every member (about 25 µs for
#: AsyncAgentGuard): the answer per class is kept, as a class's methods don't come and go.
_IMPLEMENTS: weakref.WeakKeyDictionary[type, dict[type, bool]] = weakref.WeakKeyDictionary()


def implements(obj: object, protocol: Any) -> bool:
    """``isinstance(obj, protocol)`` for a runtime-checkable protocol, remembered per class.

    For hot paths; it does not narrow the type for mypy as ``isinstance`` does.
    """
    known = _IMPLEMENTS.setdefault(type(obj), {})
    found = known.get(protocol)
    if found is None:
        found = known[protocol] = isinstance(obj, protocol)
    return found

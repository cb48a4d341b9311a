"""The store contract: materialised agent state and an append-only, hash-chained ledger.

Backends implement a handful of small primitives on a transaction (load and save an agent row,
write a record, read and write action rows, scars, consumptions and idempotency records); this
module does the shared work once: sequencing, hashing and signing records, tracking which agents
a transaction touched, and folding a ledger back into state to verify it.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, cast

from guardkit._canonical import canonical_json
from guardkit.decisions import Action, ActionStatusName, OutcomeName, Reason, Scar
from guardkit.errors import StoreError
from guardkit.policy import Policy
from guardkit.protocols import IdemRecord
from guardkit.store.chain import GENESIS_PREV, Record, Signer, format_timestamp, seal

__all__ = ["ActionRow", "AgentState", "Store", "Transaction"]


@dataclass(slots=True, kw_only=True)
class AgentState:
    """The materialised state of one agent, loaded and locked inside a transaction."""

    agent_id: str
    policy: Policy
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
    created_at: float = 0.0
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
            created_at=self.created_at,
            dirty=self.dirty,
        )


@dataclass(slots=True, kw_only=True)
class ActionRow:
    """The materialised state of one action."""

    agent_id: str
    number: int
    tool: str
    input_json: str
    input_sha256: str
    cost: int
    status: str
    requested_at: float
    requested_seq: int
    outcome: str | None = None
    reason: Reason | None = None
    allowed_at: float | None = None
    approved_by: str | None = None
    #: Whether the row exists in the store yet (set by the backend).
    stored: bool = False

    @property
    def action_id(self) -> str:
        return f"act-{self.number}"

    def copy(self) -> ActionRow:
        return ActionRow(
            agent_id=self.agent_id,
            number=self.number,
            tool=self.tool,
            input_json=self.input_json,
            input_sha256=self.input_sha256,
            cost=self.cost,
            status=self.status,
            requested_at=self.requested_at,
            requested_seq=self.requested_seq,
            outcome=self.outcome,
            reason=self.reason,
            allowed_at=self.allowed_at,
            approved_by=self.approved_by,
            stored=self.stored,
        )

    def to_dict(self) -> Action:
        """Lineage's action shape, plus guardkit's ``input_sha256``, ``reason``, ``approved_by``."""
        return {
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


class Transaction(abc.ABC):
    """One atomic unit of work; every change is committed together or not at all."""

    def __init__(self, signer: Signer | None) -> None:
        self._signer = signer
        self._loaded: dict[str, AgentState] = {}
        # Writes are buffered and flushed together at commit: one statement per table.
        self._records: list[tuple[str, Record]] = []
        self._actions: dict[tuple[str, int], ActionRow] = {}
        # Every record of one operation shares its clock reading; format it once.
        self._stamp: tuple[float, str] = (-1.0, "")

    # -- shared work ---------------------------------------------------------------------------

    def agent(self, agent_id: str) -> AgentState:
        """Load (and, in a write transaction, lock) an agent; raises ``NotFound``."""
        state = self._loaded.get(agent_id)
        if state is None:
            state = self._load_agent(agent_id)
            self._loaded[agent_id] = state
        return state

    def create(self, state: AgentState, now: float) -> None:
        """Insert a new agent and write its genesis and policy records."""
        self._insert_agent(state)
        self._loaded[state.agent_id] = state
        self.append(
            state, "genesis", {"log_id": state.agent_id, "public_key": state.public_key}, now
        )
        self.append(state, "policy", {"policy": state.policy.to_dict()}, now)

    def append(
        self,
        state: AgentState,
        kind: str,
        payload: dict[str, Any] | None,
        now: float,
        *,
        payload_json: str | None = None,
    ) -> Record:
        """Chain a new record onto the agent's ledger."""
        if state.public_key is not None and (
            self._signer is None or self._signer.public_key != state.public_key
        ):
            raise StoreError(
                f"agent {state.agent_id!r} has a signed ledger; open the store with its "
                "signing key to append to it"
            )
        text = payload_json if payload_json is not None else canonical_json(payload)
        if now != self._stamp[0]:
            self._stamp = (now, format_timestamp(now))
        record = seal(
            seq=state.head_seq + 1,
            timestamp=self._stamp[1],
            actor=state.agent_id,
            kind=kind,
            payload_json=text,
            prev_hash=state.head_hash,
            signer=self._signer if state.public_key is not None else None,
        )
        self._records.append((state.agent_id, record))
        state.head_seq = record.seq
        state.head_hash = record.hash
        state.dirty = True
        return record

    def put_action(self, row: ActionRow) -> None:
        """Insert or update an action row (written at commit)."""
        self._actions[(row.agent_id, row.number)] = row

    def get_action(self, agent_id: str, number: int) -> ActionRow | None:
        row = self._actions.get((agent_id, number))
        return row if row is not None else self._read_action(agent_id, number)

    def pending_actions(self, agent_id: str) -> list[ActionRow]:
        """The agent's pending actions, oldest first."""
        self._flush_actions()
        return self._pending_actions(agent_id)

    def records(
        self, agent_id: str, after: int | None = None, limit: int | None = None
    ) -> list[Record]:
        """Committed records of an agent with ``seq > after``, oldest first."""
        return self._read_records(agent_id, after, limit)

    def flush(self) -> None:
        """Write everything this transaction changed (called just before commit)."""
        if self._records:
            self._write_records(self._records)
            self._records = []
        self._flush_actions()
        for state in self._loaded.values():
            if state.dirty:
                self._save_agent(state)
                state.dirty = False

    def _flush_actions(self) -> None:
        if self._actions:
            self._write_actions(list(self._actions.values()))
            for row in self._actions.values():
                row.stored = True
            self._actions = {}

    # -- backend primitives --------------------------------------------------------------------

    @abc.abstractmethod
    def _load_agent(self, agent_id: str) -> AgentState: ...

    @abc.abstractmethod
    def _insert_agent(self, state: AgentState) -> None: ...

    @abc.abstractmethod
    def _save_agent(self, state: AgentState) -> None: ...

    @abc.abstractmethod
    def _write_records(self, records: list[tuple[str, Record]]) -> None: ...

    @abc.abstractmethod
    def _write_actions(self, rows: list[ActionRow]) -> None:
        """Insert the rows not ``stored`` yet, update the others."""

    @abc.abstractmethod
    def agent_exists(self, agent_id: str) -> bool: ...

    @abc.abstractmethod
    def agent_ids(self) -> list[str]: ...

    @abc.abstractmethod
    def children(self, agent_id: str) -> list[str]: ...

    @abc.abstractmethod
    def _read_records(
        self, agent_id: str, after: int | None, limit: int | None
    ) -> list[Record]: ...

    @abc.abstractmethod
    def _read_action(self, agent_id: str, number: int) -> ActionRow | None: ...

    @abc.abstractmethod
    def _pending_actions(self, agent_id: str) -> list[ActionRow]: ...

    @abc.abstractmethod
    def insert_consumption(self, agent_id: str, action_id: str, by: str, at: float) -> bool:
        """Record that a backend consumed an action; False if it was consumed before."""

    @abc.abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abc.abstractmethod
    def set_meta(self, key: str, value: str) -> None: ...

    @abc.abstractmethod
    def idem_get(self, key: str) -> IdemRecord | None: ...

    @abc.abstractmethod
    def idem_put(self, record: IdemRecord) -> None:
        """Insert or replace the idempotency record for ``record.key``."""

    @abc.abstractmethod
    def idem_delete(self, key: str) -> None: ...


class Store(abc.ABC):
    """A durable ledger and the state materialised from it."""

    #: A human-readable location (path or URL) for messages.
    location: str = ""
    #: Whether a transaction may wait on a disk or the network (async callers then run it in a
    #: worker thread); False only for the in-process memory store.
    blocks: bool = True

    def __init__(self, signer: Signer | None = None) -> None:
        self.signer = signer

    @abc.abstractmethod
    def transaction(self, *, write: bool = True) -> AbstractContextManager[Transaction]:
        """Open a transaction; a write transaction holds the writer lock until it ends."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def iter_records(self, agent_id: str, batch: int = 5000) -> Iterator[Record]:
        after: int | None = None
        while True:
            with self.transaction(write=False) as tx:
                chunk = tx.records(agent_id, after=after, limit=batch)
            yield from chunk
            if len(chunk) < batch:
                return
            after = chunk[-1].seq

"""In-process store for ``":memory:"``: the same contract as SQLite, held in Python objects.

Nothing survives the process, so there is nothing to fsync and no other process to coordinate
with; what is left is atomicity. A transaction stages its writes (records, agent rows, meta and
idempotency records) and applies them when it ends without an exception; the verified states it
changed in memory are dropped on a rollback and rebuilt from the committed records.
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
from typing import Any

from guardkit.errors import AgentExists
from guardkit.protocols import IdemRecord
from guardkit.store.base import Store, Transaction
from guardkit.store.chain import GENESIS_PREV, Record, Signer
from guardkit.store.outbox import OutboxEvent

__all__ = ["MemoryStore"]


class _Tables:
    """The committed data."""

    def __init__(self) -> None:
        #: agent id -> (parent_id, policy, public_key)
        self.agents: dict[str, tuple[str | None, str, str | None]] = {}
        #: agent id -> its records, each with the count of requests up to it
        self.records: dict[str, list[tuple[Record, int]]] = {}
        self.meta: dict[str, str] = {}
        self.idem: dict[str, tuple[IdemRecord, str]] = {}
        #: the outbox (``guardkit.store.outbox``): events, in order; nothing delivers them here
        self.outbox: list[OutboxEvent] = []


class MemoryStore(Store):
    """``MemoryStore()``: what ``Guard(":memory:")`` uses."""

    location = ":memory:"
    blocks = False

    def __init__(self, *, signer: Signer | None = None, public_key: Any = None) -> None:
        super().__init__(signer, public_key=public_key)
        self._mutex = threading.RLock()
        self._tables = _Tables()

    def transaction(self, *, write: bool = True) -> _MemoryTransaction:
        return _MemoryTransaction(self, self._tables, write=write)

    def close(self) -> None:
        """Nothing to release; the data lives as long as the object."""


class _MemoryTransaction(Transaction):
    __slots__ = ("_agents", "_idem", "_meta", "_out", "_outbox", "_t")

    def __init__(self, store: MemoryStore, tables: _Tables, *, write: bool) -> None:
        super().__init__(store, write=write)
        self._t = tables
        self._agents: dict[str, tuple[str | None, str, str | None]] = {}
        self._out: list[tuple[str, Record, int]] = []
        self._outbox: list[OutboxEvent] = []
        self._meta: dict[str, str] = {}
        #: staged idempotency writes; ``None`` removes the key
        self._idem: dict[str, tuple[IdemRecord, str] | None] = {}

    # The transaction is its own ``with`` block (one object less on the hot path).

    def __enter__(self) -> _MemoryTransaction:
        self.store._mutex.acquire()  # type: ignore[attr-defined]
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is not None:
                self.aborted()
                return
            if self.write:
                self.flush()
                self.apply()
            self.committed()
        finally:
            self.store._mutex.release()  # type: ignore[attr-defined]

    def _fresh(self, agent_id: str) -> bool:
        return True  # no other process writes

    def apply(self) -> None:
        """Make the staged writes the committed data (cannot fail)."""
        t = self._t
        t.agents.update(self._agents)
        for agent_id, record, requested in self._out:
            t.records.setdefault(agent_id, []).append((record, requested))
        t.meta.update(self._meta)
        t.outbox.extend(self._outbox)
        for key, value in self._idem.items():
            if value is None:
                t.idem.pop(key, None)
            else:
                t.idem[key] = value

    # -- agents ------------------------------------------------------------------------------

    def _head(self, agent_id: str) -> tuple[int, str] | None:
        if agent_id not in self._t.agents:
            return None
        records = self._t.records.get(agent_id)
        return (records[-1][0].seq, records[-1][0].hash) if records else (-1, GENESIS_PREV)

    def _agent_row(self, agent_id: str) -> tuple[str | None, str, str | None] | None:
        return self._agents.get(agent_id) or self._t.agents.get(agent_id)

    def _insert_agent(
        self, agent_id: str, parent_id: str | None, policy: str, public_key: str | None
    ) -> None:
        if self.agent_exists(agent_id):
            raise AgentExists(f"agent {agent_id!r} already exists")
        self.changes += 1
        self._agents[agent_id] = (parent_id, policy, public_key)

    def agent_exists(self, agent_id: str) -> bool:
        return agent_id in self._t.agents or agent_id in self._agents

    def agent_ids(self) -> list[str]:
        return sorted({*self._t.agents, *self._agents})

    def ledger_ids(self) -> set[str]:
        return set(self._t.records)

    # -- records -------------------------------------------------------------------------------

    def _write_records(self, records: list[tuple[str, Record, int]]) -> None:
        self._out = records

    def _write_events(self, events: list[OutboxEvent]) -> None:
        self._outbox = events

    def outbox(self, after: int = 0, limit: int = 100) -> list[tuple[int, str, str, str]]:
        found = self._t.outbox[after : after + limit]
        return [(after + i + 1, e.id, e.type, e.body) for i, e in enumerate(found)]

    def _read_rows(
        self, agent_id: str, after: int | None, limit: int | None
    ) -> list[tuple[Record, int]]:
        rows = self._t.records.get(agent_id, [])
        start = 0 if after is None else bisect.bisect_right(rows, after, key=lambda r: r[0].seq)
        end = len(rows) if limit is None else start + limit
        return rows[start:end]

    def _requested_at(self, agent_id: str, seq: int) -> int | None:
        rows = self._t.records.get(agent_id, [])
        return rows[seq][1] if 0 <= seq < len(rows) else None

    # -- meta and idempotency --------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key, self._t.meta.get(key))

    def set_meta(self, key: str, value: str) -> None:
        self.changes += 1
        self._meta[key] = value

    def _idem_read(self, key: str) -> tuple[IdemRecord, str | None] | None:
        found = self._idem[key] if key in self._idem else self._t.idem.get(key)
        if found is None:
            return None
        record, mark = found
        return dataclasses.replace(record), mark

    def _idem_write(self, record: IdemRecord, seal: str) -> None:
        self._idem[record.key] = (dataclasses.replace(record), seal)

    def _idem_remove(self, key: str) -> None:
        self._idem[key] = None

"""In-process store for ``":memory:"``: the same contract as SQLite, held in Python objects.

Nothing survives the process, so there is nothing to fsync and no other process to coordinate
with; what is left is atomicity. A transaction works on copies of the agent states and action
rows it touches and stages its other writes; they replace the committed objects only when the
transaction ends without an exception (all in memory, so the commit itself cannot fail).
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from guardkit.errors import NotFound
from guardkit.protocols import IdemRecord
from guardkit.store.base import ActionRow, AgentState, Store, Transaction
from guardkit.store.chain import Record, Signer

__all__ = ["MemoryStore"]


class _Tables:
    """The committed data."""

    def __init__(self) -> None:
        self.agents: dict[str, AgentState] = {}
        self.records: dict[str, list[Record]] = {}
        self.actions: dict[tuple[str, int], ActionRow] = {}
        self.pending: dict[str, set[int]] = {}
        self.consumed: set[tuple[str, str]] = set()
        self.meta: dict[str, str] = {}
        self.idem: dict[str, IdemRecord] = {}


_DELETED: Any = object()


class MemoryStore(Store):
    """``MemoryStore()``: what ``Guard(":memory:")`` uses."""

    location = ":memory:"
    blocks = False

    def __init__(self, *, signer: Signer | None = None) -> None:
        super().__init__(signer)
        self._mutex = threading.RLock()
        self._tables = _Tables()

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        with self._mutex:
            tx = _MemoryTransaction(self._tables, self.signer)
            yield tx
            if write:
                tx.flush()
                tx.commit()

    def close(self) -> None:
        """Nothing to release; the data lives as long as the object."""


class _MemoryTransaction(Transaction):
    def __init__(self, tables: _Tables, signer: Signer | None) -> None:
        super().__init__(signer)
        self._t = tables
        self._agents: dict[str, AgentState] = {}
        self._records_out: list[tuple[str, Record]] = []
        self._actions_out: list[ActionRow] = []
        self._consumed: set[tuple[str, str]] = set()
        self._meta: dict[str, str] = {}
        self._idem: dict[str, IdemRecord] = {}

    def commit(self) -> None:
        t = self._t
        t.agents.update(self._agents)
        for agent_id, record in self._records_out:
            t.records.setdefault(agent_id, []).append(record)
        for row in self._actions_out:
            t.actions[(row.agent_id, row.number)] = row
            pending = t.pending.setdefault(row.agent_id, set())
            if row.status == "pending_approval":
                pending.add(row.number)
            else:
                pending.discard(row.number)
        t.consumed |= self._consumed
        t.meta.update(self._meta)
        for key, idem in self._idem.items():
            if idem is _DELETED:
                t.idem.pop(key, None)
            else:
                t.idem[key] = idem

    # -- agents ------------------------------------------------------------------------------

    def _load_agent(self, agent_id: str) -> AgentState:
        state = self._t.agents.get(agent_id)
        if state is None:
            raise NotFound(f"unknown agent {agent_id!r}")
        return state.copy()

    def _insert_agent(self, state: AgentState) -> None:
        self._agents[state.agent_id] = state

    def _save_agent(self, state: AgentState) -> None:
        self._agents[state.agent_id] = state

    def agent_exists(self, agent_id: str) -> bool:
        return agent_id in self._t.agents or agent_id in self._agents

    def agent_ids(self) -> list[str]:
        return sorted({*self._t.agents, *self._agents})

    def children(self, agent_id: str) -> list[str]:
        known = {**self._t.agents, **self._agents}
        return sorted(a for a, s in known.items() if s.parent_id == agent_id)

    # -- records and actions ---------------------------------------------------------------------

    def _write_records(self, records: list[tuple[str, Record]]) -> None:
        self._records_out.extend(records)

    def _read_records(self, agent_id: str, after: int | None, limit: int | None) -> list[Record]:
        records = self._t.records.get(agent_id, [])
        start = 0 if after is None else bisect.bisect_right(records, after, key=lambda r: r.seq)
        end = len(records) if limit is None else start + limit
        return records[start:end]

    def _write_actions(self, rows: list[ActionRow]) -> None:
        self._actions_out.extend(rows)

    def _read_action(self, agent_id: str, number: int) -> ActionRow | None:
        row = self._t.actions.get((agent_id, number))
        return None if row is None else row.copy()

    def _pending_actions(self, agent_id: str) -> list[ActionRow]:
        numbers = sorted(self._t.pending.get(agent_id, ()))
        rows = (self._read_action(agent_id, n) for n in numbers)
        return [row for row in rows if row is not None]

    def insert_consumption(self, agent_id: str, action_id: str, by: str, at: float) -> bool:
        key = (agent_id, action_id)
        if key in self._t.consumed or key in self._consumed:
            return False
        self._consumed.add(key)
        return True

    # -- meta and idempotency --------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key, self._t.meta.get(key))

    def set_meta(self, key: str, value: str) -> None:
        self._meta[key] = value

    def idem_get(self, key: str) -> IdemRecord | None:
        record = self._idem.get(key) or self._t.idem.get(key)
        if record is None or record is _DELETED:
            return None
        return dataclasses.replace(record)

    def idem_put(self, record: IdemRecord) -> None:
        self._idem[record.key] = dataclasses.replace(record)

    def idem_delete(self, key: str) -> None:
        self._idem[key] = _DELETED

"""The SQL both database stores run: one transaction class over a driver's execute calls.

``SQLTransaction`` implements every store primitive in SQL that SQLite and PostgreSQL both
accept (``?`` placeholders become ``%s`` for psycopg; upserts are ``ON CONFLICT``). A backend
supplies four calls (run a statement, fetch one row, fetch all rows, run one statement for
many rows) and overrides what really differs: how a writer locks an agent, and how it knows
its cached state is current.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from guardkit.errors import AgentExists, LedgerTampered, NotFound
from guardkit.protocols import IdemRecord
from guardkit.store.base import Transaction
from guardkit.store.chain import GENESIS_PREV, Record
from guardkit.store.outbox import OutboxEvent
from guardkit.store.schema import Dialect, upgrade
from guardkit.store.seals import IDEM_FIELDS, idem_values
from guardkit.store.state import ALLOWED, COMPLETED, CONSUMED

__all__ = ["SQLTransaction", "Statements"]

_RECORD = "seq, timestamp, actor, kind, payload, prev_hash, hash, signature"
_IDEM = ", ".join(IDEM_FIELDS).replace("result_json", "result")


class Statements:
    """The store's statements in one dialect, built once per store."""

    def __init__(self, dialect: Dialect) -> None:
        q = dialect.sql
        self.dialect = dialect
        self.head = q(
            "SELECT r.seq, r.hash FROM agents a LEFT JOIN records r ON r.agent_id = a.agent_id "
            "WHERE a.agent_id = ? ORDER BY r.seq DESC LIMIT 1"
        )
        self.last = q("SELECT seq, hash FROM records WHERE agent_id = ? ORDER BY seq DESC LIMIT 1")
        self.agent_row = q("SELECT parent_id, policy, public_key FROM agents WHERE agent_id = ?")
        self.insert_agent = q(
            "INSERT INTO agents (agent_id, parent_id, policy, public_key) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (agent_id) DO NOTHING"
        )
        self.agent_exists = q("SELECT 1 FROM agents WHERE agent_id = ?")
        self.agent_ids = f"SELECT agent_id FROM agents ORDER BY agent_id{dialect.collate}"
        self.ledger_ids = "SELECT DISTINCT agent_id FROM records"
        self.rows = q(
            f"SELECT {_RECORD}, requested FROM records WHERE agent_id = ? AND seq > ? "
            "ORDER BY seq LIMIT ?"
        )
        self.requested = q("SELECT requested FROM records WHERE agent_id = ? AND seq = ?")
        # The record's fields first: a row's parameters are the record tuple plus two.
        self.insert_records = q(
            f"INSERT INTO records ({_RECORD}, agent_id, requested) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        # An unsigned record's: its first seven fields plus two, the signature NULL.
        self.insert_unsigned = q(
            f"INSERT INTO records ({_RECORD}, agent_id, requested) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)"
        )
        self.insert_events = q(
            "INSERT INTO outbox (id, type, agent_id, body) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (id) DO NOTHING"
        )
        self.outbox = q("SELECT seq, id, type, body FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?")
        self.get_meta = q("SELECT value FROM meta WHERE key = ?")
        self.set_meta = q(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        )
        self.idem_get = q(f"SELECT {_IDEM}, seal FROM idempotency WHERE key = ?")
        self.idem_all = f"SELECT {_IDEM} FROM idempotency"
        updates = ", ".join(f"{c} = excluded.{c}" for c in _IDEM.split(", ")[1:])
        self.idem_put = q(
            f"INSERT INTO idempotency ({_IDEM}, seal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            f"ON CONFLICT (key) DO UPDATE SET {updates}, seal = excluded.seal"
        )
        self.idem_seal = q("UPDATE idempotency SET seal = ? WHERE key = ?")
        self.idem_delete = q("DELETE FROM idempotency WHERE key = ?")


def _record(r: Sequence[Any]) -> Record:
    return Record._make(r[:8])


def _idem(r: Sequence[Any]) -> IdemRecord:
    return IdemRecord(**dict(zip(IDEM_FIELDS, r[:9], strict=True)))


class SQLTransaction(Transaction):
    """A transaction of a SQL store; subclasses bind it to a driver and its dialect's ``q``."""

    __slots__ = ()

    #: The statements in the backend's dialect (a class attribute: one set per dialect).
    q: ClassVar[Statements]

    # -- the driver ----------------------------------------------------------------------------

    @abc.abstractmethod
    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute a statement; returns the number of rows it changed."""

    @abc.abstractmethod
    def _one(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any] | None: ...

    @abc.abstractmethod
    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Sequence[Any]]: ...

    @abc.abstractmethod
    def _many(self, sql: str, rows: list[tuple[Any, ...]]) -> None: ...

    # -- primitives ----------------------------------------------------------------------------

    def _head(self, agent_id: str) -> tuple[int, str] | None:
        row = self._one(self.q.head, (agent_id,))
        if row is None:
            return None
        return (-1, GENESIS_PREV) if row[0] is None else (row[0], row[1])

    def _agent_row(self, agent_id: str) -> tuple[str | None, str, str | None] | None:
        row = self._one(self.q.agent_row, (agent_id,))
        return None if row is None else (row[0], row[1], row[2])

    def _insert_agent(
        self, agent_id: str, parent_id: str | None, policy: str, public_key: str | None
    ) -> None:
        if self._run(self.q.insert_agent, (agent_id, parent_id, policy, public_key)) != 1:
            raise AgentExists(f"agent {agent_id!r} already exists")
        self.changes += 1

    def agent_exists(self, agent_id: str) -> bool:
        return self._one(self.q.agent_exists, (agent_id,)) is not None

    def agent_ids(self) -> list[str]:
        return [row[0] for row in self._all(self.q.agent_ids)]

    def ledger_ids(self) -> set[str]:
        return {row[0] for row in self._all(self.q.ledger_ids)}

    def _read_rows(
        self, agent_id: str, after: int | None, limit: int | None
    ) -> list[tuple[Record, int]]:
        no_limit = self.q.dialect.no_limit
        params = (agent_id, -1 if after is None else after, no_limit if limit is None else limit)
        return [(_record(r), r[8]) for r in self._all(self.q.rows, params)]

    def _requested_at(self, agent_id: str, seq: int) -> int | None:
        row = self._one(self.q.requested, (agent_id, seq))
        return None if row is None else int(row[0])

    def _write_records(self, records: list[tuple[str, Record, int]]) -> None:
        # An unsigned record's NULL signature is in the statement, not bound: Python's sqlite3
        # adapts a bound None through an attribute lookup that fails (an AttributeError is
        # formatted and dropped): about 2,000 instructions a row.
        if len(records) == 1:  # a report, an approval: one statement, no batch
            agent_id, record, requested = records[0]
            if record.signature is None:
                self._run(self.q.insert_unsigned, (*record[:7], agent_id, requested))
            else:
                self._run(self.q.insert_records, (*record, agent_id, requested))
            return
        for _, record, _ in records:  # a loop, not all(generator): a call per record fewer
            if record.signature is not None:
                break
        else:
            self._many(
                self.q.insert_unsigned,
                [(*record[:7], agent_id, requested) for agent_id, record, requested in records],
            )
            return
        self._many(
            self.q.insert_records,
            [(*record, agent_id, requested) for agent_id, record, requested in records],
        )

    def _write_events(self, events: list[OutboxEvent]) -> None:
        self._many(self.q.insert_events, [(e.id, e.type, e.agent_id, e.body) for e in events])

    def outbox(self, after: int = 0, limit: int = 100) -> list[tuple[int, str, str, str]]:
        rows = self._all(self.q.outbox, (after, limit))
        return [(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]

    def get_meta(self, key: str) -> str | None:
        row = self._one(self.q.get_meta, (key,))
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.changes += 1
        self._run(self.q.set_meta, (key, value))

    def _idem_read(self, key: str) -> tuple[IdemRecord, str | None] | None:
        row = self._one(self.q.idem_get, (key,))
        return None if row is None else (_idem(row), row[9])

    def _idem_write(self, record: IdemRecord, seal: str) -> None:
        self._run(self.q.idem_put, (*idem_values(record), seal))

    def _idem_remove(self, key: str) -> None:
        self._run(self.q.idem_delete, (key,))

    # -- schema --------------------------------------------------------------------------------

    def upgrade(self) -> int:
        """Create or upgrade the schema (in this write transaction); returns the old version."""
        found = upgrade(self.q.dialect, self._run, self._one, self._reseal)
        if found < 3 and self._one(self.q.dialect.has_table, ("consumptions",)) is not None:
            self._ledger_consumptions()
        return found

    def _ledger_consumptions(self) -> None:
        """Schemas 1-2 -> 3: each consumption of the legacy table becomes an ``action_consumed``
        record (``by: "migration"``) of its agent's ledger, in this transaction; the table goes.

        A row whose action its ledger does not show allowed (or already shows consumed) is not
        a consumption a guard recorded: it is dropped with the table.
        """
        now = time.time()
        rows = self._all(
            "SELECT agent_id, action_id FROM consumptions ORDER BY agent_id, action_id"
        )
        for agent_id, action_id in rows:
            try:
                state = self.agent(agent_id)
            except (NotFound, LedgerTampered):
                continue
            number = int(action_id[4:]) if action_id[4:].isdigit() else 0
            code = state.statuses[number] if 0 < number < len(state.statuses) else 0
            if code & 7 in (ALLOWED, COMPLETED) and not code & CONSUMED:
                payload = {"action_id": action_id, "by": "migration"}
                self.append(state, "action_consumed", payload, now, action=number)
        self._run("DROP TABLE consumptions")
        # Verified before the store's witness was attached: checked again, against it, at open.
        self.store.states.clear()

    def _reseal(self) -> None:
        seals = self.store.seals
        for row in self._all(self.q.idem_all):
            record = _idem(row)
            self._run(self.q.idem_seal, (seals.seal(record), record.key))

"""PostgreSQL backend (psycopg 3): many guard processes on many hosts share one database.

Same tables and semantics as the SQLite store (``ledger text`` is kept byte for byte, so hashes
and signatures verify identically). Per-agent serialisation is a row lock: a write transaction
loads an agent with ``SELECT ... FOR UPDATE``, so budgets, call caps, rate limits, action ids and
the hash chain stay exact however many servers decide for the same agent at once, while
different agents proceed in parallel. Reading or creating ``meta`` values in a write
transaction takes a transaction-scoped advisory lock, so two servers starting at once agree on
one token key. Connections come from a small pool; each commit is durable
(``synchronous_commit`` as the server is configured, ``on`` by default).
"""

from __future__ import annotations

import json
import queue
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from guardkit._canonical import canonical_json
from guardkit.errors import AgentExists, NotFound
from guardkit.policy import Policy
from guardkit.protocols import IdemRecord
from guardkit.store._errors import translate_errors
from guardkit.store._rows import (
    action_from_columns,
    action_values,
    agent_values,
    reason_json,
)
from guardkit.store.base import ActionRow, AgentState, Store, Transaction
from guardkit.store.chain import Record, Signer

__all__ = ["PostgresStore"]

_LOCK_SCHEMA = 0x6775_6172  # advisory lock keys ("guar", "meta")
_LOCK_META = 0x6D65_7461

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agents (
    agent_id TEXT PRIMARY KEY, parent_id TEXT, policy TEXT NOT NULL, public_key TEXT,
    spent BIGINT NOT NULL, scar_score BIGINT NOT NULL, alive BOOLEAN NOT NULL,
    termination_reason TEXT, next_action BIGINT NOT NULL, head_seq BIGINT NOT NULL,
    head_hash TEXT NOT NULL, actions_allowed BIGINT NOT NULL, actions_denied BIGINT NOT NULL,
    actions_pending BIGINT NOT NULL, tool_counts TEXT NOT NULL, scars TEXT NOT NULL,
    recent_allowed TEXT NOT NULL DEFAULT '[]', created_at DOUBLE PRECISION NOT NULL);
ALTER TABLE agents ADD COLUMN IF NOT EXISTS recent_allowed TEXT NOT NULL DEFAULT '[]';
CREATE INDEX IF NOT EXISTS agents_parent ON agents(parent_id);
CREATE TABLE IF NOT EXISTS records (
    agent_id TEXT NOT NULL, seq BIGINT NOT NULL, timestamp TEXT NOT NULL, actor TEXT NOT NULL,
    kind TEXT NOT NULL, payload TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
    signature TEXT, PRIMARY KEY (agent_id, seq));
CREATE TABLE IF NOT EXISTS actions (
    agent_id TEXT NOT NULL, number BIGINT NOT NULL, tool TEXT NOT NULL, input TEXT NOT NULL,
    input_sha256 TEXT NOT NULL, cost BIGINT NOT NULL, status TEXT NOT NULL, outcome TEXT,
    reason TEXT, requested_at DOUBLE PRECISION NOT NULL, requested_seq BIGINT NOT NULL,
    allowed_at DOUBLE PRECISION, approved_by TEXT, PRIMARY KEY (agent_id, number));
CREATE INDEX IF NOT EXISTS actions_status ON actions(agent_id, status);
CREATE INDEX IF NOT EXISTS actions_allowed_at ON actions(agent_id, allowed_at);
CREATE TABLE IF NOT EXISTS consumptions (
    agent_id TEXT NOT NULL, action_id TEXT NOT NULL, consumed_by TEXT NOT NULL,
    consumed_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (agent_id, action_id));
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, status TEXT NOT NULL, payload_hash TEXT NOT NULL, owner TEXT NOT NULL,
    lease_expires DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION, result TEXT,
    action_id TEXT, agent_id TEXT);
"""

_AGENT_COLUMNS = (
    "parent_id, policy, public_key, spent, scar_score, alive, termination_reason, next_action, "
    "head_seq, head_hash, actions_allowed, actions_denied, actions_pending, tool_counts, scars, "
    "recent_allowed, created_at"
)
_ACTION_COLUMNS = (
    "agent_id, number, tool, input, input_sha256, cost, status, outcome, reason, requested_at, "
    "requested_seq, allowed_at, approved_by"
)
_IDEM_COLUMNS = (
    "key, status, payload_hash, owner, lease_expires, expires_at, result, action_id, agent_id"
)


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


class PostgresStore(Store):
    """``PostgresStore("postgresql://user:pass@host/db")``; ``pool_size`` connections at most."""

    #: Transactions on different agents commit in parallel (the server runs several writers).
    parallel_writers = True

    def __init__(self, url: str, *, signer: Signer | None = None, pool_size: int = 8) -> None:
        super().__init__(signer)
        self.url = url
        self.location = _redact(url)
        self._pool: queue.LifoQueue[psycopg.Connection[Any]] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(pool_size)
        self._policies: dict[str, Policy] = {}
        self._closed = False
        with self.transaction() as tx:
            assert isinstance(tx, _PgTransaction)
            tx.cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_SCHEMA,))
            tx.cur.execute(_SCHEMA)

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return self._pool.get_nowait()
        except queue.Empty:
            return psycopg.connect(self.url, autocommit=False)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        self._slots.acquire()
        conn: psycopg.Connection[Any] | None = None
        try:
            with translate_errors(self.location):
                conn = self._connect()
                try:
                    with conn.cursor() as cur:
                        tx = _PgTransaction(cur, self.signer, self._policies, write=write)
                        yield tx
                        if write:
                            tx.flush()
                    conn.commit()
                except BaseException:
                    if not conn.closed:
                        conn.rollback()
                    raise
        finally:
            if conn is not None and not conn.closed and not conn.broken and not self._closed:
                self._pool.put(conn)
            elif conn is not None:
                conn.close()
            self._slots.release()

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._pool.get_nowait().close()
            except queue.Empty:
                return


class _PgTransaction(Transaction):
    def __init__(
        self,
        cur: psycopg.Cursor[Any],
        signer: Signer | None,
        policies: dict[str, Policy],
        *,
        write: bool,
    ) -> None:
        super().__init__(signer)
        self.cur = cur
        self._policies = policies
        self._write = write
        self._meta_locked = False

    def _policy(self, text: str) -> Policy:
        policy = self._policies.get(text)
        if policy is None:
            policy = self._policies[text] = Policy.from_json(text)
        return policy

    def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        self.cur.execute(sql, params)
        return self.cur.fetchone()

    def _load_agent(self, agent_id: str) -> AgentState:
        lock = " FOR UPDATE" if self._write else ""
        row = self._one(
            f"SELECT {_AGENT_COLUMNS} FROM agents WHERE agent_id = %s{lock}", (agent_id,)
        )
        if row is None:
            raise NotFound(f"unknown agent {agent_id!r}")
        return AgentState(
            agent_id=agent_id,
            parent_id=row[0],
            policy=self._policy(row[1]),
            public_key=row[2],
            spent=row[3],
            scar_score=row[4],
            alive=row[5],
            termination_reason=row[6],
            next_action=row[7],
            head_seq=row[8],
            head_hash=row[9],
            actions_allowed=row[10],
            actions_denied=row[11],
            actions_pending=row[12],
            tool_counts=json.loads(row[13]),
            scars=json.loads(row[14]),
            recent_allowed=json.loads(row[15]),
            created_at=row[16],
        )

    def _insert_agent(self, state: AgentState) -> None:
        self.cur.execute(
            f"INSERT INTO agents (agent_id, {_AGENT_COLUMNS}) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (agent_id) DO NOTHING",
            (
                state.agent_id,
                state.parent_id,
                canonical_json(state.policy.to_dict()),
                state.public_key,
                *agent_values(state),
                state.created_at,
            ),
        )
        if self.cur.rowcount != 1:
            raise AgentExists(f"agent {state.agent_id!r} already exists")

    def _save_agent(self, state: AgentState) -> None:
        self.cur.execute(
            "UPDATE agents SET spent=%s, scar_score=%s, alive=%s, termination_reason=%s, "
            "next_action=%s, head_seq=%s, head_hash=%s, actions_allowed=%s, actions_denied=%s, "
            "actions_pending=%s, tool_counts=%s, scars=%s, recent_allowed=%s WHERE agent_id=%s",
            (*agent_values(state), state.agent_id),
        )

    def _write_records(self, records: list[tuple[str, Record]]) -> None:
        self.cur.executemany(
            "INSERT INTO records VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (
                    agent_id,
                    r.seq,
                    r.timestamp,
                    r.actor,
                    r.kind,
                    r.payload_json,
                    r.prev_hash,
                    r.hash,
                    r.signature,
                )
                for agent_id, r in records
            ],
        )

    def _write_actions(self, rows: list[ActionRow]) -> None:
        inserts = [action_values(row) for row in rows if not row.stored]
        updates = [
            (
                row.status,
                row.outcome,
                reason_json(row),
                row.allowed_at,
                row.approved_by,
                row.agent_id,
                row.number,
            )
            for row in rows
            if row.stored
        ]
        if inserts:
            self.cur.executemany(
                f"INSERT INTO actions ({_ACTION_COLUMNS}) VALUES "
                "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                inserts,
            )
        if updates:
            self.cur.executemany(
                "UPDATE actions SET status=%s, outcome=%s, reason=%s, allowed_at=%s, "
                "approved_by=%s WHERE agent_id=%s AND number=%s",
                updates,
            )

    def agent_exists(self, agent_id: str) -> bool:
        return self._one("SELECT 1 FROM agents WHERE agent_id = %s", (agent_id,)) is not None

    def agent_ids(self) -> list[str]:
        self.cur.execute('SELECT agent_id FROM agents ORDER BY agent_id COLLATE "C"')
        return [r[0] for r in self.cur.fetchall()]

    def children(self, agent_id: str) -> list[str]:
        self.cur.execute(
            'SELECT agent_id FROM agents WHERE parent_id = %s ORDER BY agent_id COLLATE "C"',
            (agent_id,),
        )
        return [r[0] for r in self.cur.fetchall()]

    def _read_records(self, agent_id: str, after: int | None, limit: int | None) -> list[Record]:
        self.cur.execute(
            "SELECT seq, timestamp, actor, kind, payload, prev_hash, hash, signature FROM records"
            " WHERE agent_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (agent_id, -1 if after is None else after, limit),
        )
        return [
            Record(
                seq=r[0],
                timestamp=r[1],
                actor=r[2],
                kind=r[3],
                payload_json=r[4],
                prev_hash=r[5],
                hash=r[6],
                signature=r[7],
            )
            for r in self.cur.fetchall()
        ]

    def _read_action(self, agent_id: str, number: int) -> ActionRow | None:
        row = self._one(
            f"SELECT {_ACTION_COLUMNS} FROM actions WHERE agent_id = %s AND number = %s",
            (agent_id, number),
        )
        return None if row is None else action_from_columns(row)

    def _pending_actions(self, agent_id: str) -> list[ActionRow]:
        self.cur.execute(
            f"SELECT {_ACTION_COLUMNS} FROM actions WHERE agent_id = %s AND "
            "status = 'pending_approval' ORDER BY number",
            (agent_id,),
        )
        return [action_from_columns(r) for r in self.cur.fetchall()]

    def insert_consumption(self, agent_id: str, action_id: str, by: str, at: float) -> bool:
        self.cur.execute(
            "INSERT INTO consumptions VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (agent_id, action_id, by, at),
        )
        return self.cur.rowcount == 1

    def _lock_meta(self) -> None:
        if self._write and not self._meta_locked:
            self.cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_META,))
            self._meta_locked = True

    def get_meta(self, key: str) -> str | None:
        self._lock_meta()
        row = self._one("SELECT value FROM meta WHERE key = %s", (key,))
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._lock_meta()
        self.cur.execute(
            "INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
            "SET value = EXCLUDED.value",
            (key, value),
        )

    def idem_get(self, key: str) -> IdemRecord | None:
        row = self._one(f"SELECT {_IDEM_COLUMNS} FROM idempotency WHERE key = %s", (key,))
        if row is None:
            return None
        return IdemRecord(
            key=row[0],
            status=row[1],
            payload_hash=row[2],
            owner=row[3],
            lease_expires=row[4],
            expires_at=row[5],
            result_json=row[6],
            action_id=row[7],
            agent_id=row[8],
        )

    def idem_put(self, record: IdemRecord) -> None:
        self.cur.execute(
            f"INSERT INTO idempotency ({_IDEM_COLUMNS}) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
            "status = EXCLUDED.status, payload_hash = EXCLUDED.payload_hash, "
            "owner = EXCLUDED.owner, lease_expires = EXCLUDED.lease_expires, "
            "expires_at = EXCLUDED.expires_at, result = EXCLUDED.result, "
            "action_id = EXCLUDED.action_id, agent_id = EXCLUDED.agent_id",
            (
                record.key,
                record.status,
                record.payload_hash,
                record.owner,
                record.lease_expires,
                record.expires_at,
                record.result_json,
                record.action_id,
                record.agent_id,
            ),
        )

    def idem_delete(self, key: str) -> None:
        self.cur.execute("DELETE FROM idempotency WHERE key = %s", (key,))

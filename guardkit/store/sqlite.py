"""SQLite backend: WAL, one writer at a time across processes, every commit fsynced by default.

Several processes may share one database file (an agent, a monitor, the operator CLI). Writers are
serialised with an OS file lock (``fcntl.flock`` on ``<db>.lock``) around ``BEGIN IMMEDIATE``:
SQLite's own busy handler lets one writer starve another for seconds under load, the lock gives
an even split. Readers never take it (WAL lets them read while a writer writes).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from guardkit.errors import NotFound, StoreError
from guardkit.policy import Policy
from guardkit.protocols import IdemRecord
from guardkit.store._errors import translate_errors
from guardkit.store._rows import action_from_columns, action_values, agent_values, reason_json
from guardkit.store.base import ActionRow, AgentState, Store, Transaction
from guardkit.store.chain import Record, Signer

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agents (
    agent_id TEXT PRIMARY KEY, parent_id TEXT, policy TEXT NOT NULL, public_key TEXT,
    spent INTEGER NOT NULL, scar_score INTEGER NOT NULL, alive INTEGER NOT NULL,
    termination_reason TEXT, next_action INTEGER NOT NULL, head_seq INTEGER NOT NULL,
    head_hash TEXT NOT NULL, actions_allowed INTEGER NOT NULL, actions_denied INTEGER NOT NULL,
    actions_pending INTEGER NOT NULL, tool_counts TEXT NOT NULL, scars TEXT NOT NULL,
    recent_allowed TEXT NOT NULL, created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS agents_parent ON agents(parent_id);
CREATE TABLE IF NOT EXISTS records (
    agent_id TEXT NOT NULL, seq INTEGER NOT NULL, timestamp TEXT NOT NULL, actor TEXT NOT NULL,
    kind TEXT NOT NULL, payload TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
    signature TEXT, PRIMARY KEY (agent_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS actions (
    agent_id TEXT NOT NULL, number INTEGER NOT NULL, tool TEXT NOT NULL, input TEXT NOT NULL,
    input_sha256 TEXT NOT NULL, cost INTEGER NOT NULL, status TEXT NOT NULL, outcome TEXT,
    reason TEXT, requested_at REAL NOT NULL, requested_seq INTEGER NOT NULL, allowed_at REAL,
    approved_by TEXT, PRIMARY KEY (agent_id, number)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS actions_pending ON actions(agent_id, number)
    WHERE status = 'pending_approval';
CREATE TABLE IF NOT EXISTS consumptions (
    agent_id TEXT NOT NULL, action_id TEXT NOT NULL, consumed_by TEXT NOT NULL,
    consumed_at REAL NOT NULL, PRIMARY KEY (agent_id, action_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, status TEXT NOT NULL, payload_hash TEXT NOT NULL, owner TEXT NOT NULL,
    lease_expires REAL NOT NULL, expires_at REAL, result TEXT, action_id TEXT, agent_id TEXT);
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


class SQLiteStore(Store):
    """The default store: ``SQLiteStore(":memory:")`` or ``SQLiteStore("guardkit.db")``.

    ``durability="full"`` (default) fsyncs every commit (``synchronous=FULL``: power-loss safe);
    ``"normal"`` survives a process crash but may lose the last commits on a power cut.
    """

    def __init__(
        self, path: str, *, signer: Signer | None = None, durability: str = "full"
    ) -> None:
        super().__init__(signer)
        if durability not in ("full", "normal"):
            raise ValueError("durability must be 'full' or 'normal'")
        self.location = path
        self._memory = path == ":memory:" or path.startswith("file::memory:")
        self._mutex = threading.RLock()
        self._lock_fd: int | None = None
        self._policies: dict[str, Policy] = {}
        # Agent states and action rows as of our last commit. They stay valid until another
        # connection commits, which ``PRAGMA data_version`` tells us at the start of every
        # transaction; a rollback drops them. This saves re-reading the row on every decision.
        self._cache = _Cache()
        self._data_version = -1
        try:
            with translate_errors(path):
                self._conn = sqlite3.connect(
                    path, isolation_level=None, check_same_thread=False, timeout=30.0
                )
                if not self._memory:
                    self._lock_fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
                self._conn.execute("PRAGMA busy_timeout=30000")
                with self._writer_lock():
                    self._conn.executescript(_SCHEMA)
        except BaseException:
            # A file that is not a database (or is locked, or unreadable) must not leak the
            # connection and the lock file's descriptor: a server retrying the open would.
            if getattr(self, "_conn", None) is not None:
                self._conn.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
            raise

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        if self._lock_fd is None:
            yield
            return
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        conn = self._conn
        with self._mutex:
            locked = write and self._lock_fd is not None
            try:
                if locked:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_EX)  # type: ignore[arg-type]
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                version = conn.execute("PRAGMA data_version").fetchone()[0]
            except (sqlite3.Error, OSError) as exc:
                self._release(locked)
                raise StoreError(f"store {self.location}: {exc}") from exc
            if version != self._data_version:
                self._cache.clear()
                self._data_version = version
            tx = _SQLiteTransaction(conn, self.signer, self._policies, self._cache)
            try:
                yield tx
                with translate_errors(self.location):
                    if write:
                        tx.flush()
                    conn.execute("COMMIT")
            except BaseException:
                self._cache.clear()
                if conn.in_transaction:
                    with translate_errors(self.location):
                        conn.execute("ROLLBACK")
                raise
            finally:
                self._release(locked)

    def _release(self, locked: bool) -> None:
        if locked:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)  # type: ignore[arg-type]

    def close(self) -> None:
        with self._mutex:
            self._conn.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None


class _Cache:
    """Committed agent states and recent action rows, owned by one store connection."""

    _MAX_ACTIONS = 4096

    def __init__(self) -> None:
        self.agents: dict[str, AgentState] = {}
        self.actions: dict[tuple[str, int], ActionRow] = {}

    def clear(self) -> None:
        self.agents.clear()
        self.actions.clear()

    def keep_actions(self, rows: list[ActionRow]) -> None:
        for row in rows:
            self.actions[(row.agent_id, row.number)] = row
        if len(self.actions) > self._MAX_ACTIONS:
            for key in list(self.actions)[: len(self.actions) - self._MAX_ACTIONS // 2]:
                del self.actions[key]


class _SQLiteTransaction(Transaction):
    def __init__(
        self,
        conn: sqlite3.Connection,
        signer: Signer | None,
        policies: dict[str, Policy],
        cache: _Cache,
    ) -> None:
        super().__init__(signer)
        self._conn = conn
        self._policies = policies
        self._cache = cache

    def _policy(self, text: str) -> Policy:
        # Policies never change, so each distinct text is parsed once per store.
        policy = self._policies.get(text)
        if policy is None:
            policy = self._policies[text] = Policy.from_json(text)
        return policy

    def _load_agent(self, agent_id: str) -> AgentState:
        cached = self._cache.agents.get(agent_id)
        if cached is not None:
            return cached
        state = self._select_agent(agent_id)
        self._cache.agents[agent_id] = state
        return state

    def _select_agent(self, agent_id: str) -> AgentState:
        row = self._conn.execute(
            f"SELECT {_AGENT_COLUMNS} FROM agents WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"unknown agent {agent_id!r}")
        return AgentState(
            agent_id=agent_id,
            parent_id=row[0],
            policy=self._policy(row[1]),
            public_key=row[2],
            spent=row[3],
            scar_score=row[4],
            alive=bool(row[5]),
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
        from guardkit._canonical import canonical_json

        self._conn.execute(
            f"INSERT INTO agents (agent_id, {_AGENT_COLUMNS}) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                state.agent_id,
                state.parent_id,
                canonical_json(state.policy.to_dict()),
                state.public_key,
                *agent_values(state),
                state.created_at,
            ),
        )

    def _save_agent(self, state: AgentState) -> None:
        self._conn.execute(
            "UPDATE agents SET spent=?, scar_score=?, alive=?, termination_reason=?, "
            "next_action=?, head_seq=?, head_hash=?, actions_allowed=?, actions_denied=?, "
            "actions_pending=?, tool_counts=?, scars=?, recent_allowed=? WHERE agent_id=?",
            (*agent_values(state), state.agent_id),
        )

    def _write_records(self, records: list[tuple[str, Record]]) -> None:
        self._conn.executemany(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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

    def agent_exists(self, agent_id: str) -> bool:
        return (
            self._conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone()
            is not None
        )

    def agent_ids(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT agent_id FROM agents ORDER BY agent_id")]

    def children(self, agent_id: str) -> list[str]:
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT agent_id FROM agents WHERE parent_id = ? ORDER BY agent_id", (agent_id,)
            )
        ]

    def _read_records(self, agent_id: str, after: int | None, limit: int | None) -> list[Record]:
        rows = self._conn.execute(
            "SELECT seq, timestamp, actor, kind, payload, prev_hash, hash, signature FROM records"
            " WHERE agent_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (agent_id, -1 if after is None else after, -1 if limit is None else limit),
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
            for r in rows
        ]

    def _write_actions(self, rows: list[ActionRow]) -> None:
        self._cache.keep_actions(rows)
        for row in rows:
            if row.stored:
                self._conn.execute(
                    "UPDATE actions SET status=?, outcome=?, reason=?, allowed_at=?, approved_by=? "
                    "WHERE agent_id=? AND number=?",
                    (
                        row.status,
                        row.outcome,
                        reason_json(row),
                        row.allowed_at,
                        row.approved_by,
                        row.agent_id,
                        row.number,
                    ),
                )
            else:
                self._conn.execute(
                    f"INSERT INTO actions ({_ACTION_COLUMNS}) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    action_values(row),
                )

    def _read_action(self, agent_id: str, number: int) -> ActionRow | None:
        cached = self._cache.actions.get((agent_id, number))
        if cached is not None:
            return cached
        r = self._conn.execute(
            f"SELECT {_ACTION_COLUMNS} FROM actions WHERE agent_id = ? AND number = ?",
            (agent_id, number),
        ).fetchone()
        return None if r is None else action_from_columns(r)

    def _pending_actions(self, agent_id: str) -> list[ActionRow]:
        rows = self._conn.execute(
            f"SELECT {_ACTION_COLUMNS} FROM actions WHERE agent_id = ? AND "
            "status = 'pending_approval' ORDER BY number",
            (agent_id,),
        )
        return [action_from_columns(r) for r in rows]

    def insert_consumption(self, agent_id: str, action_id: str, by: str, at: float) -> bool:
        cur = self._conn.execute(
            "INSERT OR IGNORE INTO consumptions VALUES (?, ?, ?, ?)", (agent_id, action_id, by, at)
        )
        return cur.rowcount == 1

    def get_meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def idem_get(self, key: str) -> IdemRecord | None:
        r = self._conn.execute(
            "SELECT key, status, payload_hash, owner, lease_expires, expires_at, result, "
            "action_id, agent_id FROM idempotency WHERE key = ?",
            (key,),
        ).fetchone()
        if r is None:
            return None
        return IdemRecord(
            key=r[0],
            status=r[1],
            payload_hash=r[2],
            owner=r[3],
            lease_expires=r[4],
            expires_at=r[5],
            result_json=r[6],
            action_id=r[7],
            agent_id=r[8],
        )

    def idem_put(self, record: IdemRecord) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO idempotency VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        self._conn.execute("DELETE FROM idempotency WHERE key = ?", (key,))

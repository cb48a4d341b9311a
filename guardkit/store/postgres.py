"""PostgreSQL backend (psycopg 3): many guard processes on many hosts share one database.

Same tables and semantics as the SQLite store (``ledger text`` is kept byte for byte, so hashes
and signatures verify identically). Per-agent serialisation is a row lock: a write transaction
locks the agent's row with ``SELECT ... FOR UPDATE`` before it reads the ledger's head, so
budgets, call caps, rate limits, action ids and the hash chain stay exact however many servers
decide for the same agent at once, while different agents proceed in parallel. Reading or
creating ``meta`` values in a write transaction takes a transaction-scoped advisory lock, so two
servers starting at once agree on one token key. Connections come from a small pool; each commit
is durable (``synchronous_commit`` as the server is configured, ``on`` by default).
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from guardkit.store._errors import translate_errors
from guardkit.store.base import Store, Transaction
from guardkit.store.chain import GENESIS_PREV, Signer
from guardkit.store.schema import POSTGRES
from guardkit.store.sql import SQLTransaction, Statements
from guardkit.store.witness import Witness

__all__ = ["PostgresStore"]

_LOCK_SCHEMA = 0x6775_6172  # advisory lock keys ("guar", "meta")
_LOCK_META = 0x6D65_7461
_STATEMENTS = Statements(POSTGRES)
_LOCK_AGENT = "SELECT 1 FROM agents WHERE agent_id = %s FOR UPDATE"
_LOCK_AGENTS = (
    'SELECT agent_id FROM agents WHERE agent_id = ANY(%s) ORDER BY agent_id COLLATE "C" FOR UPDATE'
)
_HEADS = (
    "SELECT a.id, r.seq, r.hash FROM unnest(%s::text[]) AS a(id) LEFT JOIN LATERAL "
    "(SELECT seq, hash FROM records WHERE agent_id = a.id ORDER BY seq DESC LIMIT 1) r ON true"
)


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


class PostgresStore(Store):
    """``PostgresStore("postgresql://user:pass@host/db")``; ``pool_size`` connections at most.

    ``witness`` (a file path on a disk the database host cannot write, or any ``Witness``)
    receives every commit's heads; none by default, since a database server has no file beside
    it that its clients share.
    """

    parallel_writers = True

    def __init__(
        self,
        url: str,
        *,
        signer: Signer | None = None,
        public_key: Any = None,
        pool_size: int = 8,
        witness: str | Witness | None = None,
    ) -> None:
        super().__init__(signer, public_key=public_key)
        self.url = url
        self.location = _redact(url)
        self._pool: queue.LifoQueue[psycopg.Connection[Any]] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(pool_size)
        self._closed = False
        with self.transaction() as tx:
            assert isinstance(tx, _PgTransaction)
            tx.cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_SCHEMA,))
            self.schema_found = tx.upgrade()
            self.open_witness(tx, witness)

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
                if self.witness is not None:
                    self.witness.refresh()  # before the snapshot: see Transaction._witnessed
                conn = self._connect()
                with conn.cursor() as cur:
                    tx = _PgTransaction(self, cur, write=write)
                    try:
                        yield tx
                        if write:
                            tx.flush()
                        conn.commit()
                    except BaseException:
                        tx.aborted()
                        if not conn.closed:
                            conn.rollback()
                        raise
                    else:
                        tx.committed()
                        tx.witnessed()
        finally:
            if conn is not None and not conn.closed and not conn.broken and not self._closed:
                self._pool.put(conn)
            elif conn is not None:
                conn.close()
            self._slots.release()

    def close(self) -> None:
        self._closed = True
        self.close_witness()
        while True:
            try:
                self._pool.get_nowait().close()
            except queue.Empty:
                return


class _PgTransaction(SQLTransaction):
    __slots__ = ("_heads", "_meta_locked", "cur")
    q = _STATEMENTS

    def __init__(self, store: PostgresStore, cur: psycopg.Cursor[Any], *, write: bool) -> None:
        super().__init__(store, write=write)
        self.cur = cur
        self._meta_locked = False
        #: Heads read for agents this write transaction locked ahead (``prefetch``).
        self._heads: dict[str, tuple[int, str]] = {}

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        self.cur.execute(sql, params)
        return self.cur.rowcount

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any] | None:
        self.cur.execute(sql, params)
        row: Sequence[Any] | None = self.cur.fetchone()
        return row

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Sequence[Any]]:
        self.cur.execute(sql, params)
        return list(self.cur.fetchall())

    def _many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.cur.executemany(sql, rows)

    def prefetch(self, agent_ids: list[str]) -> None:
        """Lock a batch's agents in one statement (in a fixed order, so two batches never
        deadlock on them) and read their heads in one more."""
        if not self.write or not agent_ids:
            return
        locked = [row[0] for row in self._all(_LOCK_AGENTS, (agent_ids,))]
        for agent_id, seq, digest in self._all(_HEADS, (locked,)):
            self._heads[agent_id] = (-1, GENESIS_PREV) if seq is None else (seq, digest)

    def _head(self, agent_id: str) -> tuple[int, str] | None:
        if not self.write:
            return super()._head(agent_id)
        ahead = self._heads.pop(agent_id, None)
        if ahead is not None:
            return ahead
        # Lock first, then read the head in a statement of its own: under READ COMMITTED a
        # statement that waited for the lock still reads the snapshot it started with.
        if self._one(_LOCK_AGENT, (agent_id,)) is None:
            return None
        row = self._one(self.q.last, (agent_id,))
        return (-1, GENESIS_PREV) if row is None else (row[0], row[1])

    def _lock_meta(self) -> None:
        if self.write and not self._meta_locked:
            self.cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_META,))
            self._meta_locked = True

    def get_meta(self, key: str) -> str | None:
        self._lock_meta()
        return super().get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self._lock_meta()
        super().set_meta(key, value)

"""SQLite backend: WAL, one writer at a time across processes, every commit fsynced by default.

Several processes may share one database file (an agent, a monitor, the operator CLI). Writers are
serialised with an OS file lock (``fcntl.flock`` on ``<db>.lock``) around ``BEGIN IMMEDIATE``:
SQLite's own busy handler lets one writer starve another for seconds under load, the lock gives
an even split. Readers never take it (WAL lets them read while a writer writes).

The database, its WAL and shared-memory files and the lock file are created readable by their
owner only (0600): they hold every agent's inputs. ``PRAGMA data_version`` tells a process
whether another connection committed since its last transaction; only then does it look at the
heads of the ledgers it uses, so the hot path reads nothing.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from guardkit.errors import StoreError
from guardkit.store._errors import translate_errors
from guardkit.store.base import Store, Transaction
from guardkit.store.chain import Signer
from guardkit.store.schema import SQLITE
from guardkit.store.sql import SQLTransaction, Statements
from guardkit.store.witness import FileWitness, Witness

__all__ = ["SQLiteStore"]

_STATEMENTS = Statements(SQLITE)
_new_object: Any = object.__new__


def _create_private(path: str) -> None:
    """Create the database file 0600 before SQLite does (SQLite gives its WAL the same mode)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class SQLiteStore(Store):
    """The default store: ``SQLiteStore(":memory:")`` or ``SQLiteStore("guardkit.db")``.

    ``durability="full"`` (default) fsyncs every commit (``synchronous=FULL``: power-loss safe);
    ``"normal"`` survives a process crash but may lose the last commits on a power cut.
    ``witness``: where every commit's heads also go (``guardkit.store.witness``): by default the
    file ``<db>.witness`` beside the database, another path, any ``Witness``, or None (none).
    """

    def __init__(
        self,
        path: str,
        *,
        signer: Signer | None = None,
        public_key: Any = None,
        durability: str = "full",
        witness: str | Witness | None = "auto",
    ) -> None:
        super().__init__(signer, public_key=public_key)
        if durability not in ("full", "normal"):
            raise ValueError("durability must be 'full' or 'normal'")
        self.location = path
        self._memory = path == ":memory:" or path.startswith("file::memory:")
        if witness == "auto":
            witness = None if self._memory else path + ".witness"
        self.sync_witness = durability == "full"
        self._mutex = threading.RLock()
        self._lock_fd: int | None = None
        #: ``PRAGMA data_version`` at which each cached agent was last reconciled.
        self.checked: dict[str, int] = {}
        try:
            with translate_errors(path):
                if not self._memory:
                    _create_private(path)
                self._conn = sqlite3.connect(
                    path, isolation_level=None, check_same_thread=False, timeout=30.0
                )
                # One cursor for every statement: a transaction is serialised by the mutex.
                self._cursor = self._conn.cursor()
                if not self._memory:
                    self._lock_fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
                self._conn.execute("PRAGMA busy_timeout=30000")
                with self.transaction() as tx:
                    assert isinstance(tx, SQLTransaction)
                    self.schema_found = tx.upgrade()
                    self.open_witness(tx, witness)
            if isinstance(self.witness, FileWitness) and self._lock_fd is not None:
                self.witness.exclusive = True  # appended under the flock, after a refresh
        except BaseException:
            self.close_witness()
            # A file that is not a database (or is locked, or unreadable) must not leak the
            # connection and the lock file's descriptor: a server retrying the open would.
            if getattr(self, "_conn", None) is not None:
                self._conn.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
            raise

    def transaction(self, *, write: bool = True) -> _SQLiteTransaction:
        # The class's call, without type.__call__'s __init__ slot (an argument tuple and a
        # keyword dict built a call): every decision opens one.
        tx: _SQLiteTransaction = _new_object(_SQLiteTransaction)
        Transaction.__init__(tx, self, write=write)
        return tx

    def close(self) -> None:
        with self._mutex:
            self._conn.close()
            self.close_witness()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None


class _SQLiteTransaction(SQLTransaction):
    """A transaction, and its own ``with`` block (one object per decision, not two).

    Its own fields are set when it is entered (an ``__init__`` of its own would be one more
    Python call a decision); nothing uses a transaction before that.
    """

    __slots__ = ("_checks", "_cur", "_locked", "_version")
    q = _STATEMENTS

    def __enter__(self) -> _SQLiteTransaction:
        store: SQLiteStore = self.store  # type: ignore[assignment]
        self._cur = store._cursor
        self._checks = store.checked
        self._locked = self.write and store._lock_fd is not None
        self._version = -1
        store._mutex.acquire()
        try:
            if self._locked:
                fcntl.flock(store._lock_fd, fcntl.LOCK_EX)  # type: ignore[arg-type]
            if store.witness is not None:
                store.witness.refresh()  # before the snapshot: see Transaction._witnessed
            self._cur.execute("BEGIN IMMEDIATE" if self.write else "BEGIN")
            self._version = self._cur.execute("PRAGMA data_version").fetchone()[0]
        except (sqlite3.Error, OSError) as exc:
            self._unlock()
            raise StoreError(f"store {store.location}: {exc}") from exc
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        store: SQLiteStore = self.store  # type: ignore[assignment]
        try:
            if kind is None:
                try:
                    if self._records or self._events:
                        self.flush()
                    self._cur.execute("COMMIT")
                except BaseException as exc:
                    self._abort()
                    if isinstance(exc, sqlite3.Error):
                        raise StoreError(f"store {store.location}: {exc}") from exc
                    raise
                # committed(), spelt out (no agent locks here: one writer at a time).
                self.done = True
                for state in self._loaded.values():
                    state.dirty = False
                if self._witnessing:
                    # Under the writer lock, in commit order; made durable by witnessed().
                    store.witness.append(self._witnessing, sync=False)  # type: ignore[union-attr]
            else:
                self._abort()
        finally:
            # _unlock, spelt out: this runs for every decision.
            if self._locked:
                fcntl.flock(store._lock_fd, fcntl.LOCK_UN)  # type: ignore[arg-type]
            store._mutex.release()
        # Made durable once the next writer may go on: its commit overlaps this fsync. (The
        # test is witnessed()'s own, made here so that a commit with nothing to sync makes no
        # call.)
        if self._witnessing and store.sync_witness:
            self.witnessed()

    def _abort(self) -> None:
        self.aborted()
        store: SQLiteStore = self.store  # type: ignore[assignment]
        if store._conn.in_transaction:
            with translate_errors(store.location):
                self._cur.execute("ROLLBACK")

    def _unlock(self) -> None:
        store: SQLiteStore = self.store  # type: ignore[assignment]
        if self._locked:
            fcntl.flock(store._lock_fd, fcntl.LOCK_UN)  # type: ignore[arg-type]
        store._mutex.release()

    def _fresh(self, agent_id: str) -> bool:
        # data_version changes only when another connection commits; our own commits keep it.
        return self._checks.get(agent_id) == self._version

    def _checked(self, agent_id: str) -> None:
        self._checks[agent_id] = self._version

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._cur.execute(sql, params).rowcount

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any] | None:
        row: Sequence[Any] | None = self._cur.execute(sql, params).fetchone()
        return row

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Sequence[Any]]:
        return list(self._cur.execute(sql, params).fetchall())

    def _many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self._cur.executemany(sql, rows)

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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from guardkit.errors import StoreError
from guardkit.store._errors import translate_errors
from guardkit.store.base import Store, Transaction
from guardkit.store.chain import Signer
from guardkit.store.schema import SQLITE
from guardkit.store.sql import SQLTransaction, Statements

__all__ = ["SQLiteStore"]

_STATEMENTS = Statements(SQLITE)


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
    """

    def __init__(
        self,
        path: str,
        *,
        signer: Signer | None = None,
        public_key: Any = None,
        durability: str = "full",
    ) -> None:
        super().__init__(signer, public_key=public_key)
        if durability not in ("full", "normal"):
            raise ValueError("durability must be 'full' or 'normal'")
        self.location = path
        self._memory = path == ":memory:" or path.startswith("file::memory:")
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
                if not self._memory:
                    self._lock_fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
                self._conn.execute("PRAGMA busy_timeout=30000")
                with self.transaction() as tx:
                    assert isinstance(tx, SQLTransaction)
                    self.schema_found = tx.upgrade()
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
            tx = _SQLiteTransaction(self, conn, version, write=write)
            try:
                yield tx
                with translate_errors(self.location):
                    if write:
                        tx.flush()
                    conn.execute("COMMIT")
            except BaseException:
                tx.aborted()
                if conn.in_transaction:
                    with translate_errors(self.location):
                        conn.execute("ROLLBACK")
                raise
            else:
                tx.committed()
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


class _SQLiteTransaction(SQLTransaction):
    def __init__(
        self, store: SQLiteStore, conn: sqlite3.Connection, version: int, *, write: bool
    ) -> None:
        super().__init__(store, _STATEMENTS, write=write)
        self._conn = conn
        self._version = version
        self._checks = store.checked

    def _fresh(self, agent_id: str) -> bool:
        # data_version changes only when another connection commits; our own commits keep it.
        return self._checks.get(agent_id) == self._version

    def _checked(self, agent_id: str) -> None:
        self._checks[agent_id] = self._version

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any] | None:
        row: Sequence[Any] | None = self._conn.execute(sql, params).fetchone()
        return row

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Sequence[Any]]:
        return list(self._conn.execute(sql, params).fetchall())

    def _many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self._conn.executemany(sql, rows)

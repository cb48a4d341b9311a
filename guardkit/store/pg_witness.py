"""A head witness in another PostgreSQL database: ``witness="postgresql://..."``.

Every commit's heads are inserted (one transaction, committed before the caller is answered)
into the table ``guardkit_witness`` of a database on a second server, one the database's host
cannot write; each store's rows carry its id (``meta.witness_id``), so many stores may share the
table. Before every transaction the store reads the rows added since it last looked, so a ledger
behind them, or with another hash at a witnessed seq, is quarantined as with the file witness. A
store that had this witness refuses to open when its rows are gone or fewer than it last saw.
"""

from __future__ import annotations

from typing import Any

from guardkit.errors import StoreError
from guardkit.store.witness import Entry, Witness

__all__ = ["PostgresWitness"]

_TABLE = (
    "CREATE TABLE IF NOT EXISTS guardkit_witness (id BIGINT GENERATED ALWAYS AS IDENTITY "
    "PRIMARY KEY, store TEXT NOT NULL, agent_id TEXT NOT NULL, seq BIGINT NOT NULL, "
    "hash TEXT NOT NULL, signature TEXT)"
)
_INSERT = (
    "INSERT INTO guardkit_witness (store, agent_id, seq, hash, signature) "
    "VALUES (%s, %s, %s, %s, %s)"
)
_NEWER = (
    "SELECT id, agent_id, seq, hash FROM guardkit_witness WHERE store = %s AND id > %s ORDER BY id"
)


def location_of(url: str) -> str:
    """The URL without its credentials (it is stored in the database and shown in messages)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}"


class PostgresWitness(Witness):
    """Heads in a table of another PostgreSQL database (see the module's docstring)."""

    def __init__(self, url: str, store_id: str, *, existed: bool = False, size: int = 0) -> None:
        super().__init__()
        import psycopg

        self.location = location_of(url)
        self._store = store_id
        self._last = 0
        self._rows = 0
        try:
            self._conn: Any = psycopg.connect(url, autocommit=True, connect_timeout=10)
            self._conn.execute(_TABLE)
            self.refresh()
        except psycopg.Error as exc:
            raise StoreError(f"the head witness {self.location}: {exc}") from exc
        if existed and self._rows < size:
            self._conn.close()
            raise StoreError(
                f"the head witness {self.location} holds {self._rows} heads of this store, but "
                f"the store saw {size}: its rows were deleted, or another database was put in "
                "its place; restore them (or open the store with witness=None to audit it)"
            )

    def refresh(self) -> None:
        import psycopg

        try:
            rows = self._conn.execute(_NEWER, (self._store, self._last)).fetchall()
        except psycopg.Error as exc:
            raise StoreError(f"the head witness {self.location}: {exc}") from exc
        for row_id, agent_id, seq, digest in rows:
            self._note(str(agent_id), int(seq), str(digest))
            self._last = int(row_id)
        self._rows += len(rows)

    @property
    def size(self) -> int:
        """How many heads of this store the table held when last read."""
        return self._rows

    def append(self, heads: list[Entry], *, sync: bool) -> None:
        import psycopg

        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.executemany(_INSERT, [(self._store, *head) for head in heads])
        except psycopg.Error as exc:
            raise StoreError(
                f"the head witness {self.location} could not be written ({exc}); the decision "
                "is committed but not witnessed, and was not returned: fix the witness"
            ) from exc
        for agent_id, seq, digest, _ in heads:
            self._note(agent_id, seq, digest)

    def close(self) -> None:
        self._conn.close()

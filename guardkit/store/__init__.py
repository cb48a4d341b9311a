"""Durable stores for the guard's ledger: ``open_store(url)`` picks the backend."""

from __future__ import annotations

from typing import Any

from guardkit.errors import StoreError
from guardkit.protocols import IdemRecord
from guardkit.store.base import Store, Transaction
from guardkit.store.chain import Checkpoint, Record, Signer, fingerprint
from guardkit.store.export import verify_export
from guardkit.store.state import ActionRow, AgentState
from guardkit.store.witness import FileWitness, Witness

__all__ = [
    "ActionRow",
    "AgentState",
    "Checkpoint",
    "IdemRecord",
    "Record",
    "Signer",
    "Store",
    "StoreError",
    "Transaction",
    "FileWitness",
    "Witness",
    "fingerprint",
    "open_store",
    "verify_export",
]


def open_store(
    url: str | Store,
    *,
    signing_key: Any = None,
    public_key: Any = None,
    durability: str = "full",
    witness: str | Witness | None = "auto",
) -> Store:
    """Open ``":memory:"`` (in-process), a SQLite path, ``sqlite:///PATH`` or ``postgresql://``.

    ``signing_key`` signs new records and pins its own public key; ``public_key`` (hex, raw
    bytes or a file holding the hex) pins a key without signing: every ledger must then be
    signed by it, and one signed by any other key is quarantined when it is opened.

    ``witness`` is where every commit's heads also go, outside the database (see
    ``guardkit.store.witness``): ``"auto"`` is the file ``<db>.witness`` beside a SQLite file
    (none in memory or on PostgreSQL), a path puts it elsewhere, ``"postgresql://..."`` in a
    table of another database (``guardkit.store.pg_witness``), ``"cmd:PROGRAM ARGS"`` on a
    program's stdin (``CommandWitness``), any ``Witness`` publishes it your way, None turns it
    off (to audit a store whose witness is gone).
    """
    if isinstance(url, Store):
        return url
    signer = Signer(signing_key) if signing_key is not None else None
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from guardkit.store.postgres import PostgresStore  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise StoreError(
                "the PostgreSQL store needs psycopg: pip install 'guardkit[postgres]'"
            ) from exc
        pg_witness = None if witness == "auto" else witness
        store: Store = PostgresStore(url, signer=signer, public_key=public_key, witness=pg_witness)
        return store
    if url == ":memory:":
        from guardkit.store.memory import MemoryStore

        return MemoryStore(signer=signer, public_key=public_key)
    from guardkit.store.sqlite import SQLiteStore

    # sqlite:///:memory: is SQLite's own in-memory database; sqlite:///relative.db and
    # sqlite:////absolute/path.db are spelt as SQLAlchemy spells them.
    path = url.removeprefix("sqlite:///")
    return SQLiteStore(
        path, signer=signer, public_key=public_key, durability=durability, witness=witness
    )

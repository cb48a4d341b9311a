"""Durable stores for the guard's ledger: ``open_store(url)`` picks the backend."""

from __future__ import annotations

from typing import Any

from guardkit.errors import StoreError
from guardkit.protocols import IdemRecord
from guardkit.store.base import ActionRow, AgentState, Store, Transaction
from guardkit.store.chain import Record, Signer

__all__ = [
    "ActionRow",
    "AgentState",
    "IdemRecord",
    "Record",
    "Signer",
    "Store",
    "StoreError",
    "Transaction",
    "open_store",
]


def open_store(url: str | Store, *, signing_key: Any = None, durability: str = "full") -> Store:
    """Open ``":memory:"`` (in-process), a SQLite path, ``sqlite:///PATH`` or ``postgresql://``."""
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
        store: Store = PostgresStore(url, signer=signer)
        return store
    if url == ":memory:":
        from guardkit.store.memory import MemoryStore

        return MemoryStore(signer=signer)
    from guardkit.store.sqlite import SQLiteStore

    # sqlite:///:memory: is SQLite's own in-memory database; sqlite:///relative.db and
    # sqlite:////absolute/path.db are spelt as SQLAlchemy spells them.
    path = url.removeprefix("sqlite:///")
    return SQLiteStore(path, signer=signer, durability=durability)

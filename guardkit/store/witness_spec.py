"""Which witness a store's ``witness=`` names, opened against what the store remembers of it."""

from __future__ import annotations

import uuid
from typing import Protocol

from guardkit.store.witness import CommandWitness, FileWitness, Witness

__all__ = ["witness_for"]


class _Meta(Protocol):
    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


def witness_for(spec: str, meta: _Meta) -> Witness:
    """The witness ``spec`` names (``cmd:<command>``, a PostgreSQL URL, else a file path),
    opened against what the store's ``meta`` remembers of its witness: a file it had must still
    be there, and no shorter than it was."""
    if spec.startswith("cmd:"):
        return CommandWitness(spec.removeprefix("cmd:"))
    size = int(meta.get_meta("witness_size") or 0)
    if spec.startswith(("postgresql://", "postgres://")):
        from guardkit.store.pg_witness import PostgresWitness, location_of

        # The same witness as last time (a store moving to this one starts it afresh).
        existed = meta.get_meta("witness") == location_of(spec)
        ident = meta.get_meta("witness_id") or uuid.uuid4().hex
        meta.set_meta("witness_id", ident)
        return PostgresWitness(spec, ident, existed=existed, size=size)
    return FileWitness(spec, existed=meta.get_meta("witness") is not None, size=size)

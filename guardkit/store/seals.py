"""Seals on idempotency records: an HMAC under a key derived from the signing key.

Idempotency records hold what no ledger record holds (a tool's stored result, the decision an
``Idempotency-Key`` replays), so they cannot be checked against the chain; instead each one
carries ``kid:hmac`` over all its fields, checked whenever it is read. With a signing key the
HMAC key is derived from it and never stored, so whoever can write the database still cannot
forge a seal; without one it is a fixed key, a checksum that only catches careless edits (as
the hash chain of an unsigned ledger does).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from guardkit._canonical import canonical_json
from guardkit.protocols import IdemRecord
from guardkit.store.chain import Signer

__all__ = ["IDEM_FIELDS", "Seals", "idem_values"]

#: An idempotency record's fields, in the order they are sealed and stored.
IDEM_FIELDS = (
    "key",
    "status",
    "payload_hash",
    "owner",
    "lease_expires",
    "expires_at",
    "result_json",
    "action_id",
    "agent_id",
)


def idem_values(record: IdemRecord) -> tuple[Any, ...]:
    return tuple(getattr(record, name) for name in IDEM_FIELDS)


_UNSIGNED_KEY = b"guardkit-idempotency-seal-unsigned-v1"


class Seals:
    """Seal and check idempotency records for one store."""

    def __init__(self, signer: Signer | None) -> None:
        self._key = signer.derive(b"idempotency-seal") if signer is not None else _UNSIGNED_KEY
        #: Which key sealed a record (so a mismatch can say "another key", not just "edited").
        self.kid = hashlib.sha256(self._key).hexdigest()[:8]

    def seal(self, record: IdemRecord) -> str:
        return f"{self.kid}:{self._mac(record)}"

    def problem(self, record: IdemRecord, seal: str | None) -> str | None:
        """Why ``record`` cannot be trusted, or None."""
        kid, _, mac = (seal or "").partition(":")
        if kid != self.kid:
            return (
                f"idempotency record {record.key!r} is sealed under key {kid or '(none)'}, "
                f"not this store's {self.kid}: open the store with the signing key that wrote "
                "it, or the record was forged"
            )
        if not hmac.compare_digest(mac, self._mac(record)):
            return f"idempotency record {record.key!r} was edited after it was sealed"
        return None

    def _mac(self, record: IdemRecord) -> str:
        message = canonical_json(idem_values(record)).encode("utf-8")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

"""The hash chain of a ledger: Lineage's record hashing, optional Ed25519 signing, verification."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from guardkit._canonical import canonical_json
from guardkit.decisions import LedgerRecord, VerifyFailure

__all__ = ["GENESIS_PREV", "Record", "Signer", "format_timestamp", "seal", "verify_records"]

_DOMAIN = b"lineage-audit-v1\n"
GENESIS_PREV = "0" * 64
_dumps_str = json.JSONEncoder(ensure_ascii=False).encode


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One ledger line, in Lineage's format."""

    seq: int
    timestamp: str
    actor: str
    kind: str
    #: The payload's canonical JSON text (kept as text so it is hashed and stored once).
    payload_json: str
    prev_hash: str
    hash: str
    signature: str | None

    @property
    def payload(self) -> Any:
        return json.loads(self.payload_json)

    def to_dict(self) -> LedgerRecord:
        return {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "actor": self.actor,
            "kind": self.kind,
            "payload": self.payload,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
            "signature": self.signature,
        }


class Signer:
    """Ed25519 signing of record hashes; ``key`` is a private key, 32 raw bytes or their hex."""

    def __init__(self, key: Any) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        if isinstance(key, str):
            key = bytes.fromhex(key.strip())
        if isinstance(key, bytes):
            key = Ed25519PrivateKey.from_private_bytes(key)
        if not isinstance(key, Ed25519PrivateKey):
            raise TypeError("signing_key must be an Ed25519 private key, its raw bytes or hex")
        self._key = key
        self.public_key = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    @staticmethod
    def generate_hex() -> str:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            NoEncryption,
            PrivateFormat,
        )

        key = Ed25519PrivateKey.generate()
        return key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()).hex()

    def sign(self, digest_hex: str) -> str:
        return self._key.sign(bytes.fromhex(digest_hex)).hex()


_second_cache: list[Any] = [None, ""]


def format_timestamp(epoch: float) -> str:
    """RFC 3339 UTC with microseconds and a trailing Z."""
    seconds = int(epoch)
    micros = round((epoch - seconds) * 1_000_000)
    if micros >= 1_000_000:
        seconds, micros = seconds + 1, micros - 1_000_000
    # Formatting the date part is the slow step; it changes once a second.
    cached_second, prefix = _second_cache
    if cached_second != seconds:
        prefix = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second_cache[:] = [seconds, prefix]
    return f"{prefix}.{micros:06d}Z"


@functools.lru_cache(maxsize=4096)
def _json_str(text: str) -> str:
    """JSON text of a record's actor or kind: a few distinct values, encoded once each."""
    return _dumps_str(text)


def record_hash(
    seq: int, timestamp: str, actor: str, kind: str, payload_json: str, prev_hash: str
) -> str:
    # The envelope's keys in sorted order, with the payload's canonical text spliced in, is
    # byte-for-byte canonical_json({...}) without encoding the payload a second time.
    envelope = (
        f'{{"actor":{_json_str(actor)},"kind":{_json_str(kind)},"payload":{payload_json},'
        f'"prev_hash":"{prev_hash}","seq":{seq},"timestamp":"{timestamp}"}}'
    )
    return hashlib.sha256(_DOMAIN + envelope.encode("utf-8")).hexdigest()


def seal(
    *,
    seq: int,
    timestamp: str,
    actor: str,
    kind: str,
    payload_json: str,
    prev_hash: str,
    signer: Signer | None,
) -> Record:
    """Hash (and sign) a new record that follows ``prev_hash``."""
    digest = record_hash(seq, timestamp, actor, kind, payload_json, prev_hash)
    return Record(
        seq=seq,
        timestamp=timestamp,
        actor=actor,
        kind=kind,
        payload_json=payload_json,
        prev_hash=prev_hash,
        hash=digest,
        signature=signer.sign(digest) if signer else None,
    )


def verify_records(
    records: Iterable[Record], trusted_key: str | None = None
) -> tuple[int, VerifyFailure | None]:
    """Check a whole log; return ``(records seen, failure or None)``.

    A failure is ``{"line", "seq", "reason"}`` as Lineage's verifier reports it.
    """
    public_key: str | None = None
    prev = GENESIS_PREV
    count = 0
    for line, record in enumerate(records):
        count += 1
        problem = _check_one(line, record, prev)
        if problem is None and line == 0:
            public_key = json.loads(record.payload_json).get("public_key")
            if trusted_key is not None and public_key != trusted_key:
                problem = "genesis public key is not the trusted key"
        if problem is None:
            problem = _check_signature(record, public_key)
        if problem is not None:
            return count, {"line": line + 1, "seq": record.seq, "reason": problem}
        prev = record.hash
    if count == 0:
        return 0, {"line": 0, "seq": None, "reason": "empty log"}
    return count, None


def _check_one(line: int, record: Record, prev: str) -> str | None:
    if record.seq != line:
        return f"seq {record.seq} at line {line + 1}"
    if (record.kind == "genesis") != (line == 0):
        return "genesis record out of place"
    if record.prev_hash != prev:
        return "prev_hash does not match the previous record"
    try:
        payload = json.loads(record.payload_json)
        if canonical_json(payload) != record.payload_json:
            return "payload is not canonical JSON"
    except ValueError:
        return "payload is not JSON"
    expected = record_hash(
        record.seq,
        record.timestamp,
        record.actor,
        record.kind,
        record.payload_json,
        record.prev_hash,
    )
    if expected != record.hash:
        return "hash mismatch"
    return None


def _check_signature(record: Record, public_key: str | None) -> str | None:
    if public_key is None:
        return None if record.signature is None else "signed record in an unsigned log"
    if record.signature is None:
        return "missing signature"
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(
            bytes.fromhex(record.signature), bytes.fromhex(record.hash)
        )
    except (InvalidSignature, ValueError):
        return "bad signature"
    return None

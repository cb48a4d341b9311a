"""The hash chain of a ledger: Lineage's record hashing, Ed25519 signing, verification.

A record is trusted when its hash recomputes, it links to the record before it, and (for a
signed ledger) its signature verifies under the *pinned* public key: one the caller holds outside
the database (``Guard(public_key=...)``, the server's ``keys/``, ``--public-key``), never merely
the key the ledger's genesis record names. Published checkpoints (``seq:hash``)
catch what no key can: a ledger cut short behind them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from guardkit._canonical import canonical_json
from guardkit.decisions import LedgerRecord, VerifyFailure

__all__ = [
    "GENESIS_PREV",
    "ChainCheck",
    "Checkpoint",
    "Record",
    "Signer",
    "check_record",
    "fingerprint",
    "format_timestamp",
    "json_str",
    "parse_timestamp",
    "record_hash",
    "seal",
    "stamp",
    "verify_records",
]

_DOMAIN = b"lineage-audit-v1\n"
GENESIS_PREV = "0" * 64
_dumps_str = json.JSONEncoder(ensure_ascii=False).encode
_HASH = re.compile(r"[0-9a-f]{64}")
_SIGNATURE = re.compile(r"[0-9a-f]{128}")


class Record(NamedTuple):
    """One ledger line, in Lineage's format (a named tuple: millions are made on the hot path)."""

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


def fingerprint(public_key: str | None) -> str:
    """A short name for a public key: the first 16 hex digits of SHA-256 of its raw bytes."""
    if public_key is None:
        return "(unsigned)"
    try:
        raw = bytes.fromhex(public_key)
    except ValueError:
        raw = public_key.encode()
    return "SHA256:" + hashlib.sha256(raw).hexdigest()[:16]


def public_key_hex(key: Any) -> str:
    """A public key given as hex, raw bytes or a file holding its hex, as 64 hex digits."""
    from pathlib import Path

    if isinstance(key, bytes):
        key = key.hex()
    if not isinstance(key, str):
        raise TypeError("a public key is 32 raw bytes, their hex, or a file holding the hex")
    text = key.strip()
    if not re.fullmatch(r"[0-9a-fA-F]{64}", text) and Path(text).is_file():
        text = Path(text).read_text(encoding="utf-8").strip()
    if not re.fullmatch(r"[0-9a-fA-F]{64}", text):
        raise ValueError("a public key is 64 hex digits (32 bytes of Ed25519 public key)")
    return text.lower()


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

    def derive(self, purpose: bytes) -> bytes:
        """A secret for ``purpose`` that only the holder of the private key can compute."""
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            NoEncryption,
            PrivateFormat,
        )

        raw = self._key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return hashlib.sha256(b"guardkit-derive-v1\n" + purpose + b"\n" + raw).digest()


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A published ``seq:hash``: the record at ``seq`` must exist and carry ``hash``."""

    seq: int
    hash: str

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        seq, sep, digest = text.strip().partition(":")
        if not sep or not seq.isdigit() or not _HASH.fullmatch(digest.lower()):
            raise ValueError(f"a checkpoint is SEQ:HASH (64 hex digits), got {text!r}")
        return cls(int(seq), digest.lower())

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"


_second_cache: list[Any] = [None, ""]


def stamp(epoch: float) -> tuple[str, float]:
    """A record's timestamp for ``epoch`` (RFC 3339 UTC, microseconds, trailing Z), and the
    instant that timestamp names: what ``parse_timestamp`` would give back."""
    seconds = int(epoch)
    micros = round((epoch - seconds) * 1_000_000)
    if micros >= 1_000_000:
        seconds, micros = seconds + 1, micros - 1_000_000
    # Formatting the date part is the slow step; it changes once a second.
    cached_second, prefix = _second_cache
    if cached_second != seconds:
        prefix = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second_cache[:] = [seconds, prefix]
    return f"{prefix}.{micros:06d}Z", seconds + micros / 1_000_000


def format_timestamp(epoch: float) -> str:
    """RFC 3339 UTC with microseconds and a trailing Z."""
    return stamp(epoch)[0]


@functools.lru_cache(maxsize=1024)
def _epoch_seconds(prefix: str) -> int:
    return int(datetime.strptime(prefix, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp())


def parse_timestamp(text: str) -> float:
    """The instant a record's timestamp names, as the engine uses it (microsecond precision).

    Every time the guard keeps (a rate window's allows, when an approval was asked for) is taken
    from a record's timestamp through this function, so replaying a ledger gives exactly the
    state the engine had.
    """
    if len(text) != 27 or text[19] != "." or text[26] != "Z":
        raise ValueError(f"timestamp {text!r} is not RFC 3339 UTC with microseconds")
    return _epoch_seconds(text[:19]) + int(text[20:26]) / 1_000_000


@functools.lru_cache(maxsize=4096)
def json_str(text: str) -> str:
    """JSON text of a string the ledger repeats (an actor, a kind, a tool), encoded once each."""
    return _dumps_str(text)


_PREFIXES: dict[tuple[str, str], Any] = {}


def record_hash(
    seq: int, timestamp: str, actor: str, kind: str, payload_json: str, prev_hash: str
) -> str:
    # The envelope's keys in sorted order, with the payload's canonical text spliced in, is
    # byte-for-byte canonical_json({...}) without encoding the payload a second time. The part
    # before the payload depends on the actor and kind alone: hashed once for each pair, and a
    # copy of that hash state takes the rest (no new hash object fetched, no bytes joined).
    prefix = _PREFIXES.get((actor, kind))
    if prefix is None:
        if len(_PREFIXES) > 65536:
            _PREFIXES.clear()
        prefix = _PREFIXES[actor, kind] = hashlib.sha256(
            _DOMAIN + f'{{"actor":{json_str(actor)},"kind":{json_str(kind)},"payload":'.encode()
        )
    envelope = f'{payload_json},"prev_hash":"{prev_hash}","seq":{seq},"timestamp":"{timestamp}"}}'
    digest = prefix.copy()
    digest.update(envelope.encode("utf-8"))
    text: str = digest.hexdigest()
    return text


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
    signature = signer.sign(digest) if signer else None
    return Record(seq, timestamp, actor, kind, payload_json, prev_hash, digest, signature)


def check_record(record: Record, public_key: str | None) -> str | None:
    """Why one record cannot be trusted on its own (hash, signature), or None.

    ``public_key`` is the key its ledger must be signed with (None: an unsigned ledger).
    """
    if record_hash(*record[:6]) != record.hash:
        return "hash mismatch"
    return _check_signature(record, public_key)


class ChainCheck:
    """Checks records one by one as they stream past: seq, links, hashes, signatures.

    Starts at the genesis record, or (``head``) right after a record already verified: the
    ``(seq, hash)`` of that record and the ledger's public key.

    ``every_signature=False`` checks each record's signature for its form only and verifies the
    newest one in ``finish``: since every hash covers the one before it, a valid signature over
    the last hash vouches for the whole chain (a signature is costly: about 60 us, against a
    few for a hash). The guard checks its ledgers that way when it opens them; ``verify``
    (Lineage's audit) checks every signature.
    """

    def __init__(
        self,
        trusted_key: str | None = None,
        checkpoint: Checkpoint | None = None,
        *,
        head: tuple[int, str] | None = None,
        public_key: str | None = None,
        every_signature: bool = True,
    ) -> None:
        self.trusted_key = trusted_key
        self.checkpoint = checkpoint
        self.next_seq, self.prev = (0, GENESIS_PREV) if head is None else (head[0] + 1, head[1])
        self.public_key = public_key
        self.every_signature = every_signature
        self.count = 0
        self._last: Record | None = None

    def check(self, record: Record) -> str | None:
        """Why ``record`` does not continue the chain, or None (then it becomes the head)."""
        problem = _check_one(self.next_seq, record, self.prev)
        if problem is None and record.seq == 0:
            self.public_key = json.loads(record.payload_json).get("public_key")
            problem = _check_genesis_key(self.public_key, self.trusted_key)
        if problem is None:
            if self.every_signature:
                problem = _check_signature(record, self.public_key)
            elif (self.public_key is None) != (record.signature is None):
                problem = (
                    "missing signature"
                    if record.signature is None
                    else ("signed record in an unsigned log")
                )
        cp = self.checkpoint
        if problem is None and cp is not None and record.seq == cp.seq and record.hash != cp.hash:
            problem = f"checkpoint {cp.seq}: the record there has another hash"
        if problem is None:
            self.count += 1
            self.next_seq, self.prev = record.seq + 1, record.hash
            self._last = record
        return problem

    def failure(self, record: Record, problem: str) -> VerifyFailure:
        return {"line": self.count + 1, "seq": record.seq, "reason": problem}

    def finish(self) -> VerifyFailure | None:
        """What is wrong with the log as a whole once every record passed."""
        if self.count == 0 and self.next_seq == 0:
            return {"line": 0, "seq": None, "reason": "empty log"}
        last = self._last
        if not self.every_signature and last is not None:
            problem = _check_signature(last, self.public_key)
            if problem is not None:
                return {"line": self.count, "seq": last.seq, "reason": problem}
        cp = self.checkpoint
        if cp is not None and cp.seq >= self.next_seq:
            reason = (
                f"checkpoint {cp.seq} lies beyond the log's last record {self.next_seq - 1}: "
                "records were cut off"
            )
            return {"line": self.count, "seq": self.next_seq - 1, "reason": reason}
        return None


def verify_records(
    records: Iterable[Record],
    trusted_key: str | None = None,
    checkpoint: Checkpoint | None = None,
) -> tuple[int, VerifyFailure | None]:
    """Check a whole log; return ``(records seen, failure or None)``.

    A failure is ``{"line", "seq", "reason"}`` as Lineage's verifier reports it. With
    ``trusted_key`` the genesis record must name exactly that key (an unsigned log fails), so a
    log re-signed under any other key is refused; with ``checkpoint`` the record at its ``seq``
    must exist with its hash.
    """
    check = ChainCheck(trusted_key, checkpoint)
    for record in records:
        problem = check.check(record)
        if problem is not None:
            return check.count + 1, check.failure(record, problem)
    return check.count, check.finish()


def _check_genesis_key(public_key: Any, trusted_key: str | None) -> str | None:
    if public_key is not None and not isinstance(public_key, str):
        return "genesis public key is not a string"
    if trusted_key is None or public_key == trusted_key:
        return None
    if public_key is None:
        return f"the log is unsigned, but key {fingerprint(trusted_key)} is pinned"
    return (
        f"genesis public key {fingerprint(public_key)} is not the trusted key "
        f"{fingerprint(trusted_key)}"
    )


def _check_one(expected_seq: int, record: Record, prev: str) -> str | None:
    if record.seq != expected_seq:
        return f"seq {record.seq} where seq {expected_seq} belongs"
    if (record.kind == "genesis") != (expected_seq == 0):
        return "genesis record out of place"
    if not _HASH.fullmatch(record.hash) or not _HASH.fullmatch(record.prev_hash):
        return "hash is not 64 lowercase hex digits"
    if record.signature is not None and not _SIGNATURE.fullmatch(record.signature):
        return "signature is not 128 lowercase hex digits"
    if record.prev_hash != prev:
        return "prev_hash does not match the previous record"
    try:
        payload = json.loads(record.payload_json)
        if canonical_json(payload) != record.payload_json:
            return "payload is not canonical JSON"
    except ValueError:
        return "payload is not JSON"
    # The first six fields are what the hash covers, in record_hash's order.
    if record_hash(*record[:6]) != record.hash:
        return "hash mismatch"
    return None


@functools.lru_cache(maxsize=64)
def _verifier(public_key: str) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key))


def _check_signature(record: Record, public_key: str | None) -> str | None:
    if public_key is None:
        return None if record.signature is None else "signed record in an unsigned log"
    if record.signature is None:
        return "missing signature"
    from cryptography.exceptions import InvalidSignature

    try:
        _verifier(public_key).verify(bytes.fromhex(record.signature), bytes.fromhex(record.hash))
    except (InvalidSignature, ValueError):
        return "bad signature"
    return None

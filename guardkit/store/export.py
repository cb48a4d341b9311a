"""Lineage-format JSON Lines: writing an agent's ledger, and verifying such a file offline.

``verify_export`` needs no database: it checks an exported file exactly as the store checks its
ledger (seq, links, hashes, signatures under the pinned key, a published checkpoint) and, since
the export is canonical JSON, that every line is byte for byte the canonical form of the record
it holds, so no edit (not even a re-cased hex digit or an equivalent escape) goes unnoticed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from guardkit._canonical import canonical_json
from guardkit.decisions import Verification, VerifyFailure
from guardkit.store.chain import Checkpoint, Record, public_key_hex
from guardkit.store.fold import LedgerInvalid
from guardkit.store.replay import Replay

__all__ = ["verify_export", "write_jsonl"]

_FIELDS = ("seq", "timestamp", "actor", "kind", "payload", "prev_hash", "hash", "signature")


def _line(record: Record) -> str:
    return json.dumps(record.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def write_jsonl(records: Iterable[Record], out: IO[str]) -> int:
    """Write records as Lineage-format JSON Lines (one canonical object a line)."""
    count = 0
    for record in records:
        out.write(_line(record))
        out.write("\n")
        count += 1
    return count


class _BadLine(ValueError):
    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line = line


def _records(raw: bytes) -> Iterator[Record]:
    if raw and not raw.endswith(b"\n"):
        raise _BadLine(raw.count(b"\n") + 1, "the file does not end with a newline")
    for number, line in enumerate(raw.split(b"\n")[:-1] if raw else [], start=1):
        try:
            data = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _BadLine(number, "not a JSON object") from None
        if not isinstance(data, dict) or set(data) != set(_FIELDS):
            raise _BadLine(number, f"a record has exactly the fields {', '.join(_FIELDS)}")
        types_ok = (
            isinstance(data["seq"], int)
            and all(isinstance(data[k], str) for k in ("timestamp", "actor", "kind"))
            and all(isinstance(data[k], str) for k in ("prev_hash", "hash"))
            and (data["signature"] is None or isinstance(data["signature"], str))
        )
        if not types_ok:
            raise _BadLine(number, "a field has the wrong type")
        try:
            record = Record(
                seq=data["seq"],
                timestamp=data["timestamp"],
                actor=data["actor"],
                kind=data["kind"],
                payload_json=canonical_json(data["payload"]),
                prev_hash=data["prev_hash"],
                hash=data["hash"],
                signature=data["signature"],
            )
        except ValueError:
            raise _BadLine(number, "the payload is not JSON data") from None
        if _line(record).encode("utf-8") != line:
            raise _BadLine(number, "the line is not the record's canonical JSON (edited)")
        yield record


def verify_export(
    source: str | os.PathLike[str] | IO[bytes] | bytes,
    *,
    public_key: Any = None,
    checkpoint: str | Checkpoint | None = None,
) -> Verification:
    """Verify an exported ledger (a path, an open binary file or its bytes) with no database.

    >>> verify_export("bot.jsonl", public_key="ab12...", checkpoint="41:9f2c...")
    {'ok': True, 'records': 42, 'public_key': 'ab12...', 'head': {'seq': 41, 'hash': '9f2c...'}}

    With ``public_key`` the log must be signed by exactly that key; without it, it is checked
    against the key its genesis record names (anyone can re-sign such a file: pin the key).
    Besides the chain, the records must replay as a guard writes them (``ok: false`` with the
    reason otherwise).
    """
    if isinstance(source, bytes):
        raw = source
    elif isinstance(source, (str, os.PathLike)):
        raw = Path(source).read_bytes()
    else:
        raw = source.read()
    trusted = public_key_hex(public_key) if public_key is not None else None
    point = Checkpoint.parse(checkpoint) if isinstance(checkpoint, str) else checkpoint
    replay: Replay | None = None
    try:
        for record in _records(raw):
            if replay is None:
                replay = Replay(record.actor, trusted, checkpoint=point, every_signature=True)
            replay.feed(record, None)
        if replay is None:
            return {"ok": False, "records": 0, "failure": _failure(0, None, "empty log")}
        state = replay.finish()
    except _BadLine as exc:
        return {"ok": False, "records": exc.line, "failure": _failure(exc.line, None, str(exc))}
    except LedgerInvalid as exc:
        assert replay is not None
        failure = replay.failure or _failure(
            replay.chain.count, replay.chain.next_seq - 1, str(exc)
        )
        return {"ok": False, "records": failure["line"], "failure": failure}
    return {
        "ok": True,
        "records": replay.chain.count,
        "public_key": state.public_key,
        "head": {"seq": state.head_seq, "hash": state.head_hash},
    }


def _failure(line: int, seq: int | None, reason: str) -> VerifyFailure:
    return {"line": line, "seq": seq, "reason": reason}

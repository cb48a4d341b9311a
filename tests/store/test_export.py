"""Exported ledgers verify offline, with no database, and no edit of one byte gets past.

The export holds a record of every kind a guard writes. ``verify_export`` (and
``guardkit verify --file``) must accept it as written, under its pinned key and a published
checkpoint, and refuse it after any single byte of it is changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from guardkit import Guard
from guardkit.store import Signer, fingerprint, verify_export
from guardkit.store.fold import KINDS

KEY = Signer.generate_hex()
PUBLIC = Signer(KEY).public_key
POLICY = {
    "budget": 20,
    "scar_limit": 30,
    "tools": {"read": {"cost": 1}, "pay": {"cost": 2, "requires_approval": True}},
}


def _every_kind(guard: Guard) -> bytes:
    """One agent's ledger with every record kind, exported."""
    guard.create_agent("bot", POLICY)
    bot = guard.agent("bot")
    read = bot.request("read", {"q": "héllo ✓\n\u001f"})
    bot.report(read["action_id"], "failure", "timed out")
    bot.request("rm_rf", {"path": "/"})
    paid = bot.request("pay", {"to": "acme", "amount": 2})
    guard.approve("bot", paid["action_id"], "alice", note="fine")
    guard.consume("bot", paid["action_id"], "pay", {"to": "acme", "amount": 2})
    rejected = bot.request("pay", {"to": "mallory"})
    guard.reject("bot", rejected["action_id"], "alice", "wrong vendor")
    guard.terminate("bot", "done", "alice")
    out = Path(guard.store.location).with_suffix(".jsonl")
    guard.export("bot", out)
    raw = out.read_bytes()
    kinds = {json.loads(line)["kind"] for line in raw.splitlines()}
    assert kinds == KINDS, KINDS - kinds
    return raw


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    with Guard(tmp_path_factory.mktemp("signed") / "g.db", signing_key=KEY) as guard:
        return _every_kind(guard)


@pytest.fixture(scope="module")
def unsigned(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    with Guard(tmp_path_factory.mktemp("unsigned") / "g.db") as guard:
        return _every_kind(guard)


def test_an_export_of_every_record_kind_verifies_offline(signed: bytes) -> None:
    result = verify_export(signed, public_key=PUBLIC)
    assert result["ok"] is True, result
    assert result["records"] == len(signed.splitlines())
    assert result["public_key"] == PUBLIC
    head = result["head"]
    assert verify_export(signed, checkpoint=f"{head['seq']}:{head['hash']}")["ok"] is True


def test_a_pinned_key_and_a_checkpoint_are_enforced(signed: bytes, unsigned: bytes) -> None:
    other = Signer(Signer.generate_hex()).public_key
    wrong_key = verify_export(signed, public_key=other)
    assert wrong_key["ok"] is False
    assert fingerprint(other) in wrong_key["failure"]["reason"]
    assert verify_export(unsigned, public_key=PUBLIC)["failure"]["reason"].startswith(
        "the log is unsigned"
    )
    lines = signed.splitlines(keepends=True)
    last = json.loads(lines[-1])
    cut = b"".join(lines[:-2])  # a whole, shorter chain...
    assert verify_export(cut, public_key=PUBLIC)["ok"] is True
    behind = verify_export(cut, public_key=PUBLIC, checkpoint=f"{last['seq']}:{last['hash']}")
    assert behind["ok"] is False  # ...that a published checkpoint exposes
    assert "cut off" in behind["failure"]["reason"]


def _flips(raw: bytes, position: int) -> list[bytes]:
    """The file with byte ``position`` changed: a neighbouring value and a flipped case."""
    old = raw[position]
    return [raw[:position] + bytes([new]) + raw[position + 1 :] for new in {old ^ 1, old ^ 0x20}]


def test_every_single_byte_edit_is_refused(unsigned: bytes) -> None:
    for position in range(len(unsigned)):
        for edited in _flips(unsigned, position):
            result = verify_export(edited)
            assert result["ok"] is False, f"byte {position} ({unsigned[position : position + 1]!r})"


def test_byte_edits_of_a_signed_export_are_refused(signed: bytes) -> None:
    # The unsigned file above covers every byte a record has; here every byte of one signed
    # record, and the case of each signature's hex digits (a re-cased hex digit still decodes).
    lines = signed.splitlines(keepends=True)
    start = len(lines[0]) + len(lines[1])
    positions = set(range(start, start + len(lines[2])))
    offset = 0
    for line in lines:
        at = line.index(b'"signature":"') + len(b'"signature":"')
        positions |= {offset + at + k for k in range(0, 128, 9)}
        offset += len(line)
    for position in sorted(positions):
        for edited in _flips(signed, position):
            assert verify_export(edited, public_key=PUBLIC)["ok"] is False, position


def test_guardkit_verify_file_works_offline(signed: bytes, tmp_path: Path) -> None:
    export = tmp_path / "bot.jsonl"
    export.write_bytes(signed)

    def verify(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "guardkit", "verify", "--file", str(export), *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # no database anywhere near
            check=False,
        )

    ok = verify("--public-key", PUBLIC, "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ok"] is True
    assert not list(tmp_path.glob("*.db"))
    unpinned = verify()
    assert unpinned.returncode == 0
    assert "pass --public-key" in unpinned.stderr
    export.write_bytes(signed.replace(b'"amount":2', b'"amount":9', 1))
    broken = verify("--public-key", PUBLIC)
    assert broken.returncode == 1
    assert "BROKEN at line" in broken.stdout
    bad_checkpoint = verify("--checkpoint", "not-a-checkpoint")
    assert bad_checkpoint.returncode == 2

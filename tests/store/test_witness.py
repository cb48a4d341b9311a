"""Cutting, rolling back or swapping the ledger behind the guard's back, on SQLite and PostgreSQL.

Each test is an attack by someone who can write the database (not the witness beside it): the
tail of every ledger cut, an older copy of the file restored, one record re-hashed in place
under a running guard, a row slipped into the legacy ``consumptions`` table. Each worked on the
guard before the head witness, links checked on read and the legacy table's removal.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from guardkit import Guard, LedgerTampered, StoreError
from guardkit.errors import AlreadyConsumed
from guardkit.store import Signer, open_store
from guardkit.store.chain import record_hash
from tests.store.conftest import Raw

KEY = Signer.generate_hex()
POLICY = {
    "budget": 50,
    "scar_limit": 30,
    "tools": {"llm_turn": {"cost": 1}, "pay": {"cost": 2, "requires_approval": True}},
}
PAYMENT = {"to": "acme", "iban": "DE02120300000000202051", "amount": 2}
SWAPPED = "GB33BUKB20201555555555"


@pytest.fixture
def open_guard(store_url: str, tmp_path: Path) -> Any:
    """A guard on the store with its default witness: ``<db>.witness`` on SQLite; on
    PostgreSQL (no file beside it) one configured on this machine's disk."""

    def make(signed: bool = True, **options: Any) -> Guard:
        if store_url.startswith("postgresql"):
            options.setdefault("witness", str(tmp_path / "pg.witness"))
        keys = {"signing_key": KEY} if signed else {}
        return Guard(open_store(store_url, **keys, **options))

    return make


def _paid_and_fired(guard: Guard) -> None:
    """bot: a payment approved and consumed (act-2); fired: terminated by an operator."""
    for agent_id in ("bot", "fired"):
        guard.create_agent(agent_id, POLICY)
    bot = guard.agent("bot")
    bot.request("llm_turn", {})
    assert bot.request("pay", PAYMENT)["decision"] == "pending_approval"
    guard.approve("bot", "act-2", "alice")
    guard.consume("bot", "act-2", "pay", PAYMENT)
    guard.terminate("fired", "it went rogue", "alice")


def _head(raw: Raw, agent_id: str) -> tuple[int, str]:
    seq, digest = raw(
        "SELECT seq, hash FROM records WHERE agent_id = ? ORDER BY seq DESC LIMIT 1", (agent_id,)
    )[0]
    return int(seq), str(digest)


def _assert_refused(guard: Guard, agent_id: str, seen: tuple[int, str]) -> None:
    why = guard.quarantined[agent_id]
    assert f"saw seq {seen[0]} with hash {seen[1]}" in why, why
    with pytest.raises(LedgerTampered):
        guard.agent(agent_id).request("llm_turn", {})


def test_cutting_the_newest_record_of_every_agent(open_guard: Any, raw: Raw) -> None:
    with open_guard() as guard:
        _paid_and_fired(guard)
    heads = {agent_id: _head(raw, agent_id) for agent_id in ("bot", "fired")}
    for agent_id, (seq, _) in heads.items():
        raw("DELETE FROM records WHERE agent_id = ? AND seq = ?", (agent_id, seq))
    with open_guard() as guard:
        assert set(guard.quarantined) == {"bot", "fired"}
        for agent_id, seen in heads.items():
            _assert_refused(guard, agent_id, seen)
        # The consumption was the record cut: the bank must not be able to pay a second time.
        with pytest.raises(LedgerTampered):
            guard.consume("bot", "act-2", "pay", PAYMENT)
        assert guard.verify("bot")["ok"] is False
        assert "records were cut off" in guard.verify("fired")["failure"]["reason"]


def test_cutting_one_agent_leaves_the_others_working(open_guard: Any, raw: Raw) -> None:
    with open_guard() as guard:
        _paid_and_fired(guard)
        guard.create_agent("other", POLICY)
    seen = _head(raw, "fired")
    raw("DELETE FROM records WHERE agent_id = 'fired' AND seq = ?", (seen[0],))
    with open_guard() as guard:
        assert set(guard.quarantined) == {"fired"}
        _assert_refused(guard, "fired", seen)
        assert guard.agent("other").request("llm_turn", {})["decision"] == "allowed"
        with pytest.raises(AlreadyConsumed):
            guard.consume("bot", "act-2", "pay", PAYMENT)


def test_restoring_an_earlier_copy_of_the_database(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    with Guard(db, signing_key=KEY) as guard:
        for agent_id in ("bot", "fired"):
            guard.create_agent(agent_id, POLICY)
        assert guard.agent("bot").request("pay", PAYMENT)["decision"] == "pending_approval"
    shutil.copyfile(db, tmp_path / "yesterday.db")  # closed: the WAL is checkpointed into it
    with Guard(db, signing_key=KEY) as guard:
        guard.approve("bot", "act-1", "alice")
        guard.consume("bot", "act-1", "pay", PAYMENT)
        guard.terminate("fired", "it went rogue", "alice")
        guard.create_agent("late", POLICY)
        heads = {a: guard.status(a)["head"] for a in ("bot", "fired", "late")}
    for leftover in (tmp_path / "guard.db-wal", tmp_path / "guard.db-shm"):
        leftover.unlink(missing_ok=True)
    shutil.copyfile(tmp_path / "yesterday.db", db)
    with Guard(db, signing_key=KEY) as guard:
        assert set(guard.quarantined) == {"bot", "fired", "late"}
        for agent_id, head in heads.items():
            why = guard.quarantined[agent_id]
            assert f"seq {head['seq']} with hash {head['hash']}" in why, why
        with pytest.raises(LedgerTampered):
            guard.consume("bot", "act-1", "pay", PAYMENT)
        with pytest.raises(LedgerTampered):
            guard.agent("fired").request("llm_turn", {})
        with pytest.raises(LedgerTampered):
            guard.agent("late").request("llm_turn", {})
    # The audit says so too, by default against the witness.
    verify = subprocess.run(
        [sys.executable, "-m", "guardkit", "verify", "bot", "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tempfile.gettempdir(),
        env={"GUARDKIT_PUBLIC_KEY": Signer(KEY).public_key, "PATH": "/usr/bin:/bin"},
    )
    assert verify.returncode == 1, verify.stderr
    assert "records were cut off" in json.loads(verify.stdout)["failure"]["reason"]


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_one_record_rehashed_under_a_running_guard(open_guard: Any, raw: Raw, signed: bool) -> None:
    with open_guard(signed) as guard:
        guard.create_agent("bot", POLICY)
        assert guard.agent("bot").request("pay", PAYMENT)["decision"] == "pending_approval"
        guard.agent("bot").request("llm_turn", {})
    running = open_guard(signed)  # the approver's console, running before the edit
    seq, ts, actor, kind, payload, prev, signature = raw(
        "SELECT seq, timestamp, actor, kind, payload, prev_hash, signature FROM records "
        "WHERE agent_id = 'bot' AND kind = 'action_requested'"
    )[0]
    swapped = payload.replace(PAYMENT["iban"], SWAPPED)
    digest = record_hash(seq, ts, actor, kind, swapped, prev)
    resigned = Signer(KEY).sign(digest) if signature else None  # even by the key holder
    raw(
        "UPDATE records SET payload = ?, hash = ?, signature = ? "
        "WHERE agent_id = 'bot' AND seq = ?",
        (swapped, digest, resigned, seq),
    )
    with pytest.raises(LedgerTampered, match="the record after it does not follow it"):
        running.pending("bot")
    with pytest.raises(LedgerTampered):
        running.approve("bot", "act-1", "alice")
    assert set(running.quarantined) == {"bot"}
    running.close()


_LEGACY_TABLE = (
    "CREATE TABLE IF NOT EXISTS consumptions (agent_id TEXT NOT NULL, action_id TEXT NOT NULL, "
    "consumed_by TEXT NOT NULL, consumed_at REAL NOT NULL, PRIMARY KEY (agent_id, action_id))"
)


def test_a_row_slipped_into_a_legacy_consumptions_table(open_guard: Any, raw: Raw) -> None:
    with open_guard() as guard:
        guard.create_agent("bot", POLICY)
        assert guard.agent("bot").request("pay", PAYMENT)["decision"] == "pending_approval"
        guard.approve("bot", "act-1", "alice")
    raw(_LEGACY_TABLE)
    raw("INSERT INTO consumptions VALUES ('bot', 'act-1', 'mallory', 0)")
    with open_guard() as guard:
        assert guard.quarantined == {}
        # The human approved a payment: the backend can make it, once.
        assert guard.consume("bot", "act-1", "pay", PAYMENT)["consumed"] is True
        with pytest.raises(AlreadyConsumed):
            guard.consume("bot", "act-1", "pay", PAYMENT)


def test_a_store_born_now_has_no_legacy_table(open_guard: Any, raw: Raw, store_url: str) -> None:
    open_guard().close()
    if store_url.startswith("sqlite"):
        found = raw("SELECT name FROM sqlite_master WHERE name = 'consumptions'")
    else:
        found = raw("SELECT 1 WHERE to_regclass('consumptions') IS NOT NULL")
    assert found == []


# -- the witness file itself --------------------------------------------------------------------


def test_the_witness_holds_every_commits_heads(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    with Guard(db, signing_key=KEY) as guard:
        guard.create_agent("bot", POLICY)
        guard.agent("bot").request("llm_turn", {})
        head = guard.status("bot")["head"]
    lines = (tmp_path / "guard.db.witness").read_text().splitlines()
    assert lines[0] == "guardkit-witness v1"
    agent_id, seq, digest, signature = json.loads(lines[-1])
    assert (agent_id, seq, digest) == ("bot", head["seq"], head["hash"])
    assert signature == Signer(KEY).sign(digest)
    assert (tmp_path / "guard.db.witness").stat().st_mode & 0o777 == 0o600


def test_a_missing_or_truncated_witness_is_refused_not_recreated(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    witness = tmp_path / "guard.db.witness"
    with Guard(db) as guard:
        guard.create_agent("bot", POLICY)
    with Guard(db) as guard:  # the store records how long the witness was when it opened
        guard.agent("bot").request("llm_turn", {})
    kept = witness.read_bytes()
    witness.unlink()
    with pytest.raises(StoreError, match="is missing, but this store had one"):
        Guard(db)
    assert not witness.exists()
    witness.write_bytes(kept[: len(kept) // 2 - 5].rsplit(b"\n", 1)[0] + b"\n")
    with pytest.raises(StoreError, match="it was truncated"):
        Guard(db)
    witness.write_bytes(b"")
    with pytest.raises(StoreError, match="not a guardkit witness"):
        Guard(db)
    witness.write_bytes(kept)
    with Guard(db) as guard:
        assert guard.quarantined == {}
    with Guard(db, witness=None) as guard:  # an audit without it is a deliberate choice
        assert guard.verify("bot")["ok"] is True


def test_a_line_torn_by_a_crash_is_dropped_and_its_commit_witnessed_again(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    witness = tmp_path / "guard.db.witness"
    with Guard(db) as guard:
        guard.create_agent("bot", POLICY)
        guard.agent("bot").request("llm_turn", {})
        head = guard.status("bot")["head"]
    text = witness.read_bytes()
    witness.write_bytes(text[:-20])  # the last append half written when the power went
    with Guard(db) as guard:
        assert guard.quarantined == {}
    last = json.loads(witness.read_text().splitlines()[-1])
    assert last[:3] == ["bot", head["seq"], head["hash"]]


def test_a_witness_elsewhere(tmp_path: Path, raw_db: Any) -> None:
    db, elsewhere = tmp_path / "guard.db", tmp_path / "other-disk" / "heads"
    elsewhere.parent.mkdir()
    with Guard(db, witness=str(elsewhere)) as guard:
        guard.create_agent("bot", POLICY)
        guard.agent("bot").request("llm_turn", {})
    assert not (tmp_path / "guard.db.witness").exists()
    with raw_db(str(db)) as conn:
        conn.execute("DELETE FROM records WHERE seq = (SELECT max(seq) FROM records)")
    with Guard(db, witness=str(elsewhere)) as guard:
        assert str(elsewhere) in guard.quarantined["bot"]

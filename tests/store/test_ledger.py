"""The hash-chained ledger on SQLite: verification, export, signing, chain tampering,
truncation repair, durability settings and driver-error translation (LINEAGE §8, §14).

Tampering with what the ledger justifies (agent rows, action records, idempotency records, keys,
checkpoints) is in ``test_tamper.py``, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from guardkit import Guard, LedgerTampered, StoreError
from guardkit.store import Signer, fingerprint
from guardkit.store._errors import translate_errors
from guardkit.store.replay import Replay

POLICY = {
    "budget": 50,
    "scar_limit": 30,
    "tools": {
        "llm_turn": {"cost": 1},
        "pay": {"cost": 2, "requires_approval": True},
        "search": {"cost": 0, "max_calls": 2},
    },
}
GENESIS_PREV = "0" * 64


def mixed_run(guard: Guard, agent_id: str = "bot") -> None:
    """Every record kind except ``terminated``: allows, denials, approvals, outcomes, scars."""
    guard.create_agent(agent_id, POLICY)
    agent = guard.agent(agent_id)
    first = agent.request("llm_turn", {"prompt": "héllo ✓", "n": [1, 2.5, None, True]})
    agent.report(first["action_id"], "success", "ok")
    second = agent.request("llm_turn", {}, cost=3)
    agent.report(second["action_id"], "failure", "timeout")
    agent.request("rm_rf", {"path": "/"})
    for _ in range(3):
        agent.request("search", {"q": "x"})
    approved = agent.request("pay", {"to": "acme", "amount": 2})
    guard.approve(agent_id, approved["action_id"], "alice", note="looks right")
    rejected = agent.request("pay", {"to": "mallory"})
    guard.reject(agent_id, rejected["action_id"], "alice", "wrong vendor", scar="minor")
    agent.request("pay", {"to": "later"})  # stays pending
    guard.scar(agent_id, "moderate", "monitor flagged", first["action_id"])


def reference_verify(lines: list[str], trusted_key: str | None) -> int:
    """An independent Lineage verifier (LINEAGE §14); returns the record count or raises."""
    prev = GENESIS_PREV
    public_key: str | None = None
    for index, line in enumerate(lines):
        record = json.loads(line)
        assert record["seq"] == index
        assert (record["kind"] == "genesis") == (index == 0)
        assert record["prev_hash"] == prev
        body = {k: record[k] for k in ("seq", "timestamp", "actor", "kind", "payload", "prev_hash")}
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = hashlib.sha256(b"lineage-audit-v1\n" + canonical.encode("utf-8")).hexdigest()
        assert record["hash"] == digest, f"hash mismatch at line {index + 1}"
        if index == 0:
            public_key = record["payload"]["public_key"]
            assert public_key == trusted_key
        if public_key is None:
            assert record["signature"] is None
        else:
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(
                bytes.fromhex(record["signature"]), bytes.fromhex(digest)
            )
        prev = digest
    return len(lines)


def export_lines(guard: Guard, agent_id: str) -> list[str]:
    out = io.StringIO()
    count = guard.export(agent_id, out)
    lines = out.getvalue().splitlines()
    assert count == len(lines)
    return lines


# -- verification and export ------------------------------------------------------------------


def test_mixed_run_verifies_and_survives_reopening(db_path: str) -> None:
    with Guard(db_path) as guard:
        mixed_run(guard)
        result = guard.verify("bot")
        status = guard.status("bot")
    assert result["ok"], result
    assert result["head"] == status["head"]
    with Guard(db_path) as guard:
        assert guard.quarantined == {}
        assert guard.status("bot") == status
        kinds = {r["kind"] for r in guard.log("bot")["records"]}
    assert kinds >= {
        "genesis", "policy", "action_requested", "approval_required", "action_allowed",
        "action_denied", "action_rejected", "outcome", "scar",
    }  # fmt: skip


def test_export_is_lineage_jsonl_that_a_reference_verifier_accepts(
    db_path: str, tmp_path: Path
) -> None:
    with Guard(db_path) as guard:
        mixed_run(guard)
        lines = export_lines(guard, "bot")
        assert guard.export("bot", tmp_path / "bot.jsonl") == len(lines)
        records = guard.log("bot")["records"]
    assert (tmp_path / "bot.jsonl").read_text(encoding="utf-8").splitlines() == lines
    assert reference_verify(lines, trusted_key=None) == len(records)
    for line in lines:
        record = json.loads(line)
        assert set(record) == {
            "seq", "timestamp", "actor", "kind", "payload", "prev_hash", "hash", "signature"
        }  # fmt: skip
        assert line == json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert record["actor"] == "bot"
        assert record["timestamp"].endswith("Z")
    assert "héllo ✓" in lines[2]  # raw UTF-8, not \\u escapes
    # The reference verifier is not a rubber stamp: one changed byte fails it.
    forged = [*lines]
    forged[2] = forged[2].replace('"cost":1', '"cost":0', 1)
    assert forged[2] != lines[2]
    with pytest.raises(AssertionError, match="hash mismatch"):
        reference_verify(forged, trusted_key=None)


def test_signed_ledger_every_record_signed(db_path: str) -> None:
    key = Signer.generate_hex()
    public = Signer(key).public_key
    with Guard(db_path, signing_key=key) as guard:
        mixed_run(guard)
        assert guard.verify("bot")["ok"]
        assert guard.verify("bot")["public_key"] == public
        lines = export_lines(guard, "bot")
    assert all(json.loads(line)["signature"] for line in lines)
    assert reference_verify(lines, trusted_key=public) == len(lines)
    # A signature over a different hash does not verify.
    record = json.loads(lines[4])
    other = json.loads(lines[5])
    with pytest.raises(InvalidSignature):
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public)).verify(
            bytes.fromhex(record["signature"]), bytes.fromhex(other["hash"])
        )


def test_signed_ledger_without_the_key_reads_but_never_appends(db_path: str) -> None:
    key = Signer.generate_hex()
    with Guard(db_path, signing_key=key) as guard:
        mixed_run(guard)
        status = guard.status("bot")
    with Guard(db_path) as guard:
        assert guard.quarantined == {}
        assert guard.status("bot") == status
        assert guard.verify("bot")["ok"]
        assert len(export_lines(guard, "bot")) == status["head"]["seq"] + 1
        with pytest.raises(StoreError):
            guard.agent("bot").request("llm_turn", {})
        with pytest.raises(StoreError):
            guard.scar("bot", "minor", "x")
        assert guard.status("bot") == status  # the failed appends left nothing behind
    other = Signer.generate_hex()
    with pytest.raises(StoreError) as wrong:  # one clear error at open, naming both keys
        Guard(db_path, signing_key=other)
    assert fingerprint(Signer(key).public_key) in wrong.value.message
    assert fingerprint(Signer(other).public_key) in wrong.value.message
    with Guard(db_path, signing_key=key) as guard:
        assert guard.agent("bot").request("llm_turn", {})["decision"] == "allowed"
        assert guard.verify("bot")["ok"]


# -- tampering --------------------------------------------------------------------------------


def _edit_payload(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE records SET payload = replace(payload, '\"acme\"', '\"mallory\"') "
        "WHERE agent_id = 'bot' AND kind = 'action_requested' AND payload LIKE '%acme%'"
    )


def _delete_middle(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM records WHERE agent_id = 'bot' AND seq = 5")


def _swap(conn: sqlite3.Connection) -> None:
    for a, b in ((4, -1), (5, 4), (-1, 5)):
        conn.execute("UPDATE records SET seq = ? WHERE agent_id = 'bot' AND seq = ?", (b, a))


def _forge_rehashed(conn: sqlite3.Connection) -> None:
    """Edit a payload and recompute its hash: the next record's prev_hash then breaks."""
    from guardkit.store.chain import record_hash

    seq, ts, actor, kind, payload, prev = conn.execute(
        "SELECT seq, timestamp, actor, kind, payload, prev_hash FROM records "
        "WHERE agent_id = 'bot' AND seq = 2"
    ).fetchone()
    forged = payload.replace('"prompt":', '"prompX":')
    assert forged != payload
    digest = record_hash(seq, ts, actor, kind, forged, prev)
    conn.execute(
        "UPDATE records SET payload = ?, hash = ? WHERE agent_id = 'bot' AND seq = 2",
        (forged, digest),
    )


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_edit_payload, "hash mismatch"),
        (_delete_middle, "seq"),
        (_swap, ""),
        (_forge_rehashed, "prev_hash"),
    ],
    ids=[
        "edit-payload",
        "delete-middle",
        "swap",
        "rehash",
    ],
)
def test_tampering_quarantines_exactly_that_agent(db_path, raw_db, tamper, message) -> None:
    with Guard(db_path) as guard:
        mixed_run(guard, "bot")
        mixed_run(guard, "other")
    with raw_db(db_path) as conn:
        tamper(conn)
    with Guard(db_path) as guard:
        assert set(guard.quarantined) == {"bot"}
        assert message in guard.quarantined["bot"]
        for call in (
            lambda: guard.status("bot"),
            lambda: guard.agent("bot"),
            lambda: guard.scar("bot", "minor", "x"),
            lambda: guard.terminate("bot", "x", "alice"),
            lambda: guard.engine.request("bot", "llm_turn", {}),
        ):
            with pytest.raises(LedgerTampered) as caught:
                call()
            assert caught.value.status == 503
            assert caught.value.code == "quarantined"
        listed = {entry["agent_id"]: entry for entry in guard.agents()}
        assert listed["bot"]["state"] == "quarantined"
        assert listed["other"]["state"] == "active"
        # The other agent keeps working, and its chain still verifies.
        assert guard.agent("other").request("llm_turn", {})["decision"] == "allowed"
        assert guard.verify("other")["ok"]
        assert guard.verify("bot")["ok"] is False
    with Guard(db_path) as guard:  # quarantine is decided afresh on every open
        assert set(guard.quarantined) == {"bot"}


# -- truncation repair (LINEAGE §8) -----------------------------------------------------------
# A log cut short behind a witness is quarantined (tests/store/test_witness.py); these stores
# have none, as a Lineage log has none.


def _truncate_termination(conn: sqlite3.Connection, agent_id: str) -> None:
    """Drop the trailing ``terminated`` record: the chain is still whole, just shorter."""
    seq, kind = conn.execute(
        "SELECT seq, kind FROM records WHERE agent_id = ? ORDER BY seq DESC LIMIT 1", (agent_id,)
    ).fetchone()
    assert kind == "terminated"
    conn.execute("DELETE FROM records WHERE agent_id = ? AND seq = ?", (agent_id, seq))


def _scarred_out(guard: Guard) -> str:
    guard.create_agent("scarred", {**POLICY, "scar_limit": 6})
    agent = guard.agent("scarred")
    agent.request("rm_rf", {})
    agent.request("rm_rf", {})
    return "scar limit reached (6 >= 6); termination record missing from the log"


def _spent_out(guard: Guard) -> str:
    guard.create_agent("spent", {**POLICY, "budget": 2})
    agent = guard.agent("spent")
    agent.request("llm_turn", {})
    agent.request("llm_turn", {})
    return "budget exhausted; termination record missing from the log"


@pytest.mark.parametrize("scenario", [_scarred_out, _spent_out], ids=["scar-limit", "budget"])
def test_missing_termination_record_is_repaired_on_open(db_path, raw_db, scenario) -> None:
    with Guard(db_path, witness=None) as guard:
        expected_reason = scenario(guard)
        agent_id = guard.agents()[0]["agent_id"]
        assert guard.status(agent_id)["alive"] is False
        guard.create_agent("bystander", POLICY)
    with raw_db(db_path) as conn:
        _truncate_termination(conn, agent_id)
    with Guard(db_path, witness=None) as guard:
        assert guard.quarantined == {}
        status = guard.status(agent_id)
        assert status["alive"] is False
        assert status["termination_reason"] == expected_reason
        assert status["termination_reason"].endswith("termination record missing from the log")
        last = guard.log(agent_id)["records"][-1]
        assert last["kind"] == "terminated"
        assert last["payload"] == {"reason": expected_reason, "by": "guard (replay)"}
        assert status["head"]["seq"] == last["seq"]
        assert guard.verify(agent_id)["ok"]
        denied = guard.agent(agent_id).request("llm_turn", {})
        assert denied["reason"]["code"] == "terminated"
        # Only the truncated ledger was touched.
        assert [r["kind"] for r in guard.log("bystander")["records"]] == ["genesis", "policy"]
    with Guard(db_path, witness=None) as guard:  # repaired once, not again on the next open
        records = guard.log(agent_id)["records"]
        assert sum(r["kind"] == "terminated" for r in records) == 1
        assert guard.quarantined == {}


def test_signed_truncation_repair_is_signed(db_path, raw_db) -> None:
    key = Signer.generate_hex()
    with Guard(db_path, signing_key=key, witness=None) as guard:
        _spent_out(guard)
    with raw_db(db_path) as conn:
        _truncate_termination(conn, "spent")
    with Guard(db_path, signing_key=key, witness=None) as guard:
        assert guard.quarantined == {}
        assert guard.status("spent")["alive"] is False
        lines = export_lines(guard, "spent")
    assert reference_verify(lines, trusted_key=Signer(key).public_key) == len(lines)


# -- durability and errors --------------------------------------------------------------------


@pytest.mark.parametrize(("durability", "level"), [("full", 2), ("normal", 1)])
def test_durability_sets_synchronous(db_path: str, durability: str, level: int) -> None:
    with Guard(db_path, durability=durability) as guard:
        conn: Any = guard.store._conn  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == level
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_default_durability_is_full(db_path: str) -> None:
    with Guard(db_path) as guard:
        conn: Any = guard.store._conn  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_unknown_durability_is_refused(db_path: str) -> None:
    with pytest.raises(ValueError, match="durability"):
        Guard(db_path, durability="yolo")


def test_corrupt_database_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "guard.db"
    path.write_bytes(b"this is not a database, just 4 KiB of junk\n" * 100)
    with pytest.raises(StoreError) as caught:
        Guard(path)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_a_failed_open_leaks_no_descriptors(tmp_path: Path) -> None:
    path = tmp_path / "guard.db"
    path.write_bytes(b"not a database\n" * 500)
    before = len(list(Path("/proc/self/fd").iterdir()))
    for _ in range(5):
        with pytest.raises(StoreError):
            Guard(path)
    assert len(list(Path("/proc/self/fd").iterdir())) == before


def _subclasses(root: type[BaseException]) -> list[type[BaseException]]:
    seen: list[type[BaseException]] = []
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


SQLITE_ERRORS = _subclasses(sqlite3.Error)


def test_the_walk_finds_every_sqlite_error_class() -> None:
    names = {cls.__name__ for cls in SQLITE_ERRORS}
    assert names >= {
        "Error", "DatabaseError", "InterfaceError", "DataError", "OperationalError",
        "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    }  # fmt: skip


@pytest.mark.parametrize("error", SQLITE_ERRORS, ids=lambda cls: cls.__name__)
def test_every_sqlite_error_becomes_a_store_error(error: type[BaseException]) -> None:
    with pytest.raises(StoreError) as caught, translate_errors("db.sqlite"):
        raise error("boom")
    assert caught.value.__cause__ is not None
    assert type(caught.value.__cause__) is error
    assert "db.sqlite" in str(caught.value)
    assert "boom" in str(caught.value)


def test_os_errors_become_store_errors_and_others_pass_through() -> None:
    with pytest.raises(StoreError), translate_errors("db"):
        raise PermissionError("read-only file system")
    with pytest.raises(KeyError), translate_errors("db"):
        raise KeyError("not a driver error")


def _psycopg_errors() -> list[type[BaseException]]:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is an optional extra
        return []
    return _subclasses(psycopg.Error)


PSYCOPG_ERRORS = _psycopg_errors()


@pytest.mark.skipif(not PSYCOPG_ERRORS, reason="psycopg is not installed")
def test_every_psycopg_error_becomes_a_store_error() -> None:
    assert len(PSYCOPG_ERRORS) > 50  # psycopg.errors maps every SQLSTATE to a class
    for error in PSYCOPG_ERRORS:
        with pytest.raises(StoreError) as caught, translate_errors("postgresql://db"):
            raise error("boom")
        assert type(caught.value.__cause__) is error, error


def test_replay_of_an_exported_run_matches_the_status(db_path: str) -> None:
    with Guard(db_path) as guard:
        mixed_run(guard)
        status = guard.status("bot")
        replay = Replay("bot", None)
        for record in guard.store.iter_records("bot"):
            replay.feed(record, None)
        folded = replay.finish()
    assert (folded.spent, folded.scar_score, folded.actions_allowed) == (
        status["spent"],
        status["scar_score"],
        status["actions_allowed"],
    )
    assert folded.actions_pending == status["actions_pending"] == 1
    assert folded.head_hash == status["head"]["hash"]


def test_truncated_signed_ledger_opened_without_its_key_is_quarantined_not_fatal(
    db_path, raw_db
) -> None:
    """The repair needs the key; without it that agent is quarantined and the others work."""
    key = Signer.generate_hex()
    with Guard(db_path, signing_key=key, witness=None) as guard:
        _spent_out(guard)
    with Guard(db_path, witness=None) as guard:
        guard.create_agent("unsigned", POLICY)
    with raw_db(db_path) as conn:
        _truncate_termination(conn, "spent")
    with Guard(db_path, witness=None) as guard:
        assert set(guard.quarantined) == {"spent"}
        assert "termination record missing" in guard.quarantined["spent"]
        assert "not repaired" in guard.quarantined["spent"]
        assert guard.agent("unsigned").request("llm_turn", {})["decision"] == "allowed"
    with Guard(db_path, signing_key=key, witness=None) as guard:
        # The key pins itself: the unsigned ledger could be anyone's rewrite, so it is refused.
        assert set(guard.quarantined) == {"unsigned"}
        assert "unsigned" in guard.quarantined["unsigned"]
        assert guard.status("spent")["alive"] is False
        assert guard.log("spent")["records"][-1]["payload"]["by"] == "guard (replay)"

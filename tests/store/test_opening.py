"""Safe defaults when a store is opened: private files, the right key, a known schema."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from guardkit import Guard, StoreError
from guardkit.store import Signer, fingerprint

POLICY = {"budget": 10, "scar_limit": 5, "tools": {"read": {"cost": 1}}}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_database_wal_shared_memory_and_lock_files_are_private(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    old = os.umask(0o022)  # the usual umask would make new files world-readable
    try:
        with Guard(db) as guard:
            guard.create_agent("bot", POLICY)
            guard.agent("bot").request("read", {"secret": "the input an agent sent"})
            files = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}.lock")]
            assert all(path.exists() for path in files)
            assert {path.name: _mode(path) for path in files} == {
                path.name: 0o600 for path in files
            }
    finally:
        os.umask(old)


def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    sqlite3.connect(db).close()
    db.chmod(0o640)  # the operator chose to share it with a group
    with Guard(db):
        pass
    assert _mode(db) == 0o640


def test_the_wrong_signing_key_is_one_clear_error_at_open(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    right, wrong = Signer.generate_hex(), Signer.generate_hex()
    with Guard(db, signing_key=right) as guard:
        guard.create_agent("bot", POLICY)
    with pytest.raises(StoreError) as caught:
        Guard(db, signing_key=wrong)
    message = caught.value.message
    assert fingerprint(Signer(right).public_key) in message
    assert fingerprint(Signer(wrong).public_key) in message
    assert "open the store with the key that signed them" in message
    with pytest.raises(StoreError, match="pins"):  # a key pair that does not match
        Guard(db, signing_key=right, public_key=Signer(wrong).public_key)
    with Guard(db, public_key=Signer(right).public_key) as reader:  # pinned, verifying only
        assert reader.quarantined == {}
        assert reader.verify("bot")["ok"] is True
        with pytest.raises(StoreError, match="open the store with that signing key"):
            reader.agent("bot").request("read")


def test_a_public_key_may_be_a_file(tmp_path: Path) -> None:
    key = Signer.generate_hex()
    pub = tmp_path / "audit.pub"
    pub.write_text(Signer(key).public_key + "\n")
    with Guard(tmp_path / "g.db", signing_key=key) as guard:
        guard.create_agent("bot", POLICY)
    with Guard(tmp_path / "g.db", public_key=str(pub)) as reader:
        assert reader.public_key == Signer(key).public_key
    with pytest.raises(ValueError, match="64 hex digits"):
        Guard(tmp_path / "g.db", public_key="not a key")


def test_a_database_from_a_newer_guardkit_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    Guard(db).close()
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema 99, made by a newer guardkit"):
        Guard(db)

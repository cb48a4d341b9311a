"""``witness="postgresql://..."``: the heads in a table of another database, read back.

A SQLite store witnessed by PostgreSQL (a second server the database's host cannot write): its
tail cut is quarantined with the witnessed seq named, and the witness's rows deleted are refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from guardkit import Guard, LedgerTampered, StoreError
from tests.server.pg import pg_schema_url

POLICY = {"budget": 100, "scar_limit": 10, "tools": {"buy": {"cost": 1}}}


@pytest.fixture
def witness_url() -> Iterator[str]:
    with pg_schema_url() as url:
        yield url


def test_a_cut_tail_is_caught_by_the_witness_on_another_server(
    tmp_path: Path, witness_url: str
) -> None:
    db = tmp_path / "g.db"
    with Guard(db, witness=witness_url) as guard:
        guard.create_agent("bot", POLICY)
        guard.agent("bot").request("buy", {})
        head = guard.status("bot")["head"]
    assert not Path(f"{db}.witness").exists()
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM records WHERE agent_id = 'bot' AND seq = ?", (head["seq"],))
    with Guard(db, witness=witness_url) as guard:
        assert f"saw seq {head['seq']} with hash {head['hash']}" in guard.quarantined["bot"]
        with pytest.raises(LedgerTampered):
            guard.agent("bot").request("buy", {})


def test_deleted_witness_rows_are_refused(tmp_path: Path, witness_url: str) -> None:
    import psycopg

    db = tmp_path / "g.db"
    with Guard(db, witness=witness_url) as guard:
        guard.create_agent("bot", POLICY)
    with Guard(db, witness=witness_url) as guard:  # the store records how many heads it saw
        guard.agent("bot").request("buy", {})
        assert guard.verify("bot")["ok"] is True
    with psycopg.connect(witness_url, autocommit=True) as conn:
        conn.execute("DELETE FROM guardkit_witness")
    with pytest.raises(StoreError, match="its rows were deleted"):
        Guard(db, witness=witness_url)
    with Guard(db, witness=None) as guard:
        assert guard.verify("bot")["ok"] is True

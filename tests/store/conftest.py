"""Fixtures for the ledger tests: stores on every backend, and raw SQL access behind their back.

``store_url`` runs a test on SQLite and PostgreSQL (the latter needs ``GUARDKIT_TEST_PG``, see
``tests/server/pg.py``); ``raw`` executes SQL on that database the way an attacker with write
access would, bypassing guardkit entirely.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from guardkit.store import Signer
from guardkit.store.chain import record_hash
from tests.server.pg import pg_schema_url


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "guard.db")


@contextmanager
def _raw(path: str) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection on the guard's file, committed and closed on exit."""
    with closing(sqlite3.connect(path)) as conn, conn:
        yield conn


@pytest.fixture
def raw_db() -> Callable[[str], AbstractContextManager[sqlite3.Connection]]:
    return _raw


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'guard.db'}"
        return
    with pg_schema_url() as url:
        yield url


class Raw:
    """SQL on a store's database, with ``?`` placeholders on both backends."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.url.startswith("sqlite:///"):
            with _raw(self.url.removeprefix("sqlite:///")) as conn:
                return list(conn.execute(sql, params).fetchall())
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            # Without parameters a script of several statements runs as it is.
            text = sql.replace("?", "%s") if params else sql
            cur = conn.execute(text, params or None)  # type: ignore[arg-type]
            return list(cur.fetchall()) if cur.description else []

    def set_payload(self, agent_id: str, seq: int, payload: dict[str, Any]) -> None:
        """Overwrite one record's payload (canonical JSON), leaving its hash as it was."""
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        self("UPDATE records SET payload = ? WHERE agent_id = ? AND seq = ?", (text, agent_id, seq))

    def resign(self, agent_id: str, key: str) -> None:
        """Rewrite a whole ledger under ``key``: every hash recomputed, every record re-signed."""
        signer = Signer(key)
        rows = self(
            "SELECT seq, timestamp, actor, kind, payload FROM records WHERE agent_id = ? "
            "ORDER BY seq",
            (agent_id,),
        )
        prev = "0" * 64
        for seq, ts, actor, kind, payload in rows:
            if kind == "genesis":
                payload = json.dumps(
                    {"log_id": agent_id, "public_key": signer.public_key}, separators=(",", ":")
                )
            digest = record_hash(seq, ts, actor, kind, payload, prev)
            self(
                "UPDATE records SET payload = ?, prev_hash = ?, hash = ?, signature = ? "
                "WHERE agent_id = ? AND seq = ?",
                (payload, prev, digest, signer.sign(digest), agent_id, seq),
            )
            prev = digest
        self("UPDATE agents SET public_key = ? WHERE agent_id = ?", (signer.public_key, agent_id))


@pytest.fixture
def raw(store_url: str) -> Raw:
    return Raw(store_url)

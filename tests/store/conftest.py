"""Fixtures for the ledger tests: stores on every backend, and raw SQL access behind their back.

``store_url`` runs a test on SQLite and PostgreSQL (the latter needs ``GUARDKIT_TEST_PG``, see
``tests/server/pg.py``); ``raw`` executes SQL on that database the way an attacker with write
access would, bypassing guardkit entirely.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

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


@pytest.fixture
def raw(store_url: str) -> Raw:
    return Raw(store_url)

"""Fixtures for the ledger tests: a guard file in a temp dir, and raw access to it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path

import pytest


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

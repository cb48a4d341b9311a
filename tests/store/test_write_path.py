"""What one decision writes, and when its witness line is made durable.

A decision is one transaction: ``BEGIN``, the ``data_version`` check, one prepared insert of its
records, ``COMMIT``; nothing read back. Counted with SQLite's trace callback (counts, not times).
Under ``durability="full"`` the witness line is written before the decision returns and fsynced
by the witness's thread, the lines of many commits in one fsync; a failed fsync there refuses
every later decision before it writes anything.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from guardkit import Guard, StoreError
from guardkit.store import witness as witness_module
from guardkit.store.sqlite import SQLiteStore

POLICY = {"budget": 10**6, "scar_limit": 10, "tools": {"search": {"cost": 1}}}


@contextmanager
def traced(store: SQLiteStore) -> Iterator[list[str]]:
    """Every statement the store's connection runs (an ``executemany`` row counts once each)."""
    conn: sqlite3.Connection = store._conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        conn.set_trace_callback(None)


def _kinds(statements: list[str]) -> list[str]:
    return [" ".join(text.split()[:3]) for text in statements]


@pytest.mark.parametrize("durability", ["full", "normal"])
def test_a_decision_is_one_insert_in_one_transaction(tmp_path: Path, durability: str) -> None:
    store = SQLiteStore(str(tmp_path / "g.db"), durability=durability)
    with Guard(store) as guard:
        guard.create_agent("bot", POLICY)
        agent = guard.agent("bot")
        agent.report(agent.request("search", {"q": 0})["action_id"], "success")
        with traced(store) as requested:
            decision = agent.request("search", {"q": 1})
        with traced(store) as reported:
            agent.report(decision["action_id"], "success")
    inserts = "INSERT INTO records"
    # request: the action_requested and action_allowed records, one executemany of two rows
    assert _kinds(requested) == [
        "BEGIN IMMEDIATE",
        "PRAGMA data_version",
        inserts,
        inserts,
        "COMMIT",
    ]
    assert _kinds(reported) == ["BEGIN IMMEDIATE", "PRAGMA data_version", inserts, "COMMIT"]


def test_witness_lines_are_written_before_the_answer_and_fsynced_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "g.db"
    path = f"{db}.witness"
    synced: list[int] = []
    real = os.fdatasync

    def counting(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == path:
            synced.append(os.fstat(fd).st_size)
        real(fd)

    monkeypatch.setattr(witness_module.os, "fdatasync", counting)
    with Guard(db) as guard:
        guard.create_agent("bot", POLICY)
        agent = guard.agent("bot")
        for n in range(40):
            decision = agent.request("search", {"q": n})
            head = guard.status("bot")["head"]
            # written (a killed process loses nothing) before the decision is returned
            last = Path(path).read_text().splitlines()[-1]
            assert f'"bot",{head["seq"]},"{head["hash"]}"' in last
            agent.report(decision["action_id"], "success")
        during = len(synced)
    # 81 commits, grouped into far fewer fsyncs; the last lines are made durable at close
    assert 1 <= during < 40
    assert synced[-1] == Path(path).stat().st_size


def test_a_failed_witness_fsync_refuses_every_later_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "g.db"
    path = f"{db}.witness"
    real = os.fdatasync

    def failing(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == path and failing.armed:  # type: ignore[attr-defined]
            raise OSError(errno.EIO, "I/O error")
        real(fd)

    failing.armed = False  # type: ignore[attr-defined]
    monkeypatch.setattr(witness_module.os, "fdatasync", failing)
    guard = Guard(db)
    guard.create_agent("bot", POLICY)
    agent = guard.agent("bot")
    failing.armed = True  # type: ignore[attr-defined]
    answered, refused = 0, None
    deadline = time.monotonic() + 10
    while refused is None and time.monotonic() < deadline:
        try:
            agent.request("search", {"q": answered})
        except StoreError as exc:
            refused = exc
        else:
            answered += 1
            time.sleep(0.005)
    assert refused is not None
    assert "could not be made durable" in str(refused)
    assert answered >= 1  # the fsync that failed ran after the decision was answered
    with pytest.raises(StoreError, match="could not be made durable") as again:
        agent.request("search", {"q": "again"})
    with pytest.raises(StoreError, match="could not be made durable"):
        guard.close()
    failing.armed = False  # type: ignore[attr-defined]
    # every answered decision was written; of the refused ones only one whose commit raced the
    # failed fsync can be (committed, not answered: as after a crash between the two), and none
    # refused once the failure was known
    assert "nothing of it written" in str(again.value)
    with Guard(db) as reopened:
        assert answered <= reopened.status("bot")["actions_allowed"] <= answered + 1
        assert reopened.verify("bot")["ok"] is True

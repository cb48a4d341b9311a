"""Group commit: batches share one transaction; one caller's error never leaks into another's."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from guardkit import Guard, UnknownAction
from guardkit.server.batching import GroupCommitter, SharedStore
from guardkit.store import open_store

POLICY = {"budget": 100, "scar_limit": 10, "tools": {"buy": {"cost": 1}}}


@pytest.fixture(params=["sqlite", "memory"])
def guard(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Guard]:
    url = f"sqlite:///{tmp_path / 'g.db'}" if request.param == "sqlite" else ":memory:"
    with Guard(SharedStore(open_store(url))) as guard:
        guard.create_agent("bot", POLICY)
        guard.create_agent("other", POLICY)
        yield guard


def test_a_batch_with_a_failing_operation_still_commits_the_others(guard: Guard) -> None:
    assert isinstance(guard.store, SharedStore)
    committer = GroupCommitter(guard.store)
    engine = guard.engine
    gate = threading.Event()
    blocker = committer.submit(gate.wait)  # holds the writer so the rest queue up as one batch
    buys = [
        committer.submit(lambda: engine.request("bot", "buy").to_dict(), "bot") for _ in range(3)
    ]
    bad = committer.submit(lambda: engine.report("bot", "act-99", "success"), "bot")
    other = committer.submit(lambda: engine.request("other", "buy").to_dict(), "other")
    gate.set()
    assert blocker.result() is True
    assert [f.result()["action_id"] for f in buys] == ["act-1", "act-2", "act-3"]
    with pytest.raises(UnknownAction):
        bad.result()
    assert other.result()["remaining"] == 99
    committer.close()
    assert guard.status("bot")["spent"] == 3
    assert guard.verify("bot")["records"] == 2 + 2 * 3
    assert guard.verify("other")["ok"] is True


def test_joined_transactions_nest_and_commit_once(guard: Guard) -> None:
    store = guard.store
    assert isinstance(store, SharedStore)
    with store.joined() as outer:
        guard.engine.request("bot", "buy")
        with store.joined() as inner, store.transaction(write=False) as read:
            assert inner is outer
            assert read is outer
        guard.engine.request("bot", "buy")
    assert guard.status("bot")["spent"] == 2


def test_close_finishes_queued_work(guard: Guard) -> None:
    assert isinstance(guard.store, SharedStore)
    committer = GroupCommitter(guard.store)
    futures = [
        committer.submit(lambda: guard.engine.request("bot", "buy").decision, "bot")
        for _ in range(10)
    ]
    committer.close()
    assert [f.result() for f in futures] == ["allowed"] * 10
    GroupCommitter(guard.store).close()  # never started: nothing to stop


def test_writer_count_follows_the_store(tmp_path: Path) -> None:
    from guardkit.server import ServerState

    sqlite = ServerState.open(
        open_store(f"sqlite:///{tmp_path / 'w.db'}"), admin_token="a" * 32, backend_token="b" * 32
    )
    memory = ServerState.open(open_store(":memory:"), admin_token="a" * 32, backend_token="b" * 32)
    assert (len(sqlite.committers), len(memory.committers)) == (1, 1)
    sqlite.close()
    memory.close()

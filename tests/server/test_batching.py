"""Group commit: batches share one transaction; one caller's error never leaks into another's."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from guardkit import Guard, StoreError, UnknownAction
from guardkit.server.batching import GroupCommitter, SharedStore
from guardkit.store import open_store
from tests.server.pg import pg_schema_url

POLICY = {"budget": 100, "scar_limit": 10, "tools": {"buy": {"cost": 1}}}


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def guard(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Guard]:
    with ExitStack() as stack:
        if request.param == "postgresql":
            url = stack.enter_context(pg_schema_url())
        else:
            url = f"sqlite:///{tmp_path / 'g.db'}" if request.param == "sqlite" else ":memory:"
        shared = SharedStore(open_store(url))
        guard = stack.enter_context(Guard(shared))
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


def test_one_writer_unless_asked_for_more(tmp_path: Path) -> None:
    from guardkit.server import ServerState
    from guardkit.server.state import ServerLimits

    tokens = {"admin_token": "a" * 32, "backend_token": "b" * 32}
    sqlite = ServerState.open(open_store(f"sqlite:///{tmp_path / 'w.db'}"), **tokens)
    memory = ServerState.open(open_store(":memory:"), **tokens)
    three = ServerState.open(open_store(":memory:"), limits=ServerLimits(writers=3), **tokens)
    assert [len(s.committers) for s in (sqlite, memory, three)] == [1, 1, 3]
    for state in (sqlite, memory, three):
        state.close()


def test_a_batch_locks_its_agents_ahead(guard: Guard) -> None:
    """Prefetching is a hint: a batch still decides right for agents it did not announce."""
    assert isinstance(guard.store, SharedStore)
    with guard.store.joined() as tx:
        tx.prefetch(["bot", "ghost"])
        assert guard.engine.request("bot", "buy").decision == "allowed"
        assert guard.engine.request("other", "buy").decision == "allowed"
    assert guard.status("bot")["spent"] == guard.status("other")["spent"] == 1


def test_a_failure_after_writing_rolls_back_only_its_own_writes(guard: Guard) -> None:
    """An operation that fails once it has written (not a clean refusal) takes the batch's
    transaction down with it; the others are committed one by one and get their results."""
    assert isinstance(guard.store, SharedStore)
    committer = GroupCommitter(guard.store)
    engine = guard.engine

    def buy_then_fail() -> None:
        engine.request("bot", "buy")
        raise RuntimeError("the caller's code failed after the decision")

    gate = threading.Event()
    committer.submit(gate.wait)
    before = committer.submit(lambda: engine.request("bot", "buy").to_dict(), "bot")
    failing = committer.submit(buy_then_fail, "bot")
    after = committer.submit(lambda: engine.request("other", "buy").to_dict(), "other")
    gate.set()
    assert before.result()["decision"] == "allowed"
    with pytest.raises(RuntimeError, match="failed after the decision"):
        failing.result()
    assert after.result()["remaining"] == 99
    committer.close()
    assert guard.status("bot")["spent"] == 1  # the failed operation's request is not kept
    assert guard.verify("bot")["records"] == 2 + 2
    assert guard.verify("other")["ok"] is True


def test_a_batch_is_one_commit_and_one_witness_append(tmp_path: Path) -> None:
    """Concurrent decisions share one transaction: one COMMIT (one fsync) and one append of
    the heads it changed (one line per agent, not per decision) for the whole batch."""
    from guardkit.store.sqlite import SQLiteStore

    inner = SQLiteStore(str(tmp_path / "g.db"))
    witness = tmp_path / "g.db.witness"
    with Guard(SharedStore(inner)) as guard:
        for agent_id in ("bot", "other"):
            guard.create_agent(agent_id, POLICY)
        assert isinstance(guard.store, SharedStore)
        committer = GroupCommitter(guard.store)
        engine = guard.engine
        gate, inside = threading.Event(), threading.Event()
        held = committer.submit(lambda: inside.set() or gate.wait())
        inside.wait()  # the writer is in the held job's transaction: the rest queue behind it
        statements: list[str] = []
        lines = len(witness.read_text().splitlines())
        inner._conn.set_trace_callback(statements.append)
        futures = [
            committer.submit(lambda a=agent_id: engine.request(a, "buy").to_dict(), agent_id)
            for agent_id in ("bot", "other", "bot", "other", "bot")
        ]
        gate.set()
        assert held.result() is True
        assert [f.result()["decision"] for f in futures] == ["allowed"] * 5
        committer.close()
        inner._conn.set_trace_callback(None)
        # the held job's (empty) transaction, then the batch's
        assert statements.count("COMMIT") == 2
        assert len([s for s in statements if s.startswith("INSERT INTO records")]) == 10
        assert len(witness.read_text().splitlines()) == lines + 2
        assert guard.status("bot")["spent"] == 3


def test_a_batch_committed_but_not_witnessed_is_not_run_again(tmp_path: Path) -> None:
    """The witness fails after the batch's commit: every operation of the batch gets the error,
    and none runs a second time (the batch is not rolled back: it is in the ledger)."""
    from tests.store.test_command_witness import publisher

    command, _, down = publisher(tmp_path)
    with Guard(SharedStore(open_store(f"sqlite:///{tmp_path / 'g.db'}", witness=command))) as guard:
        guard.create_agent("bot", POLICY)
        assert isinstance(guard.store, SharedStore)
        committer = GroupCommitter(guard.store)
        engine = guard.engine
        gate, inside = threading.Event(), threading.Event()
        committer.submit(lambda: inside.set() or gate.wait())
        inside.wait()
        futures = [
            committer.submit(lambda: engine.request("bot", "buy").to_dict(), "bot")
            for _ in range(3)
        ]
        down.touch()
        gate.set()
        for future in futures:
            with pytest.raises(StoreError, match="witness command"):
                future.result()
        committer.close()
        down.unlink()
        assert guard.verify("bot")["records"] == 2 + 2 * 3


def test_a_loops_callers_get_its_futures_and_a_cancelled_one_is_skipped(guard: Guard) -> None:
    """Callers on an event loop await futures of that loop; one whose caller went away (its
    future cancelled) still has its operation committed, and the others get their results."""
    import asyncio

    assert isinstance(guard.store, SharedStore)
    committer = GroupCommitter(guard.store)
    engine = guard.engine

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        gate = threading.Event()
        held = committer.submit(gate.wait, "", loop)
        futures = [
            committer.submit(lambda: engine.request("bot", "buy").to_dict(), "bot", loop)
            for _ in range(3)
        ]
        futures[1].cancel()
        gate.set()
        assert await held is True
        return [(await f)["action_id"] for f in (futures[0], futures[2])]

    assert asyncio.run(main()) == ["act-1", "act-3"]
    committer.close()
    assert guard.status("bot")["spent"] == 3

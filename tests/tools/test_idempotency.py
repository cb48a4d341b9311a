"""Idempotent tools: replay without running or charging, conflicts, leases, threads, processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import guardkit
from guardkit import Idempotency, IdempotencyConflict, IdempotencyInProgress
from guardkit.idempotency import IdemStatus
from guardkit.store import IdemRecord, open_store

HELPERS = Path(__file__).parent / "helpers"


def _pay(agent: guardkit.LocalAgent, calls: Any, **options: Any) -> Any:
    @guardkit.tool(
        guard=agent, cost=lambda a: a["amount"], idempotency=Idempotency(key=["invoice"], **options)
    )
    def pay(invoice: str, amount: int) -> dict[str, Any]:
        calls(invoice, amount)
        return {"paid": invoice, "amount": amount}

    return pay


def test_replay_returns_the_stored_result_without_running_or_charging(agent, ledger, calls):
    pay = _pay(agent, calls)
    first = pay("INV-1", 30)
    spent = agent.status()["spent"]
    assert pay("INV-1", 30) == first == {"paid": "INV-1", "amount": 30}
    assert calls.count == 1
    assert agent.status()["spent"] == spent == 30
    denied = ledger(agent, "action_denied")
    assert denied[-1]["reason"]["code"] == "idempotent_replay"
    assert denied[-1]["reason"]["of"] == "act-1"
    assert ledger(agent, "scar") == []


def test_a_replay_is_not_counted_as_a_denial(agent, guard, calls):
    pay = _pay(agent, calls)
    pay("INV-1", 30)
    pay("INV-1", 30)
    pay("INV-1", 30)
    status = agent.status()
    assert status["actions_denied"] == 0
    assert status["actions_allowed"] == 1
    # The ledger agrees: reopening checks the materialised state against a replay of it.
    assert guard.engine.check_ledgers() == {}


def test_terminated_agent_gets_no_replay(agent, guard, calls):
    pay = _pay(agent, calls)
    pay("INV-1", 30)
    guard.terminate(agent.agent_id, "incident", "ops")
    with pytest.raises(guardkit.ToolDenied) as info:
        pay("INV-1", 30)
    assert info.value.reason["code"] == "terminated"


def test_same_key_different_payload_conflicts(agent, calls):
    pay = _pay(agent, calls)
    pay("INV-1", 30)
    with pytest.raises(IdempotencyConflict):
        pay("INV-1", 31)
    assert calls.count == 1


def test_different_keys_run_separately(agent, calls):
    pay = _pay(agent, calls)
    pay("INV-1", 1)
    pay("INV-2", 1)
    assert calls.count == 2


def test_failure_deletes_the_record_so_a_retry_runs(agent, guard):
    attempts: list[int] = []

    @guardkit.tool(guard=agent, idempotency=Idempotency(key=["n"]))
    def flaky(n: int) -> int:
        attempts.append(n)
        if len(attempts) == 1:
            raise ConnectionError("down")
        return n

    with pytest.raises(ConnectionError):
        flaky(1)
    assert flaky(1) == 1
    assert flaky(1) == 1
    assert attempts == [1, 1]


def test_denial_releases_the_key(make_agent, calls):
    agent = make_agent(tools={"pay": {"cost": 5}}, budget=4, default_rule=None)
    pay = _pay(agent, calls)
    with pytest.raises(guardkit.ToolDenied):
        pay("INV-1", 1)
    with pytest.raises(guardkit.ToolDenied):  # not IdempotencyInProgress: the key was freed
        pay("INV-1", 1)
    assert calls.count == 0


def test_in_progress_duplicate_raises_and_expired_lease_is_taken_over(agent, calls):
    pay = _pay(agent, calls, lease=60)
    key = Idempotency(key=["invoice"]).derive_key("pay", {"invoice": "INV-9"})
    payload = {"amount": 1, "invoice": "INV-9"}
    from guardkit._canonical import canonical_json, sha256_hex

    digest = sha256_hex(canonical_json(payload))
    store = agent.guard.store
    with store.transaction() as tx:
        tx.idem_put(
            IdemRecord(
                key=key,
                status=IdemStatus.IN_PROGRESS.value,
                payload_hash=digest,
                owner="other",
                lease_expires=time.time() + 60,
            )
        )
    with pytest.raises(IdempotencyInProgress):
        pay("INV-9", 1)
    assert calls.count == 0
    with store.transaction() as tx:
        tx.idem_put(
            IdemRecord(
                key=key,
                status=IdemStatus.IN_PROGRESS.value,
                payload_hash=digest,
                owner="other",
                lease_expires=time.time() - 1,
            )
        )
    assert pay("INV-9", 1) == {"paid": "INV-9", "amount": 1}
    assert calls.count == 1


def test_expired_result_runs_again(agent, calls):
    pay = _pay(agent, calls, ttl=0.05)
    pay("INV-1", 1)
    time.sleep(0.08)
    pay("INV-1", 1)
    assert calls.count == 2


def test_unstorable_result_is_a_clear_error_at_first_call(agent):
    @guardkit.tool(guard=agent, idempotency=Idempotency(key=["n"]))
    def make(n: int) -> Any:
        return object()

    with pytest.raises(TypeError, match="can't be stored as JSON"):
        make(1)
    with pytest.raises(TypeError):  # not silently replayed as null
        make(1)


class Receipt:
    """A result type that is not JSON."""


def test_declared_non_json_result_fails_at_decoration():
    with pytest.raises(TypeError, match="returns Receipt"):

        @guardkit.tool(idempotency=Idempotency(key=["n"]))
        def make(n: int) -> Receipt:
            return Receipt()

    @guardkit.tool(idempotency=Idempotency(key=["n"], serialize=vars, deserialize=dict))
    def make_ok(n: int) -> Receipt:
        return Receipt()


def test_serializers_round_trip(agent, calls):
    class Money:
        def __init__(self, cents: int) -> None:
            self.cents = cents

    @guardkit.tool(
        guard=agent,
        idempotency=Idempotency(
            key=["n"],
            serialize=lambda m: {"cents": m.cents},
            deserialize=lambda d: Money(d["cents"]),
        ),
    )
    def price(n: int) -> Money:
        calls(n)
        return Money(n * 100)

    assert price(2).cents == 200
    assert price(2).cents == 200
    assert calls.count == 1


def test_callable_key(agent, calls):
    @guardkit.tool(guard=agent, idempotency=Idempotency(key=lambda a: a["order"]["id"]))
    def ship(order: dict[str, Any]) -> str:
        calls(order)
        return "ok"

    ship({"id": 1, "note": "a"})
    with pytest.raises(IdempotencyConflict):
        ship({"id": 1, "note": "b"})
    assert calls.count == 1


def test_misuse_at_decoration():
    with pytest.raises(ValueError, match="unknown arguments"):
        guardkit.tool(idempotency=Idempotency(key=["nope"]))(lambda a: a)
    with pytest.raises(TypeError, match="stream"):

        @guardkit.tool(idempotency=Idempotency(key=["n"]))
        def gen(n: int):
            yield n

    with pytest.raises(TypeError):
        Idempotency(key="n")
    with pytest.raises(ValueError, match="lease"):
        Idempotency(key=["n"], lease=0)


class _NoStore:
    """An agent guard with no store (an HTTP client)."""

    @property
    def agent_id(self) -> str:
        return self._inner.agent_id

    def __init__(self, inner: guardkit.LocalAgent) -> None:
        self._inner = inner

    def request(self, tool: str, input: Any = None, cost: Any = None) -> dict[str, Any]:
        return self._inner.request(tool, input, cost)

    def report(self, action_id: str, status: str, detail: str = "") -> dict[str, Any]:
        return self._inner.report(action_id, status, detail)

    def status(self) -> dict[str, Any]:
        return self._inner.status()

    def action(self, action_id: str) -> dict[str, Any]:
        return self._inner.action(action_id)

    def wait_for_approval(self, action_id: str, timeout: float = 300, poll: float = 2.0) -> str:
        return self._inner.wait_for_approval(action_id, timeout, poll)


def test_agent_without_store_needs_an_explicit_store(agent, calls, tmp_path):
    remote = _NoStore(agent)

    @guardkit.tool(guard=remote, idempotency=Idempotency(key=["n"]))
    def f(n: int) -> int:
        calls(n)
        return n

    with pytest.raises(TypeError, match="open_store"):
        f(1)
    assert calls.count == 0
    store = open_store(str(tmp_path / "idem.db"))

    @guardkit.tool(guard=remote, idempotency=Idempotency(key=["n"], store=store))
    def g(n: int) -> int:
        calls(n)
        return n

    assert g(1) == g(1) == 1
    assert calls.count == 1
    store.close()


def test_async_idempotent_tool(agent, calls):
    import asyncio

    @guardkit.tool(guard=agent, idempotency=Idempotency(key=["n"]))
    async def f(n: int) -> int:
        calls(n)
        return n * 2

    async def main() -> list[int]:
        return [await f(2), await f(2)]

    assert asyncio.run(main()) == [4, 4]
    assert calls.count == 1


@pytest.mark.parametrize("wait", [0.0, 5.0])
def test_eight_threads_same_key_body_runs_once(tmp_path, wait):
    with guardkit.Guard(tmp_path / "g.db") as guard:
        guard.create_agent("t", {"budget": 100, "tools": {"ship": {"cost": 1}}})
        agent = guard.agent("t")
        ran: list[int] = []
        barrier = threading.Barrier(8)

        @guardkit.tool(guard=agent, idempotency=Idempotency(key=["order"], wait=wait))
        def ship(order: str) -> dict[str, str]:
            ran.append(1)
            time.sleep(0.2)
            return {"tracking": "T-1"}

        outcomes: list[Any] = []

        def call() -> None:
            barrier.wait()
            try:
                outcomes.append(ship("o-1"))
            except IdempotencyInProgress as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(ran) == 1
        results = [o for o in outcomes if isinstance(o, dict)]
        assert all(r == {"tracking": "T-1"} for r in results)
        assert len(outcomes) == 8
        if wait:
            assert len(results) == 8
        assert guard.status("t")["spent"] == 1


def test_four_processes_same_key_body_runs_once(tmp_path):
    db, counter = tmp_path / "g.db", tmp_path / "counter"
    with guardkit.Guard(db) as guard:
        guard.create_agent("worker", {"budget": 100, "tools": {"ship": {"cost": 1}}})
    start_at = time.time() + 1.5
    procs = [
        subprocess.Popen(
            [sys.executable, str(HELPERS / "idem_worker.py"), str(db), str(counter), str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    assert counter.read_text().splitlines() == ["ran"]
    results = [json.loads(o.split(" ", 1)[1]) for o in outputs if o.startswith("result")]
    assert results, outputs
    assert all(r == {"order": "o-1", "tracking": "T-1"} for r in results)
    assert all(o.startswith("result") or o == "in_progress" for o in outputs)
    with guardkit.Guard(db) as guard:
        assert guard.status("worker")["spent"] == 1

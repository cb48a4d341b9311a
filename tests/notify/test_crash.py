"""Through a restart and a ``kill -9`` mid-delivery, every event reaches a receiver that drops
repeats exactly once; two workers on one PostgreSQL database deliver each event once between
them."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from guardkit.client import AdminClient, AgentClient
from guardkit.notify import Delivery, DeliverySettings, WebhookSink, Worker
from guardkit.store import open_store
from tests.notify.receiver import Receiver
from tests.server.launch import start_server_process
from tests.server.pg import pg_schema_url

TOKEN = "notify-admin-" + "n" * 32
SECRET = "crash-secret-0123456789"
POLICY = {
    "budget": 1000,
    "scar_limit": 10,
    "tools": {"pay": {"cost": 1, "requires_approval": True}},
}


class Counting(WebhookSink):
    """A webhook sink that counts what it sent."""

    sent = 0

    def send(self, delivery: Delivery) -> None:
        super().send(delivery)
        self.sent += 1


def _start(data_dir: Path, receiver: Receiver) -> tuple[subprocess.Popen[str], str]:
    env = {
        "GUARD_ADMIN_TOKEN": TOKEN,
        "GUARD_NOTIFY_WEBHOOK": receiver.url,
        "GUARD_NOTIFY_SECRET": SECRET,
    }
    fast = ["--notify-lease", "1", "--notify-backoff", "0.1", "--notify-poll", "0.05"]
    return start_server_process(
        data_dir, "--bind", "127.0.0.1:0", *fast, env=env, stderr=subprocess.DEVNULL
    )


def _pending(url: str, token: str, count: int) -> list[str]:
    with AgentClient(url, "ops", token) as agent:
        return [agent.request("pay", {"n": i})["action_id"] for i in range(count)]


def _outbox_ids(db: Path) -> list[str]:
    store = open_store(str(db))
    try:
        with store.transaction(write=False) as tx:
            return [event_id for _, event_id, _, _ in tx.outbox(0, 10_000)]
    finally:
        store.close()


def _settled(url: str) -> list[dict[str, object]]:
    """``GET /v1/notifications`` once nothing is pending (a delivery is marked after the
    receiver has it)."""
    deadline = time.monotonic() + 10
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        while True:
            sinks: list[dict[str, object]] = http.get("/v1/notifications").json()["sinks"]
            if all(s["pending"] == 0 for s in sinks) or time.monotonic() > deadline:
                return sinks
            time.sleep(0.05)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
    proc.communicate(timeout=30)


@pytest.mark.slow
def test_every_event_exactly_once_through_a_restart_and_a_kill_9(tmp_path: Path) -> None:
    receiver = Receiver(SECRET, hold_type="approval.approved")
    try:
        proc, url = _start(tmp_path, receiver)
        try:
            with AdminClient(url, TOKEN) as admin:
                token = admin.create_agent("ops", POLICY)["token"]
                first = _pending(url, token, 5)
                receiver.wait_for(5)
                admin.approve("ops", first[0], "alice")  # its delivery is held by the receiver
                assert receiver.holding.wait(10)
                for action_id in first[1:3]:
                    admin.reject("ops", action_id, "bob", "no")
            proc.send_signal(signal.SIGKILL)  # mid-delivery: sent, never acknowledged
            proc.wait()
        finally:
            _stop(proc)
        receiver.release.set()

        proc, url = _start(tmp_path, receiver)  # the held delivery is sent again after its lease
        try:
            _pending(url, token, 3)
            with AdminClient(url, TOKEN) as admin:
                admin.terminate("ops", "done", "carol")
                receiver.wait_for(len(_outbox_ids(tmp_path / "guard.db")))
                sinks = _settled(url)
        finally:
            _stop(proc)  # a clean stop, then one more start with nothing owed

        proc, url = _start(tmp_path, receiver)
        try:
            time.sleep(0.5)
        finally:
            _stop(proc)

        expected = _outbox_ids(tmp_path / "guard.db")
        assert len(expected) == 5 + 1 + 2 + 3 + 1
        assert sorted(receiver.accepted) == sorted(expected)
        assert receiver.duplicates >= 1  # the delivery the kill interrupted came again
        assert receiver.bad_signatures == 0
        types = [json.loads(receiver.accepted[i])["type"] for i in expected]
        assert types.count("approval.approved") == 1
        assert types[-1] == "agent.terminated"
        (webhook,) = sinks
        assert (webhook["sink"], webhook["pending"]) == ("webhook", 0)
        assert webhook["delivered"] == len(expected)
    finally:
        receiver.close()


@pytest.mark.slow
def test_two_workers_on_one_postgresql_deliver_each_event_once(tmp_path: Path) -> None:
    receiver = Receiver(SECRET)
    settings = DeliverySettings(backoff=0.05, max_backoff=1, lease=10, poll=0.01, batch=3)
    with pg_schema_url() as url:
        from guardkit import Guard

        with Guard(url) as guard:
            guard.create_agent("ops", POLICY)
            agent = guard.agent("ops")
            for i in range(40):
                agent.request("pay", {"n": i})
            stores = [open_store(url), open_store(url)]
            sinks = [Counting(receiver.url, SECRET), Counting(receiver.url, SECRET)]
            workers = [
                Worker(s, [k], settings=settings) for s, k in zip(stores, sinks, strict=True)
            ]
            for worker in workers:  # both at once, on the same 40 due events
                worker.start()
            try:
                receiver.wait_for(40)
                time.sleep(0.3)  # any second delivery would arrive now
            finally:
                for worker in workers:
                    worker.stop()
                for store in stores:
                    store.close()
            (stats,) = guard.notifications()
    receiver.close()
    assert len(receiver.accepted) == 40
    assert receiver.duplicates == 0
    assert len(receiver.hits) == 40
    assert (stats["delivered"], stats["pending"], stats["failures"]) == (40, 0, 0)
    assert sum(sink.sent for sink in sinks) == 40
    assert all(sink.sent for sink in sinks), [sink.sent for sink in sinks]  # shared the work

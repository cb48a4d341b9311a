"""Per-sink event filters and the pruning of delivered events (never undelivered ones)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardkit import Guard
from guardkit.notify import CommandSink, DeliverySettings, WebhookSink, Worker
from guardkit.notify.config import from_options
from tests.notify.receiver import Receiver
from tests.server.pg import pg_schema_url

SECRET = "test-secret-0123456789"
POLICY = {"budget": 100, "scar_limit": 10, "tools": {"pay": {"cost": 1, "requires_approval": True}}}
FAST = DeliverySettings(backoff=0.05, max_backoff=5, lease=5, poll=0.02, retention=0)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "g.db")
        return
    with pg_schema_url() as url:
        yield url


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver(SECRET)
    yield found
    found.close()


def _drain(worker: Worker) -> None:
    for sink in worker.sinks:
        while worker.deliver_due(sink):
            pass


def _history(guard: Guard) -> None:
    """approval.pending, approval.approved, approval.pending, agent.terminated."""
    guard.create_agent("ops", POLICY)
    agent = guard.agent("ops")
    agent.request("pay", {"n": 1})
    guard.approve("ops", "act-1", "op")
    agent.request("pay", {"n": 2})
    guard.terminate("ops", "done", "op")


def _stats(guard: Guard) -> dict[str, Any]:
    return {s["sink"]: s for s in guard.notifications()}


def test_a_sink_gets_only_the_event_types_it_takes(store_url: str, receiver: Receiver) -> None:
    with Guard(store_url) as guard:
        _history(guard)
        worker = Worker(
            guard.engine.store,
            [WebhookSink(receiver.url, SECRET)],
            settings=FAST,
            events={"webhook": {"approval.pending", "agent.terminated"}},
        )
        _drain(worker)
        worker.stop()
        got = [json.loads(b)["type"] for b in receiver.accepted.values()]
        assert sorted(got) == ["agent.terminated", "approval.pending", "approval.pending"]
        stats = _stats(guard)["webhook"]
        assert (stats["pending"], stats["delivered"]) == (0, 3)
        assert stats["skipped"] == 1  # approval.approved
        assert stats["attempts"] == 3


def test_filters_come_from_the_environment_names_and_are_checked() -> None:
    values: dict[str, Any] = {
        "notify_webhook": "http://127.0.0.1:9/h",
        "notify_secret": SECRET,
        "notify_slack": "http://127.0.0.1:9/s",
        "notify_command": None,
        "notify_backoff": 2.0,
        "notify_max_backoff": 600.0,
        "notify_lease": 60.0,
        "notify_poll": 1.0,
        "notify_retention": 86400.0,
        "console_url": None,
        "link_ttl": 3600.0,
        "notify_events": "approval.pending, agent.terminated",
        "notify_webhook_events": None,
        "notify_slack_events": "approval.pending",
        "notify_command_events": None,
    }
    config = from_options(values)
    assert config.events["webhook"] == {"approval.pending", "agent.terminated"}
    assert config.events["slack"] == {"approval.pending"}
    assert config.settings.retention == 86400.0
    with pytest.raises(ValueError, match=r"unknown event type 'approval\.pendng'"):
        from_options({**values, "notify_slack_events": "approval.pendng"})
    assert from_options({**values, "notify_events": None, "notify_slack_events": ""}).events == {}


def _outbox(guard: Guard) -> int:
    with guard.engine.store.transaction(write=False) as tx:
        row = tx._one("SELECT count(*) FROM outbox")  # type: ignore[attr-defined]
        return int(row[0])


def test_pruning_deletes_only_what_every_sink_delivered_before_the_retention(
    store_url: str, receiver: Receiver, tmp_path: Path
) -> None:
    now = [1_000_000.0]
    script = tmp_path / "sink.py"
    script.write_text("import sys\nsys.exit(3)\n")
    settings = DeliverySettings(backoff=0.05, max_backoff=0.05, lease=5, retention=3600)
    with Guard(store_url) as guard:
        guard.create_agent("ops", POLICY)
        for n in range(3):
            guard.agent("ops").request("pay", {"n": n})
        store = guard.engine.store
        worker = Worker(
            store,
            [WebhookSink(receiver.url, SECRET), CommandSink(f"{sys.executable} {script}")],
            settings=settings,
            clock=lambda: now[0],
        )
        command = worker.sinks[1]
        _drain(worker)  # the webhook delivers all three, the command fails each once
        assert len(receiver.accepted) == 3
        assert _stats(guard)["command"]["pending"] == 3
        now[0] += 3601
        assert worker.prune() == 0  # the command sink never delivered them: kept
        assert _outbox(guard) == 3
        script.write_text("import sys\nsys.stdin.read()\n")
        worker.deliver_due(command)
        assert _stats(guard)["command"]["delivered"] == 3
        now[0] += 1
        assert worker.prune() == 0  # delivered everywhere, but just now
        now[0] += 3600
        assert worker.prune() == 3
        assert _outbox(guard) == 0
        assert _stats(guard)["webhook"]["pending"] == 0
        # Later events are delivered as ever; pruned ones are never sent again.
        guard.agent("ops").request("pay", {"n": 4})
        _drain(worker)
        worker.stop()
        assert len(receiver.accepted) == 4
        assert receiver.duplicates == 0
        assert _stats(guard)["command"]["pending"] == 0


def test_retention_zero_keeps_everything(tmp_path: Path, receiver: Receiver) -> None:
    now = [1_000_000.0]
    with Guard(str(tmp_path / "g.db")) as guard:
        _history(guard)
        worker = Worker(
            guard.engine.store,
            [WebhookSink(receiver.url, SECRET)],
            settings=FAST,
            clock=lambda: now[0],
        )
        _drain(worker)
        now[0] += 10**9
        assert worker.prune() == 0
        worker.stop()
        assert _outbox(guard) == 4

"""Delivery in one process: signed webhooks, retries with back-off, sinks, status, tampering."""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from guardkit import Guard
from guardkit.notify import CommandSink, DeliverySettings, SlackSink, WebhookSink, Worker
from guardkit.notify.config import NotifyConfig
from guardkit.notify.sinks import slack_message
from tests.notify.receiver import Receiver

SECRET = "test-secret-0123456789"
POLICY = {"budget": 100, "scar_limit": 10, "tools": {"pay": {"cost": 1, "requires_approval": True}}}
FAST = DeliverySettings(backoff=0.05, max_backoff=5, lease=5, poll=0.02)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver(SECRET)
    yield found
    found.close()


@pytest.fixture
def guard(tmp_path: Path) -> Iterator[Guard]:
    with Guard(str(tmp_path / "g.db")) as opened:
        opened.create_agent("ops", POLICY)
        yield opened


def test_a_failing_receiver_gets_the_event_after_retries_that_back_off(
    guard: Guard, receiver: Receiver
) -> None:
    receiver.fail_first = 4
    pay = guard.agent("ops").request("pay", {"to": "acme"})
    worker = Worker(guard.engine.store, [WebhookSink(receiver.url, SECRET)], settings=FAST)
    worker.start()
    try:
        receiver.wait_for(1)
    finally:
        worker.stop()
    assert receiver.bad_signatures == 0
    hits = receiver.hits
    assert [h.status for h in hits] == [500, 500, 500, 500, 200]
    assert [h.attempt for h in hits] == [1, 2, 3, 4, 5]
    gaps = [b.at - a.at for a, b in itertools.pairwise(hits)]
    for attempt, gap in enumerate(gaps, start=1):  # at least half of backoff * 2**(attempt-1)
        assert gap >= 0.5 * FAST.backoff * 2 ** (attempt - 1) * 0.95, gaps
    event = json.loads(receiver.accepted[hits[-1].event_id])
    assert event["type"] == "approval.pending"
    assert (event["agent_id"], event["action_id"]) == ("ops", pay["action_id"])
    assert event["action"]["input"] == {"to": "acme"}
    (stats,) = guard.notifications()
    assert stats["sink"] == "webhook"
    assert (stats["pending"], stats["delivered"]) == (0, 1)
    assert (stats["attempts"], stats["failures"]) == (5, 4)
    assert stats["last_error"] is not None
    assert "HTTP 500" in stats["last_error"]


def test_a_connection_the_receiver_closed_while_idle_is_opened_anew(
    guard: Guard, receiver: Receiver
) -> None:
    receiver.idle_timeout = 0.2
    sink = WebhookSink(receiver.url, SECRET)
    worker = Worker(guard.engine.store, [sink], settings=FAST)
    for _ in range(2):
        guard.agent("ops").request("pay", {})
        assert worker.deliver_due(sink) == 1
        time.sleep(0.5)  # the receiver hangs up the kept-alive connection meanwhile
    worker.stop()
    assert len(receiver.accepted) == 2
    (stats,) = guard.notifications()
    assert (stats["delivered"], stats["failures"]) == (2, 0)


def test_an_unreachable_sink_keeps_the_event_and_counts_the_failures(
    guard: Guard, receiver: Receiver
) -> None:
    guard.agent("ops").request("pay", {})
    dead = WebhookSink("http://127.0.0.1:9/hook", SECRET, timeout=1)  # discard port: refused
    worker = Worker(guard.engine.store, [dead], settings=FAST)
    for _ in range(3):
        worker.deliver_due(dead)
        time.sleep(0.2)
    worker.stop()
    (stats,) = guard.notifications()
    assert stats["pending"] == 1
    assert stats["delivered"] == 0
    assert stats["failures"] >= 2
    assert "ConnectionRefusedError" in (stats["last_error"] or "")
    # The event is still there for a sink that works (a restart with the right URL).
    fixed = WebhookSink(receiver.url, SECRET, name="webhook")
    worker = Worker(guard.engine.store, [fixed], settings=FAST)
    deadline = time.monotonic() + 10
    while not receiver.accepted and time.monotonic() < deadline:
        worker.deliver_due(fixed)
        time.sleep(0.05)
    worker.stop()
    assert len(receiver.accepted) == 1


def test_an_event_edited_in_the_database_is_never_sent(
    guard: Guard, receiver: Receiver, tmp_path: Path
) -> None:
    guard.agent("ops").request("pay", {"to": "acme", "amount": 1})
    with contextlib.closing(sqlite3.connect(tmp_path / "g.db")) as conn, conn:
        conn.execute("UPDATE outbox SET body = replace(body, '\"amount\":1', '\"amount\":9')")
    sink = WebhookSink(receiver.url, SECRET)
    worker = Worker(guard.engine.store, [sink], settings=FAST)
    worker.deliver_due(sink)
    worker.stop()
    assert receiver.hits == []
    (stats,) = guard.notifications()
    assert stats["pending"] == 1
    assert "does not match the ledger" in (stats["last_error"] or "")


def test_the_slack_message_shows_tool_agent_exact_input_why_and_the_link(
    guard: Guard, receiver: Receiver
) -> None:
    pay = guard.agent("ops").request("pay", {"to": "acme", "amount": 1200})
    sink = SlackSink(receiver.url)  # the receiver takes any POST; Slack's carry no signature
    receiver.secret = ""
    worker = Worker(guard.engine.store, [sink], settings=FAST, console_url="https://guard.example/")
    with guard.engine.store.transaction(write=False) as tx:
        ((_, _, _, body),) = tx.outbox()
    from guardkit.notify.event import Delivery

    message = slack_message(Delivery(body, 1, "https://guard.example/"))
    text = message["text"]
    assert "Approval needed" in text
    assert "`pay`" in text
    assert "`ops`" in text
    assert pay["action_id"] in text
    assert '"amount": 1200' in text
    assert '"to": "acme"' in text
    assert "the policy requires approval for pay" in text
    assert f"https://guard.example/#agent=ops&action={pay['action_id']}" in text
    assert message["blocks"][0]["text"]["text"] == text
    assert worker.console_url == "https://guard.example/"


def test_the_command_sink_gets_the_event_on_stdin(guard: Guard, tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    script = tmp_path / "sink.py"
    script.write_text(
        "import os, sys\n"
        f"with open({str(out)!r}, 'a') as f:\n"
        "    f.write(os.environ['GUARDKIT_EVENT_TYPE'] + ' ' + sys.stdin.read() + '\\n')\n"
    )
    failing = CommandSink(f"{sys.executable} -c 'raise SystemExit(3)'", name="broken")
    sink = CommandSink(f"{sys.executable} {script}")
    pay = guard.agent("ops").request("pay", {"x": 1})
    guard.approve("ops", pay["action_id"], "alice")
    worker = Worker(guard.engine.store, [sink, failing], settings=FAST)
    assert worker.deliver_due(sink) == 2
    assert worker.deliver_due(failing) == 2
    lines = out.read_text().splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["approval.pending", "approval.approved"]
    assert json.loads(lines[1].split(" ", 1)[1])["decision"]["approved_by"] == "alice"
    broken = {s["sink"]: s for s in guard.notifications()}["broken"]
    assert broken["pending"] == 2
    assert "exited 3" in (broken["last_error"] or "")


def test_a_webhook_without_a_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="GUARD_NOTIFY_SECRET"):
        NotifyConfig(webhook="https://example.invalid/hook")
    with pytest.raises(ValueError, match="at least 16"):
        NotifyConfig(webhook="https://example.invalid/hook", secret="short")


def test_guardkit_notify_once_and_status_from_the_command_line(
    guard: Guard, receiver: Receiver, tmp_path: Path
) -> None:
    guard.agent("ops").request("pay", {})
    db = str(tmp_path / "g.db")
    env = {"GUARD_NOTIFY_WEBHOOK": receiver.url, "GUARD_NOTIFY_SECRET": SECRET, "PATH": ""}
    cli = [sys.executable, "-m", "guardkit"]
    done = subprocess.run(
        [*cli, "notify", "--store", db, "--once"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert len(receiver.accepted) == 1
    shown = subprocess.run(
        [*cli, "status", "--notifications", "--db", db, "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    (stats,) = json.loads(shown.stdout)
    assert (stats["sink"], stats["delivered"], stats["pending"]) == ("webhook", 1, 0)
    table = subprocess.run(
        [*cli, "status", "--notifications", "--db", db],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert "webhook" in table.stdout
    assert "pending" in table.stdout
    refused = subprocess.run(
        [*cli, "notify", "--store", db, "--once"],
        env={"GUARD_NOTIFY_WEBHOOK": receiver.url, "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert refused.returncode == 2
    assert "GUARD_NOTIFY_SECRET" in refused.stderr

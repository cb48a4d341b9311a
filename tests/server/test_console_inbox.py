"""The console's inbox and signed-link page in a real browser (chromium driven by Playwright)."""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardkit import ActionDenied
from guardkit.client import AgentClient
from guardkit.notify import CommandSink, DeliverySettings, WebhookSink, Worker
from guardkit.notify.links import LinkClaims, link_id, mint
from tests.notify.receiver import Receiver
from tests.server.conftest import ADMIN, Server
from tests.server.test_console import HOSTILE, browser

__all__ = ["browser"]  # the module's browser fixture, shared

POLICY = {
    "budget": 10_000,
    "scar_limit": 10,
    "tools": {
        "pay_invoice": {"cost": 1, "requires_approval": True},
        "wire": {"cost": 1, "requires_approval": True},
    },
}
SECRET = "test-secret-0123456789"


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    opened = browser.new_context()
    yield opened
    opened.close()


@pytest.fixture
def page(context: Any, server: Server) -> Any:
    opened = context.new_page()
    opened.goto(server.url + "/")
    opened.fill("#token", ADMIN)
    opened.click("#login button[type=submit]")
    return opened


class Waiting(threading.Thread):
    """An agent that asks, waits in wait_for_approval, and runs the tool once allowed."""

    def __init__(self, server: Server, agent_id: str, token: str, tool: str, value: Any) -> None:
        super().__init__()
        self.client = AgentClient(server.url, agent_id, token)
        self.tool, self.value = tool, value
        self.ran: list[Any] = []
        self.outcome: Any = None

    def run(self) -> None:
        try:
            action_id = self.client.request(self.tool, self.value, 1)["action_id"]
            status = self.client.wait_for_approval(action_id, timeout=60)
            if status == "allowed":
                self.ran.append(self.client.action(action_id)["input"])
                self.client.report(action_id, "success")
            self.outcome = status
        except ActionDenied as exc:
            self.outcome = exc
        finally:
            self.client.close()


def _wait_pending(server: Server, agent_id: str, count: int = 1) -> None:
    with server.admin() as admin:
        for _ in range(600):
            if len(admin.pending(agent_id)) >= count:
                return
            time.sleep(0.05)
    pytest.fail(f"{agent_id} never asked")


def _listed(page: Any) -> list[tuple[str, str]]:
    items = page.locator("#queue .item")
    return [
        (items.nth(i).get_attribute("data-agent-id"), items.nth(i).get_attribute("data-action"))
        for i in range(items.count())
    ]


def test_the_inbox_approves_an_action_a_waiting_agent_then_runs(server: Server, page: Any) -> None:
    first, first_token = server.new_agent(POLICY)
    second, second_token = server.new_agent(POLICY)
    with AgentClient(server.url, first, first_token) as client:
        client.request("wire", {"to": "older"}, 1)
    invoice = {"invoice": "INV-70", "amount": 1200, "memo": HOSTILE}
    agent = Waiting(server, second, second_token, "pay_invoice", invoice)
    agent.start()
    _wait_pending(server, second)
    page.click("#refresh")
    page.locator(f"#queue .item[data-agent-id='{second}']").wait_for()
    listed = _listed(page)
    assert listed.index((second, "act-1")) < listed.index((first, "act-1"))  # newest first
    item = page.locator(f"#queue .item[data-agent-id='{second}']")
    shown = json.loads(item.locator("pre.input").text_content())
    assert shown == invoice  # in full, as text
    assert "the policy requires approval for pay_invoice" in item.text_content()
    assert page.evaluate("window.__pwned") is None
    item.locator("input.note").fill("matches PO-70")
    item.get_by_role("button", name="Approve", exact=True).click()
    agent.join(timeout=60)
    assert agent.outcome == "allowed"
    assert agent.ran == [invoice]
    with server.admin() as admin:
        records = admin.log(second)["records"]
        assert admin.action(second, "act-1")["status"] == "completed"
    (allowed,) = [r for r in records if r["kind"] == "action_allowed"]
    assert allowed["payload"] == {
        "action_id": "act-1",
        "approved_by": "operator",
        "note": "matches PO-70",
    }
    page.locator(f"#queue .item[data-agent-id='{second}']").wait_for(state="detached")
    with server.admin() as admin:
        admin.reject(first, "act-1", approver="operator", reason="test over")


def test_the_inbox_filters_by_agent_and_tool(server: Server, page: Any) -> None:
    one, one_token = server.new_agent(POLICY)
    two, two_token = server.new_agent(POLICY)
    with AgentClient(server.url, one, one_token) as client:
        client.request("wire", {"n": 1}, 1)
        client.request("pay_invoice", {"n": 2}, 1)
    with AgentClient(server.url, two, two_token) as client:
        client.request("wire", {"n": 3}, 1)
    page.click("#refresh")
    page.locator(f"#queue .item[data-agent-id='{two}']").wait_for()
    page.select_option("#filter-agent", one)
    page.locator(f"#queue .item[data-agent-id='{two}']").wait_for(state="detached")
    assert set(_listed(page)) == {(one, "act-1"), (one, "act-2")}
    page.select_option("#filter-tool", "wire")
    page.locator("#queue .item[data-action='act-2']").wait_for(state="detached")
    assert _listed(page) == [(one, "act-1")]
    page.select_option("#filter-agent", "")
    page.locator(f"#queue .item[data-agent-id='{two}']").wait_for()
    listed = _listed(page)
    assert set(listed) == {(one, "act-1"), (two, "act-1")}
    assert listed[0] == (two, "act-1")
    for agent_id, count in ((one, 2), (two, 1)):
        with server.admin() as admin:
            for n in range(1, count + 1):
                admin.reject(agent_id, f"act-{n}", approver="operator", reason="test over")


def test_a_signed_link_approves_in_the_browser_without_the_operator_token(
    server: Server, context: Any
) -> None:
    agent_id, token = server.new_agent(POLICY)
    invoice = {"invoice": "INV-71", "amount": 99}
    agent = Waiting(server, agent_id, token, "pay_invoice", invoice)
    agent.start()
    _wait_pending(server, agent_id)
    receiver = Receiver(SECRET)
    try:
        worker = Worker(
            server.state.store,
            [WebhookSink(receiver.url, SECRET)],
            settings=DeliverySettings(backoff=0.05, poll=0.02),
            console_url=server.url,
            link_key=server.state.tokens.link_key,
        )
        while worker.deliver_due(worker.sinks[0]):
            pass
        worker.stop()
        events = [json.loads(b) for b in receiver.accepted.values()]
    finally:
        receiver.close()
    (event,) = [e for e in events if e["agent_id"] == agent_id]
    page = context.new_page()  # a fresh browser: no operator token in it
    page.goto(event["console_url"])
    view = page.locator("#link-action")
    view.locator("pre.input").wait_for()
    assert json.loads(view.locator("pre.input").text_content()) == invoice
    assert page.evaluate("sessionStorage.length") == 0
    page.fill("#link-name", "carol")
    page.fill("#link-note", "ok from chat")
    page.click("#link-approve")
    page.locator("#message").filter(has_text="act-1: allowed").wait_for()
    assert "link=" not in page.url  # used: gone from the address bar
    agent.join(timeout=60)
    assert agent.outcome == "allowed"
    assert agent.ran == [invoice]
    link = event["console_url"].split("&link=", 1)[1]
    with server.admin() as admin:
        action = admin.action(agent_id, "act-1")
    assert action["approved_by"] == f"carol via link {link_id(link)} (webhook)"
    again = context.new_page()  # a second use: shown as decided, nothing to click
    again.goto(event["console_url"])
    again.locator("#link-action").filter(has_text="completed").wait_for()
    assert again.locator("#link-approve").is_disabled()


def test_the_console_shows_each_sinks_deliveries_and_last_error(
    server: Server, page: Any, tmp_path: Path
) -> None:
    agent_id, token = server.new_agent(POLICY)
    with AgentClient(server.url, agent_id, token) as client:
        client.request("wire", {"to": "x"}, 1)
    script = tmp_path / "sink.py"
    script.write_text("import sys\nsys.stderr.write('pager is down')\nsys.exit(3)\n")
    name = "pager-" + uuid.uuid4().hex[:6]
    worker = Worker(
        server.state.store,
        [CommandSink(f"{sys.executable} {script}", name=name)],
        settings=DeliverySettings(backoff=60, max_backoff=60),
    )
    worker.deliver_due(worker.sinks[0])
    worker.stop()
    with server.http(ADMIN) as http:
        (stats,) = [s for s in http.get("/v1/notifications").json()["sinks"] if s["sink"] == name]
    page.click("#refresh")
    row = page.locator(f"#deliveries tr[data-sink='{name}']")
    row.wait_for()
    cells = [row.locator("td").nth(i).text_content() for i in range(8)]
    counts = [str(stats[k]) for k in ("pending", "attempts", "failures")]
    assert cells[:6] == [name, counts[0], "0", "0", counts[1], counts[2]]
    assert stats["pending"] >= 1
    assert stats["failures"] == stats["attempts"] >= 1
    assert "exited 3: pager is down" in cells[6]
    with server.admin() as admin:
        admin.reject(agent_id, "act-1", approver="operator", reason="test over")


def test_an_expired_link_page_decides_nothing(server: Server, context: Any) -> None:
    agent_id, token = server.new_agent(POLICY)
    with AgentClient(server.url, agent_id, token) as client:
        client.request("wire", {"to": "x"}, 1)
        sha = client.action("act-1")["input_sha256"]
    claims: LinkClaims = {
        "agent_id": agent_id,
        "action_id": "act-1",
        "input_sha256": sha,
        "exp": int(time.time()) - 5,
        "sink": "webhook",
    }
    link = mint(server.state.tokens.link_key, claims)
    page = context.new_page()
    page.goto(f"{server.url}/#agent={agent_id}&action=act-1&link={link}")
    page.locator("#message.error").filter(has_text="expired").wait_for()
    assert page.locator("#link-approve").is_disabled()
    assert page.locator("#link-reject").is_disabled()
    with server.admin() as admin:
        assert admin.action(agent_id, "act-1")["status"] == "pending_approval"
        admin.reject(agent_id, "act-1", approver="operator", reason="test over")

"""The operator console in a real browser (Debian's chromium driven by Playwright)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from guardkit import ActionDenied
from guardkit.client import AgentClient
from tests.server.conftest import ADMIN, Server

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("GUARDKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOSTILE = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'
POLICY = {
    "budget": 10_000,
    "scar_limit": 10,
    "tools": {"pay_invoice": {"cost": 1, "requires_approval": True}},
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if os.environ.get("GUARDKIT_TEST_SERVICES") == "none":
        pytest.skip("GUARDKIT_TEST_SERVICES=none: no browser in this run")
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing; .ci/run installs chromium")
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    context = browser.new_context()
    opened = context.new_page()
    opened.goto(server.url + "/")
    opened.fill("#token", ADMIN)
    opened.click("#login button[type=submit]")
    yield opened
    context.close()


class Waiting(threading.Thread):
    """An agent that asks to pay and waits for the operator's decision."""

    def __init__(self, server: Server, agent_id: str, token: str, invoice: dict[str, Any]) -> None:
        super().__init__()
        self.client = AgentClient(server.url, agent_id, token)
        self.invoice = invoice
        self.outcome: Any = None

    def run(self) -> None:
        try:
            action_id = self.client.authorize("pay_invoice", self.invoice, cost=1200)
            self.client.report(action_id, "success")
            self.outcome = action_id
        except ActionDenied as exc:
            self.outcome = exc
        finally:
            self.client.close()


def _wait_pending(server: Server, agent_id: str) -> None:
    """Until the agent's thread has asked: the console shows what the server holds when it loads."""
    with server.admin() as admin:
        for _ in range(600):
            if admin.pending(agent_id):
                return
            time.sleep(0.05)
    pytest.fail(f"{agent_id} never asked for approval")


def _queue_item(page: Any, server: Server, agent_id: str) -> Any:
    _wait_pending(server, agent_id)
    page.click("#refresh")
    item = page.locator(f"#queue .item[data-agent-id='{agent_id}']")
    item.wait_for()
    return item


def test_operator_approves_a_payment_and_the_agent_proceeds(server: Server, page: Any) -> None:
    agent_id, token = server.new_agent(POLICY)
    invoice = {"invoice": "INV-7", "iban": "DE44 5001", "memo": HOSTILE}
    agent = Waiting(server, agent_id, token, invoice)
    agent.start()
    item = _queue_item(page, server, agent_id)
    shown = item.locator("pre.input").text_content()
    assert "INV-7" in shown
    assert HOSTILE.replace('"', '\\"') in shown  # the exact input, as JSON text
    assert page.locator("#queue img").count() == 0
    assert page.evaluate("window.__pwned") is None
    item.locator("input.note").fill("checked the vendor record")
    item.get_by_role("button", name="Approve", exact=True).click()
    agent.join(timeout=60)
    assert agent.outcome == "act-1"
    with server.admin() as admin:
        action = admin.action(agent_id, "act-1")
    assert (action["status"], action["outcome"]) == ("completed", "success")
    assert action["approved_by"] == "operator"
    with server.admin() as admin:
        records = admin.log(agent_id)["records"]
    (allowed,) = [r for r in records if r["kind"] == "action_allowed"]
    assert allowed["payload"]["note"] == "checked the vendor record"
    assert page.evaluate("sessionStorage.getItem('guardkit.operatorToken')") == ADMIN
    assert page.evaluate("localStorage.length") == 0


def test_operator_rejects_with_a_scar(server: Server, page: Any) -> None:
    agent_id, token = server.new_agent(POLICY)
    agent = Waiting(server, agent_id, token, {"invoice": "INV-8", "iban": "XX00"})
    agent.start()
    item = _queue_item(page, server, agent_id)
    item.locator("input.note").fill("IBAN does not match the vendor")
    item.get_by_role("button", name="Reject with scar").click()
    agent.join(timeout=60)
    assert isinstance(agent.outcome, ActionDenied)
    with server.admin() as admin:
        status = admin.status(agent_id)
    assert status["scars"][0]["reason"] == "rejected by operator: IBAN does not match the vendor"


def test_overlapping_refreshes_show_each_pending_action_once(server: Server, page: Any) -> None:
    agent_id, token = server.new_agent(POLICY)
    agent = Waiting(server, agent_id, token, {"invoice": "INV-9", "iban": "XX00"})
    agent.start()
    _wait_pending(server, agent_id)
    page.evaluate("Promise.all([refresh(), refresh(), refresh()])")
    items = page.locator(f"#queue .item[data-agent-id='{agent_id}']")
    assert items.count() == 1
    assert page.locator(f"#agents tr[data-agent='{agent_id}']").count() == 1
    with server.admin() as admin:
        admin.reject(agent_id, "act-1", approver="operator", reason="test over")
    agent.join(timeout=60)
    assert isinstance(agent.outcome, ActionDenied)


def test_agent_ids_and_log_are_text(server: Server, page: Any) -> None:
    agent_id, token = server.new_agent(POLICY)
    with AgentClient(server.url, agent_id, token) as client:
        client.request("<b>bold</b>", {"x": HOSTILE})
    page.click("#refresh")
    row = page.locator(f"#agents tr[data-agent='{agent_id}']")
    row.get_by_role("button", name="Details").click()
    page.locator("#log").filter(has_text="action_denied").wait_for()
    assert "<b>bold</b>" in page.locator("#log").text_content()
    assert page.locator("#log b, #log img").count() == 0
    page.get_by_role("button", name="Verify").click()
    page.locator("#message").filter(has_text="Ledger verifies").wait_for()
    assert page.evaluate("window.__pwned") is None


def test_operator_terminates_an_agent_from_the_page(server: Server, page: Any) -> None:
    agent_id, _ = server.new_agent(POLICY)
    page.click("#refresh")
    row = page.locator(f"#agents tr[data-agent='{agent_id}']")
    row.get_by_role("button", name="Details").click()
    page.once("dialog", lambda dialog: dialog.accept("runaway spending"))
    page.get_by_role("button", name="Terminate").click()
    row.filter(has_text="terminated: runaway spending").wait_for()
    with server.admin() as admin:
        status = admin.status(agent_id)
    assert (status["alive"], status["termination_reason"]) == (False, "runaway spending")


def test_invisible_characters_are_shown_escaped(server: Server, page: Any) -> None:
    agent_id, token = server.new_agent(POLICY)
    spoof = "invoice\u202efdp.exe"  # reads as "invoiceexe.pdf" when shown raw
    agent = Waiting(server, agent_id, token, {"invoice": spoof, "iban": "DE\u200b44 5001"})
    agent.start()
    item = _queue_item(page, server, agent_id)
    shown = item.locator("pre.input").text_content()
    assert "\u202e" not in shown
    assert "\u200b" not in shown
    assert "invoice\\u202efdp.exe" in shown
    assert "DE\\u200b44 5001" in shown
    marks = item.locator("pre.input mark.hidden-char")
    assert marks.count() == 2
    titles = {marks.nth(i).get_attribute("title") for i in range(2)}
    assert titles == {"invisible character U+202E", "invisible character U+200B"}
    item.locator("input.note").fill("spoofed name")
    item.get_by_role("button", name="Reject", exact=True).click()
    agent.join(timeout=60)


def test_why_a_check_asked_a_human(server: Server, page: Any) -> None:
    policy = {"budget": 100, "scar_limit": 10, "tools": {"send": {"cost": 0}}}
    agent_id, token = server.new_agent(policy)
    why = {
        "code": "untrusted_provenance",
        "argument": "to",
        "sources": ["untrusted:read_inbox:act-1"],
        "message": "to='attacker@evil.example': it does not occur in any trusted source",
    }
    with AgentClient(server.url, agent_id, token) as client:
        decision = client.request_approval("send", {"to": "attacker@evil.example"}, None, why)
    assert decision["decision"] == "pending_approval"
    item = _queue_item(page, server, agent_id)
    text = item.text_content()
    assert "Asks a human because untrusted_provenance: to='attacker@evil.example'" in text
    assert "Labels: untrusted:read_inbox:act-1" in text


def test_why_a_rule_asked_a_human(server: Server, page: Any) -> None:
    rule = {
        "when": {"properties": {"amount": {"exclusiveMinimum": 100}}},
        "effect": "requires_approval",
        "reason": "payments over 100 need a human",
    }
    policy = {"budget": 100, "scar_limit": 10, "tools": {"pay": {"cost": 0, "rules": [rule]}}}
    agent_id, token = server.new_agent(policy)
    with AgentClient(server.url, agent_id, token) as client:
        assert client.request("pay", {"amount": 500})["decision"] == "pending_approval"
    text = _queue_item(page, server, agent_id).text_content()
    assert "Asks a human because rule 0 of the policy for pay matched: payments over 100" in text
    assert '"amount": 500' in text


def test_the_log_shows_the_newest_records_first_with_pages(server: Server, page: Any) -> None:
    policy = {"budget": 1000, "scar_limit": 10, "tools": {"read": {"cost": 0}}}
    agent_id, token = server.new_agent(policy)
    with AgentClient(server.url, agent_id, token) as client:
        for n in range(60):
            client.request("read", {"n": n})
    head = 1 + 2 * 60  # genesis 0, policy 1, then action_requested + action_allowed each
    page.click("#refresh")
    page.locator(f"#agents tr[data-agent='{agent_id}']").get_by_role(
        "button", name="Details"
    ).click()
    log = page.locator("#log")
    log.filter(has_text="action_allowed").wait_for()

    def seqs() -> list[int]:
        return [int(line.split(" ", 1)[0]) for line in log.text_content().splitlines()]

    assert seqs() == list(range(head, head - 50, -1))
    assert page.get_by_role("button", name="Newer").is_disabled()
    page.get_by_role("button", name="Older").click()
    page.locator("#log-range").filter(has_text=f"records {head - 50} down to").wait_for()
    assert seqs() == list(range(head - 50, head - 100, -1))
    page.get_by_role("button", name="Older").click()
    page.locator("#log-range").filter(has_text=f"records {head - 100} down to 0").wait_for()
    assert seqs() == list(range(head - 100, -1, -1))
    assert page.get_by_role("button", name="Older").is_disabled()

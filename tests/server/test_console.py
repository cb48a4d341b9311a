"""The operator console in a real browser (Debian's chromium driven by Playwright)."""

from __future__ import annotations

import os
import threading
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


def _queue_item(page: Any, agent_id: str) -> Any:
    page.click("#refresh")
    item = page.locator(f"#queue .item[data-agent-id='{agent_id}']")
    item.wait_for()
    return item


def test_operator_approves_a_payment_and_the_agent_proceeds(server: Server, page: Any) -> None:
    agent_id, token = server.new_agent(POLICY)
    invoice = {"invoice": "INV-7", "iban": "DE44 5001", "memo": HOSTILE}
    agent = Waiting(server, agent_id, token, invoice)
    agent.start()
    item = _queue_item(page, agent_id)
    shown = item.locator("pre.input").text_content()
    assert "INV-7" in shown
    assert HOSTILE.replace('"', '\\"') in shown  # the exact input, as JSON text
    assert page.locator("#queue img").count() == 0
    assert page.evaluate("window.__pwned") is None
    page.once("dialog", lambda dialog: dialog.accept("checked the vendor record"))
    item.get_by_role("button", name="Approve", exact=True).click()
    agent.join(timeout=60)
    assert agent.outcome == "act-1"
    with server.admin() as admin:
        action = admin.action(agent_id, "act-1")
    assert (action["status"], action["outcome"]) == ("completed", "success")
    assert action["approved_by"] == "operator"
    assert page.evaluate("sessionStorage.getItem('guardkit.operatorToken')") == ADMIN
    assert page.evaluate("localStorage.length") == 0


def test_operator_rejects_with_a_scar(server: Server, page: Any) -> None:
    agent_id, token = server.new_agent(POLICY)
    agent = Waiting(server, agent_id, token, {"invoice": "INV-8", "iban": "XX00"})
    agent.start()
    item = _queue_item(page, agent_id)
    page.once("dialog", lambda dialog: dialog.accept("IBAN does not match the vendor"))
    item.get_by_role("button", name="Reject with scar").click()
    agent.join(timeout=60)
    assert isinstance(agent.outcome, ActionDenied)
    with server.admin() as admin:
        status = admin.status(agent_id)
    assert status["scars"][0]["reason"] == "rejected by operator: IBAN does not match the vendor"


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

"""Signed one-click links: a pending approval's message carries one; it decides that action with
that input, once, before it expires, and nothing else."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from guardkit import ActionDenied
from guardkit.client import AdminClient, AgentClient
from guardkit.notify import DeliverySettings, WebhookSink, Worker
from guardkit.notify.links import LinkClaims, link_id, mint
from guardkit.server import ServerState
from guardkit.store.chain import Signer
from tests.notify.receiver import Receiver
from tests.server.conftest import ADMIN, Server, start_server
from tests.server.pg import pg_schema_url

SECRET = "test-secret-0123456789"
POLICY = {
    "budget": 100,
    "scar_limit": 10,
    "tools": {
        "pay": {"cost": 1, "requires_approval": True},
        "quick": {"cost": 1, "requires_approval": True, "approval_ttl": 60},
    },
}
FAST = DeliverySettings(backoff=0.05, max_backoff=5, lease=5, poll=0.02)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver(SECRET)
    yield found
    found.close()


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'guard.db'}"


@pytest.fixture
def server(db: str) -> Iterator[Server]:
    yield from start_server(db)


def _worker(state: ServerState, url: str, receiver: Receiver, link_ttl: float = 3600) -> Worker:
    return Worker(
        state.store,
        [WebhookSink(receiver.url, SECRET)],
        settings=FAST,
        console_url=url,
        link_key=state.tokens.link_key,
        link_ttl=link_ttl,
    )


def _new_agent(server: Server) -> tuple[str, str]:
    return server.new_agent(POLICY)


def _delivered_link(server: Server, receiver: Receiver, count: int = 1) -> list[dict[str, Any]]:
    """Deliver the outbox once; the pending events' bodies, as the receiver got them."""
    worker = _worker(server.state, server.url, receiver)
    while worker.deliver_due(worker.sinks[0]):
        pass
    worker.stop()
    bodies = [json.loads(b) for b in receiver.accepted.values()]
    return [b for b in bodies if b["type"] == "approval.pending"]


def _token(event: dict[str, Any]) -> str:
    fragment = urlsplit(event["console_url"]).fragment
    (token,) = parse_qs(fragment)["link"]
    return token


def _post(server: Server, agent_id: str, action_id: str, verb: str, body: Any) -> httpx.Response:
    suffix = "" if verb == "show" else "/" + verb
    with server.http() as http:
        return http.post(f"/v1/agents/{agent_id}/actions/{action_id}/link{suffix}", json=body)


def _action(server: Server, agent_id: str, action_id: str) -> Any:
    with AdminClient(server.url, ADMIN) as admin:
        return admin.action(agent_id, action_id)


class Waiting(threading.Thread):
    """An agent that asks to pay, waits for a human (wait_for_approval), then runs the tool."""

    def __init__(self, server: Server, agent_id: str, token: str) -> None:
        super().__init__()
        self.client = AgentClient(server.url, agent_id, token)
        self.ran: list[Any] = []
        self.outcome: Any = None

    def run(self) -> None:
        try:
            action_id = self.client.request("pay", {"to": "acme", "amount": 1200})["action_id"]
            status = self.client.wait_for_approval(action_id, timeout=60)
            if status == "allowed":  # the tool runs with what was approved
                self.ran.append(self.client.action(action_id)["input"])
                self.client.report(action_id, "success")
            self.outcome = action_id
        except ActionDenied as exc:
            self.outcome = exc
        finally:
            self.client.close()


def _wait_pending(server: Server, agent_id: str) -> None:
    with AdminClient(server.url, ADMIN) as admin:
        for _ in range(600):
            if admin.pending(agent_id):
                return
            time.sleep(0.05)
    pytest.fail(f"{agent_id} never asked")


def test_a_link_approves_and_the_waiting_agent_runs(server: Server, receiver: Receiver) -> None:
    agent_id, token = _new_agent(server)
    agent = Waiting(server, agent_id, token)
    agent.start()
    _wait_pending(server, agent_id)
    (event,) = _delivered_link(server, receiver)
    link = _token(event)
    assert event["console_url"].startswith(f"{server.url}/#agent={agent_id}&action=act-1&link=")
    shown = _post(server, agent_id, "act-1", "show", {"link": link})
    assert shown.status_code == 200, shown.text
    assert shown.json()["action"]["input"] == {"to": "acme", "amount": 1200}
    answer = _post(
        server, agent_id, "act-1", "approve", {"link": link, "name": "alice", "note": "ok"}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["decision"] == "allowed"
    agent.join(timeout=60)
    assert agent.outcome == "act-1"
    assert agent.ran == [{"to": "acme", "amount": 1200}]
    who = f"alice via link {link_id(link)} (webhook)"
    assert _action(server, agent_id, "act-1")["approved_by"] == who
    with AdminClient(server.url, ADMIN) as admin:
        records = admin.log(agent_id)["records"]
    (allowed,) = [r for r in records if r["kind"] == "action_allowed"]
    assert allowed["payload"] == {"action_id": "act-1", "approved_by": who, "note": "ok"}


def _pending_link(server: Server, receiver: Receiver, tool: str = "pay") -> tuple[str, str]:
    agent_id, token = _new_agent(server)
    with AgentClient(server.url, agent_id, token) as client:
        client.request(tool, {"to": "acme"})
    (event,) = _delivered_link(server, receiver)
    return agent_id, _token(event)


def _claims(token: str) -> LinkClaims:
    part = token.split(".")[1]
    claims: LinkClaims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return claims


def _reencode(token: str, claims: LinkClaims) -> str:
    prefix, _, mac = token.split(".")
    body = json.dumps(claims, sort_keys=True, separators=(",", ":")).encode()
    return f"{prefix}.{base64.urlsafe_b64encode(body).rstrip(b'=').decode()}.{mac}"


def _refused(answer: httpx.Response, words: str) -> None:
    assert answer.status_code == 403, answer.text
    assert answer.json()["code"] == "forbidden"
    assert words in answer.json()["error"]


def test_a_tampered_link_is_refused(server: Server, receiver: Receiver) -> None:
    agent_id, link = _pending_link(server, receiver)
    claims = _claims(link)
    longer = _reencode(link, {**claims, "exp": claims["exp"] + 10**6})
    _refused(_post(server, agent_id, "act-1", "approve", {"link": longer}), "not genuine")
    flipped = link[:-2] + ("A" if link[-2] != "A" else "B") + link[-1]
    _refused(_post(server, agent_id, "act-1", "approve", {"link": flipped}), "not genuine")
    forged = mint(b"k" * 32, claims)  # another guard's key
    _refused(_post(server, agent_id, "act-1", "approve", {"link": forged}), "not genuine")
    for junk in ("", "gkl1", "gkl1..", "nope.x.y", "gkl1.!!!.???"):
        answer = _post(server, agent_id, "act-1", "approve", {"link": junk})
        assert answer.status_code == 403, (junk, answer.text)
    assert _action(server, agent_id, "act-1")["status"] == "pending_approval"


def test_a_link_is_not_an_operator_token_and_no_get_decides(
    server: Server, receiver: Receiver
) -> None:
    agent_id, link = _pending_link(server, receiver)
    with server.http(link) as http:
        assert http.get("/v1/agents").status_code == 401
        path = f"/v1/agents/{agent_id}/actions/act-1"
        assert http.post(path + "/approve", json={"approver": "x"}).status_code == 401
        assert http.get(path + "/link/approve").status_code == 405
    assert _action(server, agent_id, "act-1")["status"] == "pending_approval"


def test_a_replayed_link_is_refused_even_after_a_restart(db: str, receiver: Receiver) -> None:
    key = Signer.generate_hex()
    servers = start_server(db, key)
    server = next(servers)
    agent_id, link = _pending_link(server, receiver)
    first = _post(server, agent_id, "act-1", "approve", {"link": link, "name": "bob"})
    assert first.status_code == 200, first.text
    _refused(_post(server, agent_id, "act-1", "approve", {"link": link}), "any more")
    _refused(_post(server, agent_id, "act-1", "reject", {"link": link}), "any more")
    servers.close()
    for restarted in start_server(db, key):
        _refused(_post(restarted, agent_id, "act-1", "approve", {"link": link}), "allowed by bob")
        records = restarted.state.guard.log(agent_id)["records"]
        assert [r["kind"] for r in records].count("action_allowed") == 1


def test_an_expired_link_is_refused(server: Server, receiver: Receiver) -> None:
    agent_id, link = _pending_link(server, receiver)
    old = mint(server.state.tokens.link_key, {**_claims(link), "exp": int(time.time()) - 1})
    _refused(_post(server, agent_id, "act-1", "approve", {"link": old}), "expired")
    _refused(_post(server, agent_id, "act-1", "show", {"link": old}), "expired")
    assert _action(server, agent_id, "act-1")["status"] == "pending_approval"


def test_a_link_expires_with_its_approval(server: Server, receiver: Receiver) -> None:
    _, link = _pending_link(server, receiver, tool="quick")  # approval_ttl 60
    claims = _claims(link)
    assert claims["exp"] <= time.time() + 60
    receiver.accepted.clear()
    worker = _worker(server.state, server.url, receiver, link_ttl=5)
    agent_id2, token = _new_agent(server)
    with AgentClient(server.url, agent_id2, token) as client:
        client.request("pay", {"to": "acme"})  # no approval_ttl: the link's own ttl
    while worker.deliver_due(worker.sinks[0]):
        pass
    worker.stop()
    (event,) = [json.loads(b) for b in receiver.accepted.values()]
    assert _claims(_token(event))["exp"] <= time.time() + 5


def test_a_link_decides_only_its_own_action_and_input(server: Server, receiver: Receiver) -> None:
    agent_id, token = _new_agent(server)
    with AgentClient(server.url, agent_id, token) as client:
        client.request("pay", {"to": "acme"})
        client.request("pay", {"to": "mallory"})
    events = _delivered_link(server, receiver)
    by_action = {e["action_id"]: _token(e) for e in events}
    other, _ = _new_agent(server)
    _refused(_post(server, agent_id, "act-2", "approve", {"link": by_action["act-1"]}), "not")
    _refused(_post(server, other, "act-1", "approve", {"link": by_action["act-1"]}), "not")
    wrong_input = {**_claims(by_action["act-2"]), "input_sha256": "0" * 64}
    forged = mint(server.state.tokens.link_key, wrong_input)  # a doctored outbox event's link
    _refused(_post(server, agent_id, "act-2", "approve", {"link": forged}), "another input")
    assert _action(server, agent_id, "act-2")["status"] == "pending_approval"
    rejected = _post(
        server, agent_id, "act-2", "reject", {"link": by_action["act-2"], "reason": "unknown"}
    )
    assert rejected.status_code == 200, rejected.text
    assert _action(server, agent_id, "act-2")["status"] == "denied"
    assert _action(server, agent_id, "act-1")["status"] == "pending_approval"


def test_links_can_be_turned_off(server: Server, receiver: Receiver) -> None:
    agent_id, token = _new_agent(server)
    with AgentClient(server.url, agent_id, token) as client:
        client.request("pay", {"to": "acme"})
    worker = _worker(server.state, server.url, receiver, link_ttl=0)
    while worker.deliver_due(worker.sinks[0]):
        pass
    worker.stop()
    (body,) = receiver.accepted.values()
    assert json.loads(body)["console_url"] == f"{server.url}/#agent={agent_id}&action=act-1"


def test_two_servers_on_one_postgresql_let_a_link_approve_once(receiver: Receiver) -> None:
    with pg_schema_url() as url:
        key = Signer.generate_hex()
        one, two = start_server(url, key), start_server(url, key)
        first, second = next(one), next(two)
        try:
            agent_id, link = _pending_link(first, receiver)
            answers: list[int] = []
            barrier = threading.Barrier(8)

            def use(server: Server) -> None:
                barrier.wait()
                body = {"link": link, "name": uuid.uuid4().hex[:6]}
                answers.append(_post(server, agent_id, "act-1", "approve", body).status_code)

            pair = (first, second)
            threads = [threading.Thread(target=use, args=(pair[i % 2],)) for i in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert sorted(answers) == [200] + [403] * 7
            records = second.state.guard.log(agent_id)["records"]
            assert [r["kind"] for r in records].count("action_allowed") == 1
        finally:
            one.close()
            two.close()


def test_a_key_planted_in_the_database_mints_no_link_on_a_signed_ledger(
    db: str, receiver: Receiver
) -> None:
    """Whoever can write the database but lacks the signing key cannot mint a link."""
    key = Signer.generate_hex()
    servers = start_server(db, key)
    server = next(servers)
    agent_id, link = _pending_link(server, receiver)
    planted = b"\x01" * 32
    with server.state.store.transaction() as tx:
        tx.set_meta("link_key", planted.hex())
    servers.close()
    for restarted in start_server(db, key):
        forged = mint(planted, _claims(link))
        _refused(_post(restarted, agent_id, "act-1", "approve", {"link": forged}), "not genuine")
        assert _action(restarted, agent_id, "act-1")["status"] == "pending_approval"
        answer = _post(restarted, agent_id, "act-1", "approve", {"link": link, "name": "carol"})
        assert answer.status_code == 200, answer.text


def test_guardkit_notify_given_the_signing_key_sends_links_the_server_accepts(
    db: str, receiver: Receiver, tmp_path: Path
) -> None:
    key = Signer.generate_hex()
    (tmp_path / "audit.key").write_text(key)
    for server in start_server(db, key):
        agent_id, _ = _new_agent(server)
        server.state.guard.agent(agent_id).request("pay", {"to": "acme", "amount": 5})
        env = {
            "GUARD_NOTIFY_WEBHOOK": receiver.url,
            "GUARD_NOTIFY_SECRET": SECRET,
            "GUARD_PUBLIC_URL": server.url,
            "PATH": "",
        }
        path = db.removeprefix("sqlite:///")
        cmd = [sys.executable, "-m", "guardkit", "notify", "--store", path, "--once"]
        done = subprocess.run(
            [*cmd, "--signing-key", str(tmp_path / "audit.key")],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        (event,) = [json.loads(b) for b in receiver.accepted.values()]
        answer = _post(server, agent_id, "act-1", "approve", {"link": _token(event), "name": "d"})
        assert answer.status_code == 200, answer.text

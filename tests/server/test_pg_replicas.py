"""Two server processes on one PostgreSQL database racing on one budget never overspend."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from guardkit.client import AdminClient, AgentClient
from guardkit.store.chain import Signer
from tests.server.launch import start_server_process
from tests.server.pg import pg_schema_url

TOKEN = "replica-admin-" + "r" * 32


def _server(store: str, data_dir: Path, key: str) -> tuple[subprocess.Popen[str], str]:
    args = ("--bind", "127.0.0.1:0", "--store", store, "--signing-key", key)
    return start_server_process(data_dir, *args, env={"GUARD_ADMIN_TOKEN": TOKEN})


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[list[str]]:
    key = Signer.generate_hex()
    with pg_schema_url() as store:
        procs = [_server(store, tmp_path / f"host{i}", key) for i in range(2)]
        try:
            yield [url for _, url in procs]
        finally:
            for proc, _ in procs:
                proc.terminate()
                proc.communicate(timeout=30)


@pytest.mark.slow
def test_two_servers_share_one_budget_exactly(replicas: list[str]) -> None:
    budget = 60
    policy = {"budget": budget, "scar_limit": 10, "tools": {"buy": {"cost": 1}}}
    with AdminClient(replicas[0], TOKEN) as admin:
        token = admin.create_agent("shared", policy)["token"]
    allowed: list[str] = []
    lock = threading.Lock()

    def spend(url: str) -> None:
        with AgentClient(url, "shared", token) as agent:
            while True:
                decision = agent.request("buy", {"from": url})
                if decision["decision"] != "allowed":
                    assert decision["reason"]["code"] in ("terminated", "insufficient_budget")
                    return
                with lock:
                    allowed.append(decision["action_id"])

    threads = [threading.Thread(target=spend, args=(replicas[i % 2],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with AdminClient(replicas[1], TOKEN) as admin:
        status = admin.status("shared")
        verified = admin.verify("shared")
        log = admin.log("shared", limit=5000)["records"]
    assert len(allowed) == len(set(allowed)) == budget
    assert (status["spent"], status["remaining"], status["alive"]) == (budget, 0, False)
    assert verified["ok"] is True
    assert sum(r["kind"] == "action_allowed" for r in log) == budget


@pytest.mark.slow
def test_two_servers_keep_caps_rate_limits_and_idempotency_exact(replicas: list[str]) -> None:
    policy = {
        "budget": 10_000,
        "scar_limit": 10_000,
        "rate_limit": {"max_actions": 30, "window_secs": 3600},
        "tools": {"capped": {"cost": 1, "max_calls": 7}, "free": {"cost": 1}},
    }
    with AdminClient(replicas[0], TOKEN) as admin:
        token = admin.create_agent("limits", policy)["token"]
    results: list[tuple[str, str, str]] = []  # (key or tool, decision, action_id)
    lock = threading.Lock()

    def hammer(worker: int) -> None:
        url = replicas[worker % 2]
        with AgentClient(url, "limits", token, retries=0) as agent:
            for i in range(10):
                # Every key is sent by a worker on each server at about the same time.
                key = f"key-{i}"
                decision = agent.request("free", {"i": i}, idempotency_key=key)
                capped = agent.request("capped", {"w": worker, "i": i})
                with lock:
                    results.append((key, decision["decision"], decision["action_id"]))
                    results.append(("capped", capped["decision"], capped["action_id"]))

    threads = [threading.Thread(target=hammer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keyed = {}
    for name, _, action_id in results:
        if name.startswith("key-"):
            keyed.setdefault(name, set()).add(action_id)
    assert all(len(ids) == 1 for ids in keyed.values())  # one action per key, whoever asked
    capped_allowed = sum(1 for name, d, _ in results if name == "capped" and d == "allowed")
    with AdminClient(replicas[1], TOKEN) as admin:
        status = admin.status("limits")
        assert admin.verify("limits")["ok"] is True
    assert capped_allowed == 7
    assert status["actions_allowed"] == 10 + 7
    assert status["spent"] == 17


@pytest.mark.slow
def test_two_servers_share_one_rate_limit_exactly(replicas: list[str]) -> None:
    policy = {
        "budget": 10_000,
        "scar_limit": 10_000,
        "rate_limit": {"max_actions": 9, "window_secs": 3600},
        "tools": {"free": {"cost": 0}},
    }
    with AdminClient(replicas[0], TOKEN) as admin:
        token = admin.create_agent("rated", policy)["token"]
    codes: list[str] = []
    lock = threading.Lock()

    def hammer(url: str) -> None:
        with AgentClient(url, "rated", token) as agent:
            for _ in range(10):
                decision = agent.request("free")
                with lock:
                    codes.append(decision.get("reason", {}).get("code", decision["decision"]))

    threads = [threading.Thread(target=hammer, args=(replicas[w % 2],)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert codes.count("allowed") == 9
    assert codes.count("rate_limited") == 31

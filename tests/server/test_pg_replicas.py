"""Two server processes on one PostgreSQL database racing on one budget never overspend."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from guardkit.client import AdminClient, AgentClient
from guardkit.store.chain import Signer
from tests.server.pg import pg_schema_url

TOKEN = "replica-admin-" + "r" * 32


def _server(store: str, data_dir: Path, key: str) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["GUARD_ADMIN_TOKEN"] = TOKEN
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "guardkit.server",
            "--bind",
            "127.0.0.1:0",
            "--store",
            store,
            "--data-dir",
            str(data_dir),
            "--signing-key",
            key,
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"on (http://\S+)", line)
    if match is None:
        proc.kill()
        raise AssertionError(f"server did not start: {line!r} {proc.communicate()[1]}")
    return proc, match.group(1)


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

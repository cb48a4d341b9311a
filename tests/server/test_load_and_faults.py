"""Load (16 agents x 500 decisions, nothing lost); kill -9 mid-load (no acknowledged loss)."""

from __future__ import annotations

import signal
import subprocess
import threading
from pathlib import Path

import pytest

from guardkit import GuardUnavailable
from guardkit.client import AdminClient, AgentClient
from tests.server.conftest import Server
from tests.server.launch import start_server_process

TOKEN = "fault-admin-" + "f" * 32
POLICY = {"budget": 10**6, "scar_limit": 10, "tools": {"work": {"cost": 1}}}


def _run_agents(
    url: str,
    tokens: dict[str, str],
    count: int,
    received: dict[str, list[str]],
    stop: threading.Event | None = None,
) -> None:
    def work(agent_id: str) -> None:
        with AgentClient(url, agent_id, tokens[agent_id], retries=0) as agent:
            for i in range(count):
                if stop is not None and stop.is_set():
                    return
                try:
                    decision = agent.request("work", {"i": i})
                except GuardUnavailable:
                    return
                received[agent_id].append(decision["action_id"])

    threads = [threading.Thread(target=work, args=(a,)) for a in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.slow
def test_16_agents_x_500_decisions_lose_nothing(server: Server) -> None:
    with server.admin() as admin:
        tokens = {f"load-{i}": admin.create_agent(f"load-{i}", POLICY)["token"] for i in range(16)}
    received: dict[str, list[str]] = {a: [] for a in tokens}
    _run_agents(server.url, tokens, 500, received)
    with server.admin() as admin:
        for agent_id, ids in received.items():
            assert ids == [f"act-{n}" for n in range(1, 501)]
            status = admin.status(agent_id)
            assert (status["actions_allowed"], status["spent"]) == (500, 500)
            verified = admin.verify(agent_id)
            assert verified["ok"] is True
            assert verified["records"] == 2 + 2 * 500


def _start(data_dir: Path, stderr: int = subprocess.DEVNULL) -> tuple[subprocess.Popen[str], str]:
    env = {"GUARD_ADMIN_TOKEN": TOKEN}
    return start_server_process(data_dir, "--bind", "127.0.0.1:0", env=env, stderr=stderr)


@pytest.mark.slow
def test_kill_9_mid_load_loses_no_acknowledged_decision(tmp_path: Path) -> None:
    proc, url = _start(tmp_path)
    try:
        with AdminClient(url, TOKEN) as admin:
            tokens = {
                f"crash-{i}": admin.create_agent(f"crash-{i}", POLICY)["token"] for i in range(4)
            }
        received: dict[str, list[str]] = {a: [] for a in tokens}
        load = threading.Thread(target=_run_agents, args=(url, tokens, 100_000, received))
        load.start()
        while sum(len(ids) for ids in received.values()) < 200 and load.is_alive():
            threading.Event().wait(0.01)
        proc.send_signal(signal.SIGKILL)
        load.join()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()

    proc, url = _start(tmp_path)
    try:
        with AdminClient(url, TOKEN) as admin:
            assert [a["state"] for a in admin.agents()] == ["active"] * 4
            for agent_id, ids in received.items():
                assert admin.verify(agent_id)["ok"] is True
                for action_id in ids:
                    assert admin.action(agent_id, action_id)["status"] == "allowed"
                status = admin.status(agent_id)
                # Decided-but-unacknowledged requests may exist; acknowledged ones never vanish.
                assert status["actions_allowed"] >= len(ids)
            assert sum(len(ids) for ids in received.values()) >= 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.slow
def test_sigterm_mid_load_finishes_in_flight_decisions(tmp_path: Path) -> None:
    proc, url = _start(tmp_path, stderr=subprocess.PIPE)
    with AdminClient(url, TOKEN) as admin:
        tokens = {f"stop-{i}": admin.create_agent(f"stop-{i}", POLICY)["token"] for i in range(4)}
    received: dict[str, list[str]] = {a: [] for a in tokens}
    load = threading.Thread(target=_run_agents, args=(url, tokens, 100_000, received))
    load.start()
    while sum(len(ids) for ids in received.values()) < 100 and load.is_alive():
        threading.Event().wait(0.01)
    proc.send_signal(signal.SIGTERM)
    load.join()  # every client ends with GuardUnavailable, none with a 5xx
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, -signal.SIGTERM)
    assert "Traceback" not in err

    proc, url = _start(tmp_path)
    try:
        with AdminClient(url, TOKEN) as admin:
            for agent_id, ids in received.items():
                assert admin.verify(agent_id)["ok"] is True
                assert [admin.action(agent_id, a)["status"] for a in ids] == ["allowed"] * len(ids)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)

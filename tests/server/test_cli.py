"""``guardkit serve`` / ``python -m guardkit.server`` as a real process."""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from guardkit.client import AdminClient, AgentClient
from guardkit.server.cli import serve
from tests.server.launch import start_server_process


def _start(
    data_dir: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    return start_server_process(data_dir, *args, env=env)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    proc, url = _start(tmp_path, "--bind", "127.0.0.1:0")
    yield proc, url, tmp_path
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def test_help_lists_the_flags() -> None:
    result = CliRunner().invoke(serve, ["--help"])
    assert result.exit_code == 0
    for flag in ("--bind", "--data-dir", "--store", "--signing-key", "--durability", "--witness"):
        assert flag in result.output


def test_first_start_creates_secret_files_and_serves(
    running: tuple[subprocess.Popen[str], str, Path],
) -> None:
    proc, url, data_dir = running
    keys = data_dir / "keys"
    for name in ("admin.token", "backend.token", "audit.key", "audit.pub"):
        assert stat.S_IMODE((keys / name).stat().st_mode) == 0o600
    token = (keys / "admin.token").read_text().strip()
    with AdminClient(url, token) as admin:
        created = admin.create_agent("bot", {"budget": 3, "tools": {}})
        public = admin.public_key()["public_key"]
        assert created["agent"]["public_key"] == public
    assert (keys / "audit.pub").read_text().strip() == public
    for name in ("guard.db", "guard.db-wal", "guard.db-shm", "guard.db.lock"):
        assert stat.S_IMODE((data_dir / name).stat().st_mode) == 0o600, name
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    # uvicorn finishes in-flight requests, runs the lifespan shutdown, then re-raises SIGTERM.
    assert proc.returncode in (0, -signal.SIGTERM), err
    assert "Traceback" not in err
    assert token not in out + err


def test_a_second_server_on_the_same_address_exits_early(
    running: tuple[subprocess.Popen[str], str, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, url, _ = running
    other = tmp_path_factory.mktemp("second")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "guardkit.server",
            "--data-dir",
            str(other / "data"),
            "--bind",
            url.removeprefix("http://"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "cannot listen" in result.stderr
    assert not (other / "data").exists()


def test_a_short_admin_token_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        serve,
        ["--data-dir", str(tmp_path), "--bind", "127.0.0.1:0"],
        env={"GUARD_ADMIN_TOKEN": "short"},
    )
    assert result.exit_code == 1
    assert "at least 32 characters" in result.output


def test_env_admin_token_and_bind(tmp_path: Path) -> None:
    token = "t" * 40
    proc, url = _start(tmp_path, env={"GUARD_ADMIN_TOKEN": token, "GUARD_BIND": "127.0.0.1:0"})
    try:
        with AdminClient(url, token) as admin:
            assert admin.agents() == []
        assert not (tmp_path / "keys" / "admin.token").exists()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_sigterm_answers_waiting_long_polls_instead_of_dropping_them(
    running: tuple[subprocess.Popen[str], str, Path],
) -> None:
    proc, url, data_dir = running
    token = (data_dir / "keys" / "admin.token").read_text().strip()
    policy = {"budget": 5, "tools": {"pay": {"cost": 1, "requires_approval": True}}}
    with AdminClient(url, token) as admin:
        agent_token = admin.create_agent("waiter", policy)["token"]
    answers: list[dict[str, object]] = []
    with AgentClient(url, "waiter", agent_token) as agent:
        agent.request("pay")
        poll = threading.Thread(
            target=lambda: answers.append(
                agent._call(
                    "GET", "/v1/agents/waiter/actions/act-1", params={"wait": 60}, timeout=120
                )
            )
        )
        poll.start()
        with AdminClient(url, token) as admin:  # the poll is in; pending stays pending
            assert admin.action("waiter", "act-1")["status"] == "pending_approval"
        threading.Event().wait(0.3)
        proc.send_signal(signal.SIGTERM)
        poll.join()
    assert answers[0]["status"] == "pending_approval"
    proc.communicate(timeout=60)


def test_a_server_given_another_signing_key_refuses_to_start(tmp_path: Path) -> None:
    from guardkit.store import Signer, fingerprint

    proc, url = _start(tmp_path, "--bind", "127.0.0.1:0")
    token = (tmp_path / "keys" / "admin.token").read_text().strip()
    with AdminClient(url, token) as admin:
        admin.create_agent("bot", {"budget": 3, "tools": {}})
        public = admin.public_key()["public_key"]
    proc.terminate()
    proc.communicate(timeout=30)
    other = Signer.generate_hex()
    result = subprocess.run(
        [
            *(sys.executable, "-m", "guardkit.server", "--data-dir", str(tmp_path)),
            *("--bind", "127.0.0.1:0", "--signing-key", other),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert fingerprint(public) in result.stderr
    assert fingerprint(Signer(other).public_key) in result.stderr
    assert "Traceback" not in result.stderr


def test_witness_elsewhere_is_where_the_server_writes_heads(tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-disk" / "heads.witness"
    elsewhere.parent.mkdir()
    proc, url = _start(tmp_path, "--bind", "127.0.0.1:0", "--witness", str(elsewhere))
    try:
        token = (tmp_path / "keys" / "admin.token").read_text().strip()
        with AdminClient(url, token) as admin:
            admin.create_agent("bot", {"budget": 3, "tools": {}})
        assert '"bot"' in elsewhere.read_text()
        assert not (tmp_path / "guard.db.witness").exists()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)

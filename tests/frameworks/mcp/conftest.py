"""Real MCP stacks for the proxy tests: an SDK client, ``guardkit mcp proxy``, an upstream server.

Two stacks, over both kinds of agent guard:

- ``stdio-local``: the client starts the proxy over stdio (one per test), the proxy starts the
  upstream over stdio and guards with an embedded ledger (``--db``, a ``LocalAgent``);
- ``http-remote``: the proxy serves streamable HTTP (one per module), its upstream is a
  streamable-HTTP server, and it asks a ``guardkit serve`` guard (``--guard``, an ``AgentClient``).

Approvals, rejections and terminations come from the CLI in yet another process, as they would
from an operator's terminal.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("starlette")

from mcp import Client, StdioServerParameters

from guardkit.client import AdminClient
from guardkit.server import ServerState, create_app
from guardkit.server.runner import serve_in_thread
from guardkit.store import open_store

UPSTREAM = str(Path(__file__).with_name("upstream_server.py"))
ADMIN = "mcp-admin-" + "a" * 32
POLICY: dict[str, Any] = {
    "budget": 10_000,
    "scar_limit": 1_000,
    "tools": {
        "echo": {"cost": 1},
        "delete": {"cost": 1, "requires_approval": True},
        "count": {"cost": 1},
        "broken": {"cost": 0},
        "crash": {"cost": 0},
        "sleep": {"cost": 0},
        "grow": {"cost": 0},
    },
}


@dataclass
class Stack:
    """One proxy in front of one upstream, guarding one agent."""

    agent_id: str
    #: The ledger's SQLite file: where the CLI approves, rejects and reads.
    db: Path
    #: The file every upstream tool run is appended to.
    runs: Path
    #: How a client reaches the proxy: a URL, or the command that starts it over stdio.
    target: str | StdioServerParameters
    kind: str
    extra: dict[str, Any] = field(default_factory=dict)

    def client(self, **kwargs: Any) -> Client:
        return Client(self.target, **kwargs)

    def ran(self, prefix: str) -> list[str]:
        if not self.runs.exists():
            return []
        return [line for line in self.runs.read_text().splitlines() if line.startswith(prefix)]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "guardkit", *args, "--db", str(self.db)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            cwd=self.db.parent,
        )

    def decide_when_pending(self, marker: str, verb: str, *extra: str) -> str:
        """Wait until an action whose input contains ``marker`` is pending; decide it (CLI)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pending = json.loads(self.cli("pending", self.agent_id, "--json").stdout)
            for item in pending:
                action = item["action"]
                if marker in json.dumps(action["input"]):
                    self.cli(verb, self.agent_id, action["action_id"], "--by", "alice", *extra)
                    return str(action["action_id"])
            time.sleep(0.2)
        raise AssertionError(f"nothing pending with {marker!r}")

    def records(self, kind: str, *, pins: bool = False) -> list[dict[str, Any]]:
        """The payloads of the ledger's ``kind`` records: those of the proxy's pin events
        (``guardkit.mcp_pin`` actions) only with ``pins``, the others only without."""
        out = self.cli("log", self.agent_id, "--json").stdout
        records = json.loads(out)["records"]
        pinned = {
            r["payload"]["action_id"]
            for r in records
            if r["kind"] == "action_requested" and r["payload"]["tool"] == "guardkit.mcp_pin"
        }
        return [
            r["payload"]
            for r in records
            if r["kind"] == kind and (r["payload"].get("action_id") in pinned) == pins
        ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_line(path: Path, needle: str, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        for line in text.splitlines():
            if needle in line:
                return line
        if process.poll() is not None:
            raise RuntimeError(f"process exited {process.returncode}:\n{text}")
        time.sleep(0.05)
    raise RuntimeError(f"no {needle!r} in {path}")


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None:
            raise RuntimeError(f"upstream exited {process.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def write_policy(folder: Path, policy: dict[str, Any]) -> Path:
    path = folder / "policy.json"
    path.write_text(json.dumps(policy))
    return path


def local_stack(
    folder: Path,
    policy: dict[str, Any],
    *flags: str,
    upstream: str = UPSTREAM,
    env: dict[str, str] | None = None,
    agent_id: str | None = None,
) -> Stack:
    """A proxy the client starts over stdio, with an embedded ledger, upstream over stdio."""
    agent_id = agent_id or "mcp-" + uuid.uuid4().hex[:8]
    db, runs = folder / "guard.db", folder / "runs.txt"
    args = [
        "-m", "guardkit", "mcp", "proxy", "--agent", agent_id,
        "--policy", str(write_policy(folder, policy)), "--db", str(db), "--poll", "0.1", *flags,
        "--", sys.executable, upstream,
    ]  # fmt: skip
    env = {**os.environ, "MCP_RUNS": str(runs), **(env or {})}
    # Every ``python -m guardkit`` runs outside the checkout: the installed package is what runs.
    target = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=folder)
    return Stack(agent_id=agent_id, db=db, runs=runs, target=target, kind="stdio-local")


@pytest.fixture(scope="module")
def guard_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A ``guardkit serve`` guard on loopback, over a SQLite file the CLI can also open."""
    db = tmp_path_factory.mktemp("mcp-guard") / "guard.db"
    state = ServerState.open(
        open_store(f"sqlite:///{db}"), admin_token=ADMIN, backend_token=ADMIN + "-backend"
    )
    with serve_in_thread(create_app(state)) as url:
        yield url, db


def remote_agent(guard: tuple[str, Path], policy: dict[str, Any]) -> tuple[str, str]:
    agent_id = "mcp-" + uuid.uuid4().hex[:8]
    with AdminClient(guard[0], ADMIN) as admin:
        token = admin.create_agent(agent_id, policy)["token"]
    return agent_id, token


@pytest.fixture(scope="module")
def http_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The upstream server on its own, serving streamable HTTP."""
    folder = tmp_path_factory.mktemp("mcp-upstream")
    runs, port = folder / "runs.txt", free_port()
    with (folder / "stderr.txt").open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, UPSTREAM, "http", str(port)],
            env={**os.environ, "MCP_RUNS": str(runs)},
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", runs
    finally:
        stop(process)


def serve_proxy(folder: Path, args: list[str]) -> tuple[str, subprocess.Popen[bytes]]:
    """Start ``guardkit mcp proxy --serve http`` and return the URL it serves."""
    log = folder / "proxy-stderr.txt"
    with log.open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "guardkit", "mcp", "proxy", "--serve", "http",
             "--bind", "127.0.0.1:0", "--poll", "0.1", *args],
            stdout=subprocess.DEVNULL,
            stderr=errors,
            cwd=folder,
        )  # fmt: skip
    line = wait_for_line(log, "serving http://", process)
    return line.rsplit(" ", 1)[1], process


@pytest.fixture(scope="module")
def http_stack(
    tmp_path_factory: pytest.TempPathFactory,
    guard_server: tuple[str, Path],
    http_upstream: tuple[str, Path],
) -> Iterator[Stack]:
    """One proxy serving streamable HTTP, shared by a module's tests (each uses its own tags)."""
    folder = tmp_path_factory.mktemp("mcp-http")
    agent_id, token = remote_agent(guard_server, POLICY)
    url, process = serve_proxy(
        folder,
        ["--agent", agent_id, "--guard", guard_server[0], "--token", token,
         "--policy", str(write_policy(folder, POLICY)), "--upstream", http_upstream[0]],
    )  # fmt: skip
    try:
        yield Stack(
            agent_id=agent_id,
            db=guard_server[1],
            runs=http_upstream[1],
            target=url,
            kind="http-remote",
        )
    finally:
        stop(process)


@pytest.fixture(params=["stdio-local", "http-remote"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Stack:
    if request.param == "stdio-local":
        return local_stack(tmp_path, POLICY)
    found: Stack = request.getfixturevalue("http_stack")
    return found


def tag() -> str:
    return uuid.uuid4().hex[:10]

"""Runtime-enforcement scenarios, run in a child process (an audit hook can never be removed).

argv: WORK_DIR. Prints one JSON object: scenario name -> what happened.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

import httpx
from http_stub import serve

import guardkit
from guardkit import EgressRule, PathRule, Runtime

WORK = pathlib.Path(sys.argv[1])
ALLOWED, OUTSIDE = WORK / "allowed", WORK / "outside"
ALLOWED.mkdir(exist_ok=True)
OUTSIDE.mkdir(exist_ok=True)


def _answer(path: str) -> tuple[int, dict[str, str], bytes]:
    if path.startswith("/redirect"):
        return 302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""
    return 200, {}, b"hello"


PORT = serve(_answer)
BASE = f"http://127.0.0.1:{PORT}"
LOCAL = EgressRule(allow_networks=["127.0.0.1/32"], allow_ports=[PORT])

guard = guardkit.Guard(":memory:")
guard.create_agent(
    "a", {"budget": 1000, "scar_limit": 1000, "tools": {}, "default_rule": {"cost": 0}}
)
agent = guard.agent("a")
guardkit.use_agent(agent)
results: dict[str, Any] = {}


def scenario(name: str, body: Callable[[], Any], **options: Any) -> None:
    ran: list[bool] = []

    def tool_body() -> Any:
        ran.append(True)
        return body()

    tool_body.__name__ = name
    guarded = guardkit.tool(name, **options)(tool_body)
    before = agent.status()["scar_score"]
    error = None
    try:
        guarded()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    outcomes = [r["payload"] for r in guard.log("a")["records"] if r["kind"] == "outcome"]
    results[name] = {
        "ran": bool(ran),
        "error": error,
        "outcome": outcomes[-1],
        "scarred": agent.status()["scar_score"] > before,
    }


fence = {"runtime": Runtime(write_roots=[str(ALLOWED)])}

scenario("open_write_outside", lambda: open(OUTSIDE / "x.txt", "w").close(), **fence)
scenario("open_write_inside", lambda: open(ALLOWED / "x.txt", "w").close(), **fence)
scenario("open_append_outside", lambda: open(OUTSIDE / "a.txt", "a").close(), **fence)
scenario("open_read_outside", lambda: (OUTSIDE / "r.txt").exists() or True, **fence)
scenario("pathlib_write_outside", lambda: (OUTSIDE / "p.txt").write_text("x"), **fence)
scenario(
    "os_open_outside",
    lambda: os.close(os.open(OUTSIDE / "o.txt", os.O_WRONLY | os.O_CREAT)),
    **fence,
)
(OUTSIDE / "r.txt").write_text("r")


(ALLOWED / "target.txt").write_text("t")
(ALLOWED / "swap").symlink_to(ALLOWED / "target.txt")


def _race_tool() -> None:
    @guardkit.tool(
        "symlink_race", runtime=True, paths={"path": PathRule(allow=[str(ALLOWED)], write=True)}
    )
    def write(path: str) -> None:
        link = pathlib.Path(path)
        link.unlink()
        link.symlink_to(OUTSIDE / "raced.txt")
        with open(link, "w") as handle:
            handle.write("x")

    error = None
    try:
        write(str(ALLOWED / "swap"))
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    outcomes = [r["payload"] for r in guard.log("a")["records"] if r["kind"] == "outcome"]
    results["symlink_race"] = {
        "ran": True,
        "error": error,
        "outcome": outcomes[-1],
        "created": (OUTSIDE / "raced.txt").exists(),
    }


_race_tool()
scenario("subprocess_run", lambda: subprocess.run(["true"], check=True), runtime=True)
scenario("os_system", lambda: os.system("true"), runtime=True)
scenario(
    "subprocess_allowed",
    lambda: subprocess.run(["true"], check=True),
    runtime=Runtime(subprocess=True),
)
scenario(
    "urllib_loopback", lambda: urllib.request.urlopen(BASE + "/", timeout=5).read(), runtime=True
)
scenario("httpx_loopback", lambda: httpx.get(BASE + "/", timeout=5), runtime=True)
scenario(
    "raw_socket_by_name",
    lambda: socket.create_connection(("localhost", PORT), timeout=5).close(),
    # The name may be looked up; the loopback address it resolves to may not be reached.
    runtime=Runtime(egress=[EgressRule(allow_hosts=["localhost"], allow_ports=[PORT])]),
)
scenario(
    "urllib_allowed",
    lambda: urllib.request.urlopen(BASE + "/", timeout=5).read(),
    runtime=Runtime(egress=[LOCAL]),
)
scenario(
    "urllib_redirect_to_metadata",
    lambda: urllib.request.urlopen(BASE + "/redirect", timeout=5).read(),
    runtime=Runtime(egress=[LOCAL]),
)
scenario(
    "httpx_redirect_to_metadata",
    lambda: httpx.get(BASE + "/redirect", timeout=5, follow_redirects=True),
    runtime=Runtime(egress=[LOCAL]),
)


def _swallow() -> str:
    try:
        open(OUTSIDE / "s.txt", "w").close()
    except PermissionError:
        return "swallowed"
    return "wrote"


scenario("swallowed_permission_error", _swallow, **fence)


def _rebinding() -> None:
    # The argument check resolved "localhost" (through the stub) to a public address; at connect
    # time it resolves to loopback, and the hook sees that.
    def stub(host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    @guardkit.tool(
        "rebinding", runtime=True, egress={"url": EgressRule(resolver=stub, allow_ports=[PORT])}
    )
    def fetch(url: str) -> bytes:
        return urllib.request.urlopen(url, timeout=5).read()

    error = None
    try:
        fetch(f"http://localhost:{PORT}/")
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    outcomes = [r["payload"] for r in guard.log("a")["records"] if r["kind"] == "outcome"]
    results["rebinding"] = {"ran": True, "error": error, "outcome": outcomes[-1]}


_rebinding()

# Outside any guarded call the hook lets everything through.
(OUTSIDE / "free.txt").write_text("free")
subprocess.run(["true"], check=True)
results["outside_a_call"] = {"wrote": (OUTSIDE / "free.txt").read_text() == "free"}

# Another thread is not fenced by a call running in this one.
started, done = threading.Event(), threading.Event()


def _slow() -> None:
    started.set()
    done.wait(5)


def _other_thread() -> None:
    started.wait(5)
    try:
        (OUTSIDE / "thread.txt").write_text("t")
        results["other_thread"] = {"wrote": True}
    except PermissionError:
        results["other_thread"] = {"wrote": False}
    done.set()


worker = threading.Thread(target=_other_thread)
worker.start()
scenario("slow_fenced", _slow, **fence)
worker.join()
print(json.dumps(results))

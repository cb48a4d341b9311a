"""Runtime enforcement, exercised in a child process: an audit hook can never be removed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import guardkit
from guardkit import EgressRule, Runtime
from guardkit.checks import runtime
from tests.tools.conftest import run_scenarios


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("runtime")
    results = run_scenarios("runtime_scenarios.py", work)
    results["_work"] = str(work)
    return results


BLOCKED = {
    "open_write_outside": "may not write",
    "open_append_outside": "may not write",
    "pathlib_write_outside": "may not write",
    "os_open_outside": "may not write",
    "symlink_race": "may not write",
    "subprocess_run": "may not start processes (subprocess.Popen)",
    "os_system": "may not start processes (os.system)",
    "urllib_loopback": "may not connect to 127.0.0.1",
    "httpx_loopback": "may not connect to 127.0.0.1",
    "raw_socket_by_name": "may not connect to 127.0.0.1",
    "urllib_redirect_to_metadata": "may not connect to 169.254.169.254:80",
    "httpx_redirect_to_metadata": "may not connect to 169.254.169.254:80",
    "rebinding": "may not connect to 127.0.0.1",
    "swallowed_permission_error": "may not write",
}


@pytest.mark.parametrize(("name", "why"), sorted(BLOCKED.items()))
def test_blocked_operations_fail_the_call_and_scar(outcomes, name, why):
    result = outcomes[name]
    assert result["outcome"]["status"] == "failure"
    assert "blocked by guardkit" in result["outcome"]["detail"]
    assert why in result["outcome"]["detail"]
    if "scarred" in result:
        assert result["scarred"]


@pytest.mark.parametrize(
    "name",
    [
        "open_write_inside",
        "open_read_outside",
        "subprocess_allowed",
        "urllib_allowed",
        "slow_fenced",
    ],
)
def test_allowed_operations_succeed(outcomes, name):
    assert outcomes[name]["error"] is None
    assert outcomes[name]["outcome"]["status"] == "success"


def test_nothing_was_written_outside(outcomes):
    outside = Path(outcomes["_work"]) / "outside"
    for name in ("x.txt", "a.txt", "p.txt", "o.txt", "raced.txt", "s.txt"):
        assert not (outside / name).exists(), name


def test_swallowed_error_is_still_a_failure(outcomes):
    assert outcomes["swallowed_permission_error"]["error"] is None


def test_outside_a_call_and_other_threads_are_unfenced(outcomes):
    assert outcomes["outside_a_call"] == {"wrote": True}
    assert outcomes["other_thread"] == {"wrote": True}


def test_install_adds_one_hook_only(monkeypatch):
    import _posixsubprocess

    original = _posixsubprocess.fork_exec
    monkeypatch.setattr(_posixsubprocess, "fork_exec", original)  # restored afterwards
    added: list[object] = []
    monkeypatch.setattr(runtime, "_installed", [])
    runtime.install(added.append)
    runtime.install(added.append)
    assert added == [runtime._hook]
    # multiprocessing's start methods call fork_exec unaudited: install wraps it, once.
    assert _posixsubprocess.fork_exec is not original
    assert _posixsubprocess.fork_exec.__qualname__.endswith("fork_exec")


def test_fence_decisions_without_a_hook(tmp_path):
    fence = runtime.Fence(
        tool="t", write_roots=(str(tmp_path),), egress=(EgressRule(allow_ports=[443]),)
    )
    assert fence.problem("open", (str(tmp_path / "x"), "w", 0)) is None
    assert fence.problem("open", ("/etc/passwd", "r", 0)) is None
    assert fence.problem("open", ("/etc/passwd", None, 0o1)) is not None
    assert fence.problem("open", (3, "w", 0)) is None
    assert fence.problem("os.exec", ("/bin/sh",)) is not None
    assert fence.problem("socket.getaddrinfo", ("x",)) is None

    class Sock:
        family = 2

    assert fence.problem("socket.connect", (Sock(), ("8.8.8.8", 443))) is None
    assert fence.problem("socket.connect", (Sock(), ("8.8.8.8", 80))) is not None
    assert fence.problem("socket.connect", (Sock(), ("10.0.0.1", 443))) is not None
    Sock.family = 1
    assert fence.problem("socket.connect", (Sock(), "/run/docker.sock")) is not None


def test_policy_runtime_section(make_agent):
    agent = make_agent(
        tools={"t": {"cost": 0, "runtime": {"subprocess": True, "write_roots": ["/tmp"]}}}
    )
    checks = guardkit.tool(guard=agent)  # decoration alone installs nothing
    assert callable(checks)
    from guardkit.checks.checkset import CheckSet
    from guardkit.tools.policy_checks import PolicyChecks

    merged = PolicyChecks("t", CheckSet()).for_agent(agent)
    assert merged.runtime == Runtime(write_roots=("/tmp",), subprocess=True)
    fence = merged.fence("t")
    assert fence is not None
    assert fence.subprocess


def test_runtime_misuse():
    with pytest.raises(TypeError):
        Runtime(write_roots="/tmp")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Runtime(egress=["http://x"])  # type: ignore[list-item]


def test_this_process_has_no_hook():
    # Every enforcement test runs in a child: an audit hook added here could never be removed.
    assert runtime._installed == []

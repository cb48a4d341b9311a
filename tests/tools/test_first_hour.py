"""A newcomer's own agent (a ``while True:`` loop over ``TOOLS = {name: fn}``, an ``except
Exception`` around each call) run as a subprocess: a broken guard stops it, a missing extra does
not break it, and what it prints reads as Python."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import guardkit
from guardkit import GuardFailed, GuardStop

AGENT = textwrap.dedent(
    """
    import json, sys
    import guardkit

    @guardkit.tool()
    def read_file(path: str) -> str:
        return open(path).read()

    @guardkit.tool()
    def transfer(to: str, amount: int) -> str:
        return f"sent {amount} to {to}"

    TOOLS = {"read_file": read_file, "transfer": transfer}
    SCRIPT = [[("read_file", {"path": __file__})], [("transfer", {"to": "bob", "amount": 5})]]

    messages = []
    while True:
        if not SCRIPT:
            print("Paid the invoice.")
            break
        for name, args in SCRIPT.pop(0):
            try:
                result = TOOLS[name](**args)
            except Exception as e:
                result = f"error: {e}"
            messages.append({"role": "tool", "content": result})
            print("tool result:", result[:60])
    """
)

POLICY = "budget = 100\n[tools.read_file]\ncost = 0\n[tools.transfer]\ncost = 1\n"


def run_agent(
    tmp_path: Path, env: dict[str, str], prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    agent = tmp_path / "agent.py"
    agent.write_text(prelude + AGENT, encoding="utf-8")
    (tmp_path / "policy.toml").write_text(POLICY, encoding="utf-8")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GUARDKIT_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, str(agent)],
        cwd=tmp_path,
        env={**clean, "GUARDKIT_AGENT": "bot", "GUARDKIT_POLICY": "policy.toml", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_ledger_that_cannot_be_created_stops_the_agent_naming_the_path_and_the_os_error(
    tmp_path: Path,
) -> None:
    done = run_agent(tmp_path, {"GUARDKIT_DB": str(tmp_path / "missing" / "g.db")})
    assert done.returncode == 1
    assert "Paid the invoice." not in done.stdout
    assert "tool result" not in done.stdout  # no tool result at all, let alone "internal error"
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("guardkit.errors.GuardFailed: the guard's ledger GUARDKIT_DB=")
    assert str(tmp_path / "missing" / "g.db") in last
    assert "No such file or directory" in last


def test_a_ledger_that_cannot_be_read_stops_the_agent(tmp_path: Path) -> None:
    (tmp_path / "g.db").write_bytes(b"this is not a database" * 100)
    done = run_agent(tmp_path, {"GUARDKIT_DB": "g.db"})
    assert done.returncode == 1
    assert "Paid the invoice." not in done.stdout
    assert "GuardFailed" in done.stderr
    assert "GUARDKIT_DB=g.db" in done.stderr


def test_a_guard_server_out_of_reach_stops_the_agent(tmp_path: Path) -> None:
    done = run_agent(tmp_path, {"GUARDKIT_URL": "http://127.0.0.1:9", "GUARDKIT_TOKEN": "t0ken"})
    assert done.returncode == 1
    assert "Paid the invoice." not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("guardkit.errors.GuardFailed: the guard failed during this call of ")
    assert "'read_file'" in last
    assert "could not be reached" in last
    assert "503" not in last


def test_a_bad_policy_file_names_the_file_and_the_variable_and_suggests_the_key(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.toml").write_text("budget = 1\n[tools.read_file]\ncots = 0\n")
    done = run_agent(tmp_path, {"GUARDKIT_DB": "g.db", "GUARDKIT_POLICY": "bad.toml"})
    assert done.returncode == 1
    assert "Paid the invoice." not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert "the policy file bad.toml that GUARDKIT_POLICY names" in last
    assert "tools.read_file.cots: unknown field (did you mean 'cost'?)" in last
    assert "set GUARDKIT_AGENT" not in last
    assert "500" not in last


def test_a_store_failing_mid_run_stops_sync_async_and_model_turns(calls, tmp_path: Path) -> None:
    guard = guardkit.Guard(tmp_path / "g.db")
    guard.create_agent(
        "bot", {"budget": 5, "tools": {"send": {"cost": 0}, "llm_turn": {"cost": 0}}}
    )
    agent = guard.agent("bot")

    @guardkit.tool(guard=agent)
    def send(to: str) -> None:
        calls(to)

    @guardkit.tool(guard=agent)
    async def asend(to: str) -> None:
        calls(to)

    guard.close()  # every read and write of the store fails from here on
    for attempt in (lambda: send("bob"), lambda: asyncio.run(asend("bob"))):
        swallowed = stop = None
        try:
            attempt()
        except Exception as exc:  # what a hand-written agent does: it must not catch this
            swallowed = exc
        except GuardFailed as exc:
            stop = exc
        assert swallowed is None
        assert isinstance(stop, GuardStop)
        assert "call of the tool" in str(stop)
        assert isinstance(stop.__cause__, guardkit.StoreError)
        assert stop.code == stop.__cause__.code
    with pytest.raises(GuardFailed, match="model turn"), guardkit.model_turn(agent):
        pass
    assert calls.count == 0


WITHOUT = "import sys\nsys.modules[{name!r}] = None  # as if the extra were not installed\n"


def test_otel_variables_without_opentelemetry_warn_once_and_the_agent_runs(tmp_path: Path) -> None:
    done = run_agent(
        tmp_path,
        {"GUARDKIT_DB": "g.db", "OTEL_TRACES_EXPORTER": "console"},
        prelude=WITHOUT.format(name="opentelemetry"),
    )
    assert done.returncode == 0, done.stderr
    assert "Paid the invoice." in done.stdout
    assert done.stderr.count("TracingUnavailable") == 1
    assert "pip install 'guardkit[otel]'" in done.stderr
    assert "tracing stays off" in done.stderr
    strict = run_agent(  # warnings as errors (pytest's filterwarnings = error, say)
        tmp_path,
        {"GUARDKIT_DB": "g.db", "OTEL_TRACES_EXPORTER": "console", "PYTHONWARNINGS": "error"},
        prelude=WITHOUT.format(name="opentelemetry"),
    )
    assert strict.returncode == 0, strict.stderr
    assert "Paid the invoice." in strict.stdout
    assert "pip install 'guardkit[otel]'" in strict.stderr


def test_the_console_exporter_prints_log_records_only_when_asked(tmp_path: Path) -> None:
    spans_only = run_agent(tmp_path, {"GUARDKIT_DB": "g.db", "OTEL_TRACES_EXPORTER": "console"})
    assert spans_only.returncode == 0, spans_only.stderr
    assert '"name": "execute_tool transfer"' in spans_only.stdout
    assert '"body"' not in spans_only.stdout
    both = run_agent(
        tmp_path,
        {"GUARDKIT_DB": "g.db", "OTEL_TRACES_EXPORTER": "console", "OTEL_LOGS_EXPORTER": "console"},
    )
    assert both.returncode == 0, both.stderr
    assert '"body"' in both.stdout


def test_a_guard_server_without_httpx_names_the_client_extra(tmp_path: Path) -> None:
    done = run_agent(
        tmp_path,
        {"GUARDKIT_URL": "http://127.0.0.1:9", "GUARDKIT_TOKEN": "t0ken"},
        prelude=WITHOUT.format(name="httpx"),
    )
    assert done.returncode == 1
    assert "Paid the invoice." not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("guardkit.errors.NoAgentConfigured: GUARDKIT_URL=http://127.0.0.1:9")
    assert "pip install 'guardkit[client]'" in last

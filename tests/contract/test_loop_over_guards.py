"""The seed's loop (``guardkit.loop.run``) behaves the same in-process and over HTTP."""

from __future__ import annotations

import socket
from typing import Any

from guardkit.client import AgentClient
from guardkit.loop import run
from guardkit.testing import ScriptedModel


def test_the_loop_runs_the_same_on_every_guard(guard_pair: tuple[Any, Any]) -> None:
    agent, _ = guard_pair
    model = ScriptedModel(
        [[("read", {"path": "notes.txt"}), ("shell", {"cmd": "rm -rf /"})], "All done."]
    )
    ran: list[str] = []
    tools = {
        "read": lambda path: ran.append(path) or "contents",
        "shell": lambda cmd: ran.append(cmd),
    }
    result = run(model, agent, tools, [{"role": "user", "content": "tidy up"}])
    assert (result.outcome, result.text) == ("done", "All done.")
    assert [(name, verdict) for name, _, verdict in result.calls] == [
        ("read", "allowed"),
        ("shell", "denied"),
    ]
    assert ran == ["notes.txt"]
    status = agent.status()
    assert (status["spent"], status["scar_score"]) == (2, 3)  # two llm_turns; one moderate scar


def test_an_unreachable_guard_stops_the_loop_with_nothing_done() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ran: list[str] = []
    model = ScriptedModel([[("read", {"path": "x"})], "done"])
    with AgentClient(f"http://127.0.0.1:{port}", "bot", "agt_bot.00", timeout=2) as agent:
        result = run(model, agent, {"read": lambda path: ran.append(path)}, [])
    assert result.outcome == "guard_unreachable"
    assert ran == []

"""Several processes sharing one SQLite ledger: no overspend, no lost or doubled actions, and an
operator in one process approving what an agent in another is waiting for (LINEAGE §6, §9, §14).

Workers are separate interpreters started with ``sys.executable -c``, each opening its own
``Guard`` on the same file, so the only thing serialising them is the store's file lock.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from guardkit import Guard

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
WORKERS = 4
#: Agent "capped" may spend 60 but its only tool has a lifetime cap of CAP allowed calls;
#: agent "funded" has no cap but only BUDGET credits at 1 a call.
CAP = 23
BUDGET = 19

RACER = textwrap.dedent(
    """
    import sys
    from guardkit import Guard

    path, worker = sys.argv[1], sys.argv[2]
    guard = Guard(path)
    print("ready", flush=True)
    sys.stdin.readline()  # the start signal, so every worker races from the same moment
    agents = {"capped": guard.agent("capped"), "funded": guard.agent("funded")}
    done = set()
    while len(done) < len(agents):
        for name, agent in agents.items():
            if name in done:
                continue
            decision = agent.request("work", {"worker": worker})
            if decision["decision"] == "allowed":
                print(name, decision["action_id"], flush=True)
                agent.report(decision["action_id"], "success", worker)
            elif decision["reason"]["code"] in ("tool_call_limit", "terminated"):
                done.add(name)
            else:
                print("unexpected", decision, flush=True)
                sys.exit(3)
    guard.close()
    print("done", flush=True)
    """
)


def _python(code: str, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        **kwargs,  # type: ignore[call-overload]
    )


def _records(guard: Guard, agent_id: str) -> list[dict]:
    return guard.log(agent_id, limit=5000)["records"]


def test_racing_processes_never_overspend_or_lose_an_action(tmp_path: Path) -> None:
    path = str(tmp_path / "guard.db")
    with Guard(path) as guard:
        guard.create_agent(
            "capped",
            {"budget": 60, "scar_limit": 1000, "tools": {"work": {"cost": 1, "max_calls": CAP}}},
        )
        guard.create_agent(
            "funded", {"budget": BUDGET, "scar_limit": 1000, "tools": {"work": {"cost": 1}}}
        )
    procs = [_python(RACER, path, str(n), stdin=subprocess.PIPE) for n in range(WORKERS)]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [proc.returncode for proc in procs] == [0] * WORKERS, outputs
    received: dict[str, list[str]] = {"capped": [], "funded": []}
    for out in outputs:
        lines = out.splitlines()
        assert lines[-1] == "done", out
        for line in lines[:-1]:
            name, action_id = line.split()
            received[name].append(action_id)

    with Guard(path) as guard:
        assert guard.quarantined == {}
        for name, expected in (("capped", CAP), ("funded", BUDGET)):
            ids = received[name]
            assert len(ids) == len(set(ids)) == expected, name
            records = _records(guard, name)
            allowed = [r["payload"]["action_id"] for r in records if r["kind"] == "action_allowed"]
            assert sorted(allowed) == sorted(ids)
            outcomes = [r["payload"]["action_id"] for r in records if r["kind"] == "outcome"]
            assert sorted(outcomes) == sorted(ids)
            requested = [
                r["payload"]["action_id"] for r in records if r["kind"] == "action_requested"
            ]
            assert requested == [f"act-{n}" for n in range(1, len(requested) + 1)]
            status = guard.status(name)
            assert status["actions_allowed"] == expected
            assert status["spent"] == expected
            assert 0 <= status["remaining"] == status["budget"] - expected
            assert guard.verify(name)["ok"]
        assert guard.status("funded")["alive"] is False
        assert guard.status("funded")["termination_reason"] == "budget exhausted"
        # Every worker stopped at the cap on "capped": one minor scar per capped-out request.
        capped = guard.status("capped")
        assert capped["alive"] is True
        assert capped["actions_denied"] == capped["scar_score"] >= WORKERS


WRITER = textwrap.dedent(
    """
    import sys
    from guardkit import Guard

    guard = Guard(sys.argv[1], durability="normal")
    agent = guard.agent("busy")
    print("started", flush=True)
    for _ in range(int(sys.argv[2])):
        decision = agent.request("work", {})
        agent.report(decision["action_id"], "success")
    guard.close()
    """
)


def test_opening_while_another_process_writes_quarantines_nothing(tmp_path: Path) -> None:
    """Verification on open must read the ledger and the agent row as one snapshot."""
    path = str(tmp_path / "guard.db")
    with Guard(path) as guard:
        guard.create_agent("busy", {"budget": 10**9, "tools": {"work": {"cost": 1}}})
    writer = _python(WRITER, path, "400")
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "started"
        opens = 0
        while writer.poll() is None or opens < 5:
            with Guard(path) as guard:
                assert guard.quarantined == {}, guard.quarantined
            opens += 1
        assert writer.wait(timeout=120) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.communicate()
    with Guard(path) as guard:
        assert guard.quarantined == {}
        assert guard.status("busy")["actions_allowed"] == 400
        assert guard.verify("busy")["ok"]


WAITER = textwrap.dedent(
    """
    import sys
    from guardkit import Guard

    with Guard(sys.argv[1]) as guard:
        agent = guard.agent("bot")
        for _ in range(2):
            pending = agent.request("deploy", {"service": "api"})
            print(pending["decision"], pending["action_id"], flush=True)
            print(agent.wait_for_approval(pending["action_id"], timeout=120, poll=0.05), flush=True)
    """
)

OPERATOR = textwrap.dedent(
    """
    import sys
    from guardkit import Guard

    path, verb, action_id = sys.argv[1:4]
    with Guard(path) as guard:
        if verb == "approve":
            print(guard.approve("bot", action_id, "alice")["decision"], flush=True)
        else:
            print(guard.reject("bot", action_id, "alice", "not today")["decision"], flush=True)
    """
)


def test_operator_process_decides_what_an_agent_process_waits_for(tmp_path: Path) -> None:
    path = str(tmp_path / "guard.db")
    with Guard(path) as guard:
        guard.create_agent(
            "bot", {"budget": 10, "tools": {"deploy": {"cost": 4, "requires_approval": True}}}
        )
    agent = _python(WAITER, path)
    try:
        assert agent.stdout is not None
        results = []
        for verb in ("approve", "reject"):
            decision, action_id = agent.stdout.readline().split()
            assert decision == "pending_approval"
            operator = _python(OPERATOR, path, verb, action_id)
            said = operator.communicate(timeout=120)[0].strip()
            assert operator.returncode == 0
            assert said == ("allowed" if verb == "approve" else "denied")
            results.append((action_id, agent.stdout.readline().strip()))
        assert agent.wait(timeout=120) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.communicate()
    assert results == [("act-1", "allowed"), ("act-2", "denied")]
    with Guard(path) as guard:
        status = guard.status("bot")
        assert (status["spent"], status["actions_allowed"], status["actions_denied"]) == (4, 1, 1)
        assert status["actions_pending"] == 0
        assert guard.action("bot", "act-1")["approved_by"] == "alice"
        assert guard.action("bot", "act-2")["reason"]["code"] == "rejected"
        assert guard.verify("bot")["ok"]

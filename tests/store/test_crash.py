"""kill -9 in the middle of writing: nothing a caller was told is lost, the ledger verifies and
the state a reopened guard holds is exactly what the ledger replays to (LINEAGE §14: each append
is durable before it returns), and the head witness holds no head the database lacks and none
older than an answered decision."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from contextlib import closing
from pathlib import Path

import pytest

from guardkit import Guard
from guardkit.store.replay import Replay

pytestmark = pytest.mark.slow

#: Where the kill lands is drawn from this seed: ``GUARDKIT_CRASH_SEED``, else pytest-randomly's
#: per-test ``random`` state (``-p randomly_seed=N`` replays a run). It is in every failure message.
SEED = int(os.environ.get("GUARDKIT_CRASH_SEED") or random.randrange(2**32))

#: Loops forever: requests (a tripwire now and then), reports (a failure now and then), and
#: prints every allowed action id only after the guard has answered.
WRITER = textwrap.dedent(
    """
    import sys
    from guardkit import Guard

    guard = Guard(sys.argv[1], durability="full")
    agent = guard.agent("bot")
    n = 0
    while True:
        n += 1
        if n % 9 == 0:
            agent.request("rm_rf", {"n": n})
            continue
        decision = agent.request("work", {"n": n}, cost=n % 3)
        if decision["decision"] == "allowed":
            print(decision["action_id"], flush=True)
            agent.report(decision["action_id"], "failure" if n % 5 == 0 else "success", str(n))
        else:
            print("unexpected", decision, flush=True)
            sys.exit(3)
    """
)


def _run_and_kill(path: str, lines: int, seed: int) -> list[str]:
    """Let the writer acknowledge ``lines`` actions, then SIGKILL it at once or after a short,
    seeded delay (so the kill lands at different points of a write)."""
    delay = random.Random(seed).choice([0.0, 0.0005, 0.002, 0.01])
    where = Path(path).parent
    with (where / f"writer-{seed}.err").open("w+") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, path],
            cwd=where,
            text=True,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        printed: list[str] = []
        try:
            assert proc.stdout is not None
            while len(printed) < lines:
                line = proc.stdout.readline()
                if not line:
                    errors.seek(0)
                    pytest.fail(f"seed {seed}: writer exited with {proc.wait()}: {errors.read()}")
                assert not line.startswith("unexpected"), f"seed {seed}: {line}"
                printed.append(line.strip())
            if delay:
                threading.Event().wait(delay)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL, f"seed {seed}"
    return printed


def _assert_witnessed(path: str, printed: list[str]) -> None:
    """Before anything reopens the store: every head the witness holds is a committed record
    (it never runs ahead of a commit), and every action the writer was told about is at or
    behind the newest witnessed head (it never lags an answered commit)."""
    lines = Path(path + ".witness").read_bytes().split(b"\n")
    assert lines[0] == b"guardkit-witness v1"
    heads = [json.loads(line) for line in lines[1:-1]]  # the last may be torn: no newline yet
    with closing(sqlite3.connect(path)) as conn:
        hashes = dict(conn.execute("SELECT seq, hash FROM records WHERE agent_id = 'bot'"))
        allowed = {
            json.loads(payload)["action_id"]: seq
            for seq, payload in conn.execute(
                "SELECT seq, payload FROM records WHERE agent_id = 'bot' "
                "AND kind = 'action_allowed'"
            )
        }
    ahead = [(seq, digest) for _, seq, digest, _ in heads if hashes.get(seq) != digest]
    assert ahead == []
    newest = max(seq for _, seq, _, _ in heads)
    lagging = [a for a in printed if allowed[a] > newest]
    assert lagging == []


def _assert_consistent(guard: Guard, printed: list[str]) -> None:
    assert guard.quarantined == {}
    result = guard.verify("bot")
    assert result["ok"], result
    records = list(guard.store.iter_records("bot"))
    allowed = {r.payload["action_id"] for r in records if r.kind == "action_allowed"}
    missing = [action_id for action_id in printed if action_id not in allowed]
    assert missing == []
    replay = Replay("bot", None)
    for record in records:
        replay.feed(record, None)
    folded = replay.finish()
    with guard.store.transaction(write=False) as tx:
        state = tx.agent("bot")
    assert state.head_seq == folded.head_seq == records[-1].seq
    assert state.head_hash == folded.head_hash
    assert (state.spent, state.scar_score, state.alive) == (
        folded.spent,
        folded.scar_score,
        folded.alive,
    )
    assert state.next_action == folded.next_action
    assert state.actions_allowed == folded.actions_allowed == len(allowed)
    assert state.actions_denied == folded.actions_denied
    assert state.actions_pending == folded.actions_pending == 0
    assert state.tool_counts == folded.tool_counts
    assert state.scars == folded.scars
    # Every allowed action reads back as allowed or completed, from its own records.
    for action_id in allowed:
        assert guard.action("bot", action_id)["status"] in ("allowed", "completed")


def test_sigkill_mid_write_loses_nothing_acknowledged(tmp_path: Path) -> None:
    try:
        _crash_twice(tmp_path)
    except AssertionError as exc:
        exc.add_note(f"crash test seed {SEED}: GUARDKIT_CRASH_SEED={SEED} replays the kill points")
        raise


def _crash_twice(tmp_path: Path) -> None:
    path = str(tmp_path / "guard.db")
    with Guard(path) as guard:
        guard.create_agent(
            "bot",
            {"budget": 10**9, "scar_limit": 10**9, "tools": {"work": {"cost": 1}}},
        )
    rng = random.Random(SEED)
    first = 150 + rng.randrange(100)
    printed = _run_and_kill(path, first, rng.randrange(2**32))
    assert len(set(printed)) == first, f"seed {SEED}"
    _assert_witnessed(path, printed)
    with Guard(path) as guard:
        _assert_consistent(guard, printed)
    # Crash again on the recovered file, then check that a new writer carries on normally.
    printed += _run_and_kill(path, 80 + rng.randrange(80), rng.randrange(2**32))
    _assert_witnessed(path, printed)
    with Guard(path) as guard:
        _assert_consistent(guard, printed)
        decision = guard.agent("bot").request("work", {})
        assert decision["decision"] == "allowed"
        assert int(decision["action_id"].split("-")[1]) > int(printed[-1].split("-")[1])
        assert guard.verify("bot")["ok"]

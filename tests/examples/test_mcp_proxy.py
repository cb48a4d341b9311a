"""``examples/mcp-proxy``: the scripted client, a denial, an approval from a second process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

CLIENT = Path(__file__).resolve().parents[2] / "examples" / "mcp-proxy" / "client.py"


def guardkit(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "guardkit", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,  # outside the checkout: the installed package is what runs
    )
    return done.stdout


def test_the_example_denies_waits_for_an_approval_and_prints_the_ledger(tmp_path):
    db, workspace = tmp_path / "guard.db", tmp_path / "workspace"
    with subprocess.Popen(
        [sys.executable, str(CLIENT), "--db", str(db), "--workspace", str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
    ) as client:
        deadline, pending = time.monotonic() + 90, []
        while not pending and time.monotonic() < deadline:
            time.sleep(0.3)
            if db.exists():
                pending = json.loads(
                    guardkit(tmp_path, "pending", "files-bot", "--db", str(db), "--json")
                )
        assert [p["action"]["tool"] for p in pending] == ["files.delete_path"]
        assert (workspace / "old-logs").exists()  # nothing ran before the approval
        action_id = pending[0]["action"]["action_id"]
        guardkit(tmp_path, "approve", "files-bot", action_id, "--by", "you", "--db", str(db))
        out, _ = client.communicate(timeout=90)
    assert client.returncode == 0, out
    assert "tools the model sees: list_files, read_file, write_file, delete_path" in out
    denied = "run_command: Denied by the policy guard: tool 'files.run_command' is not allowed."
    assert denied in out
    assert "delete_path: deleted old-logs" in out
    assert "old-logs still there: False" in out
    assert '"approved_by": "you"' in out
    assert "tool_not_allowed" in out
    pins = json.loads((tmp_path / "guard.db.mcp-pins.json").read_text())
    pinned = pins["agents"]["files-bot"]["servers"]["files"]["tools"]
    assert sorted(pinned) == ["delete_path", "list_files", "read_file", "write_file"]
    # The README's review command: nothing changed, nothing to accept.
    review = guardkit(
        tmp_path, "mcp", "accept", "--agent", "files-bot", "--server-name", "files",
        "--db", str(db), "--dry-run",
    )  # fmt: skip
    assert "nothing to accept" in review

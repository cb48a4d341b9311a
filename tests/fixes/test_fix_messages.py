"""What ``guardkit fix`` says: the dry run names what --write also changes, the dependency is
pinned to the running guardkit, and every pointer to the docs works outside this repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from guardkit.codemods.cli import scan
from guardkit.codemods.rules import RULES_BY_ID

import guardkit

AGENT = """
import json
import subprocess

from openai import OpenAI

client = OpenAI()


def run_shell(command: str) -> str:
    return subprocess.run(command, shell=True, capture_output=True, text=True).stdout


TOOLS = {"run_shell": run_shell}
SCHEMAS = [{"type": "function", "function": {"name": "run_shell", "parameters": {}}}]


def main(messages):
    while True:
        reply = client.chat.completions.create(model="m", messages=messages, tools=SCHEMAS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        for tc in message.tool_calls:
            fn = TOOLS[tc.function.name]
            try:
                result = fn(**json.loads(tc.function.arguments))
            except Exception as e:
                result = f"error: {e}"
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})
"""

PYPROJECT = '[project]\nname = "shop"\nversion = "1"\ndependencies = ["openai>=1"]\n'


def _fix(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guardkit", "fix", ".", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_dry_run_says_what_write_also_changes_and_write_pins_the_version(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    pin = "guardkit>=" + ".".join(guardkit.__version__.split(".")[:2])

    dry = _fix(tmp_path)
    assert dry.returncode == 1, dry.stderr
    assert (
        f"With --write, guardkit fix would also add {pin} to the dependencies in pyproject.toml."
        in dry.stderr
    )
    assert "With --write, guardkit fix would also write the policy skeleton " in dry.stderr
    assert (tmp_path / "pyproject.toml").read_text() == PYPROJECT  # nothing written
    assert not (tmp_path / "guardkit-policy.toml").exists()
    assert "docs/" not in dry.stderr
    assert "guardkit scan --explain CODE" in dry.stderr

    written = _fix(tmp_path, "--write")
    assert written.returncode == 0, written.stderr
    assert f"Added {pin} to the dependencies in pyproject.toml." in written.stderr
    assert f'"{pin}"' in (tmp_path / "pyproject.toml").read_text()
    policy = (tmp_path / "guardkit-policy.toml").read_text()
    assert "docs/" not in policy
    assert "requires_approval (a human" in policy


def test_explain_answers_for_every_rule() -> None:
    """``guardkit scan --explain CODE``, which fix's report points at, for every rule."""
    for code in RULES_BY_ID:
        done = CliRunner().invoke(scan, ["--explain", code])
        assert done.exit_code == 0, done.output
        assert done.output.startswith(code)

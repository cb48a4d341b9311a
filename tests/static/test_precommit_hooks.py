"""`.pre-commit-hooks.yaml`: the fields pre-commit requires, current stage names, real commands."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import fix, scan

HOOKS = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"
COMMANDS = {"scan": scan, "fix": fix}


def _hooks() -> list[dict[str, str]]:
    """The file is a flat list of mappings; read it without a YAML dependency."""
    hooks: list[dict[str, str]] = []
    for raw in HOOKS.read_text().splitlines():
        line = raw.split(" #")[0].rstrip()
        if not line or line.lstrip().startswith("#"):
            continue
        if line.startswith("- "):
            hooks.append({})
            line = line[2:]
        key, _, value = line.strip().partition(":")
        hooks[-1][key] = value.strip().strip('"')
    return hooks


def test_hooks_have_required_fields_and_current_stages() -> None:
    hooks = _hooks()
    assert [h["id"] for h in hooks] == ["guardkit-scan", "guardkit-fix"]
    for hook in hooks:
        assert {"id", "name", "entry", "language"} <= hook.keys()
        stages = {s.strip() for s in hook["stages"].strip("[]").split(",")}
        assert stages <= {"pre-commit", "pre-push", "manual", "commit-msg"}
        assert hook["minimum_pre_commit_version"] == "3.2.0"
        assert hook["require_serial"] == "true"  # the runner parallelises itself
    assert _hooks()[1]["stages"] == "[manual]"  # fixing never surprises a commit


def test_hook_entries_are_valid_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the scan cache goes to the cwd
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    for hook in _hooks():
        program, sub, *options = shlex.split(hook["entry"])
        assert program == "guardkit"
        result = CliRunner().invoke(COMMANDS[sub], [*options, str(clean)])
        assert result.exit_code == 0, result.output

"""`guardkit fix --write` on a copy of a realistic agent repository, then compile and re-scan."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from guardkit.codemods import scan
from guardkit.codemods.cli import fix as fix_command
from guardkit.codemods.cli import scan as scan_command
from guardkit.codemods.rules import RULES_BY_ID

FIXED_RULES = {rule.ID for rule in RULES_BY_ID.values() if rule.FIXED_BY}


def _scan_json(repo: Path) -> dict:
    result = CliRunner().invoke(scan_command, [str(repo), "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def test_fix_write_compiles_and_rescans_clean(agent_repo: Path) -> None:
    before = _scan_json(agent_repo)
    rules_before = {f["rule"] for f in before["findings"]}
    assert {"GK101", "GK102", "GK201", "GK202"} <= rules_before
    files_with_findings = {f["path"] for f in before["findings"]}
    assert len(files_with_findings) == 6  # every agent module, not __init__.py

    result = CliRunner().invoke(fix_command, [str(agent_repo), "--write"])
    assert result.exit_code == 0, result.output

    for path in agent_repo.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")  # raises SyntaxError if the fix broke it
    after = _scan_json(agent_repo)
    left = [f for f in after["findings"] if f["rule"] in FIXED_RULES and f["fixable"]]
    assert left == []
    # nothing remains: the loops' dispatch sites hand each call to guardkit.call_tool, so a
    # denial of a now-guarded tool is the tool's result, not an exception out of the loop
    # (no GK302). The Agents SDK agent got its integration (guard_tools, GuardHooks), not a
    # decorator and a turn gate.
    assert after["findings"] == []
    loop = "".join((agent_repo / "agent" / "anthropic_loop.py").read_text().split())
    assert "guardkit.call_tool(block.name,block.input,TOOL_FUNCTIONS[block.name])" in loop
    sdk = (agent_repo / "agent" / "agents_sdk.py").read_text()
    assert "tools=guard_tools([refund])" in sdk
    assert "hooks=GuardHooks()" in sdk
    assert "@guardkit.tool()" not in sdk

    again = CliRunner().invoke(fix_command, [str(agent_repo)])
    assert again.exit_code == 0, again.output
    assert "would change 0 of 7 files" in again.output


def test_fix_preserves_comments_and_places_guard_below_framework_decorators(
    agent_repo: Path,
) -> None:
    CliRunner().invoke(fix_command, [str(agent_repo), "--write"])
    mcp = (agent_repo / "agent" / "mcp_server.py").read_text()
    assert '@mcp.tool(description="Delete a file")\n@guardkit.tool()\nasync def delete_file' in mcp
    shell = (agent_repo / "agent" / "anthropic_loop.py").read_text()
    assert "# deliberately dangerous: this is what the guard is for" in shell
    assert shell.count("import guardkit") == 1


def test_diff_is_the_default_and_writes_nothing(agent_repo: Path) -> None:
    original = {p: p.read_text() for p in agent_repo.rglob("*.py")}
    result = CliRunner().invoke(fix_command, [str(agent_repo)])
    assert result.exit_code == 1
    assert "+@guardkit.tool()" in result.output
    assert "+    _gk_turns = 0" in result.output
    assert "+        for _gk_turns in range(25):" in result.output
    assert {p: p.read_text() for p in agent_repo.rglob("*.py")} == original


def test_select_limits_the_codemods(agent_repo: Path) -> None:
    result = CliRunner().invoke(fix_command, [str(agent_repo), "--write", "--select", "GK201"])
    assert result.exit_code == 0
    findings = [f for r in scan(str(agent_repo)) for f in r.findings]
    assert not [f for f in findings if f.rule == "GK201"]
    assert [f for f in findings if f.rule == "GK101"]


def test_python_m_entry_point_in_a_subprocess(agent_repo: Path) -> None:
    cmd = [sys.executable, "-m", "guardkit.codemods", "scan", str(agent_repo), "--no-cache"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=agent_repo)
    assert done.returncode == 1, done.stderr
    assert "GK101" in done.stdout


def test_parallel_fix_matches_serial(agent_repo: Path, tmp_path: Path) -> None:
    from guardkit.codemods import fix

    source = (agent_repo / "agent" / "litellm_loop.py").read_text()
    many = tmp_path / "many"
    many.mkdir()
    for n in range(10):
        (many / f"m{n}.py").write_text(source)
    serial = fix(str(many), jobs=1)
    parallel = fix(str(many), jobs=2)
    assert [r.after for r in parallel] == [r.after for r in serial]
    assert all(r.changed and r.error is None for r in parallel)


def test_guardkit_cli_subprocess_fix_then_scan(agent_repo: Path) -> None:
    """Through the root `guardkit` command the lead registers these commands on."""
    run = [sys.executable, "-m", "guardkit"]
    fixed = subprocess.run(
        [*run, "fix", "--write", str(agent_repo)], capture_output=True, text=True, cwd=agent_repo
    )
    assert fixed.returncode == 0, fixed.stderr
    assert "changed 6 of 7 files" in fixed.stderr
    scanned = subprocess.run(
        [*run, "scan", "--no-cache", "--select", "GK101,GK102,GK201", str(agent_repo)],
        capture_output=True,
        text=True,
        check=False,
        cwd=agent_repo,
    )
    assert "[*]" not in scanned.stdout, scanned.stdout  # nothing fixable is left
    assert "Runner.run" not in scanned.stdout  # the Agents SDK integration gates the run

"""`guardkit scan` through click's CliRunner: exit codes, formats, selection, config, --explain."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods import cli
from guardkit.codemods.cli import scan


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(scan, [*args, "--no-cache"])
    return result.exit_code, result.output


def test_exit_codes(project: Path) -> None:
    assert run("src/util.py")[0] == 0
    code, out = run("src")
    assert code == 1
    assert "src/agent.py:7:5: GK101" in out  # 1-based columns in text output
    assert "src/agent.py:8:9: GK102" in out
    assert run("missing_dir")[0] == 2
    assert run("src", "--select", "GK999")[0] == 2


def test_parse_error_is_reported_and_the_rest_still_scanned(project: Path) -> None:
    (project / "src" / "broken.py").write_text("import openai\nwhile True\n")
    code, out = run("src", "--format", "json")
    assert code == 2
    report = json.loads(out)
    assert [e["path"].endswith("broken.py") for e in report["errors"]] == [True]
    assert {f["rule"] for f in report["findings"]} == {"GK101", "GK102"}


def test_select_and_ignore(project: Path) -> None:
    _, out = run("src", "--select", "GK101", "--format", "json")
    assert {f["rule"] for f in json.loads(out)["findings"]} == {"GK101"}
    code, out = run("src", "--ignore", "GK1")
    assert code == 0
    assert "Found 0 findings" in out


def test_output_file(project: Path) -> None:
    code, out = run("src", "--format", "json", "--output", "report.json")
    assert code == 1
    assert out == ""
    report = json.loads((project / "report.json").read_text())
    assert report["findings"][0]["path"].endswith("agent.py")
    assert set(report["findings"][0]) >= {
        "rule",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "symbol",
        "message",
        "fixable",
    }


def test_explain() -> None:
    result = CliRunner().invoke(scan, ["--explain", "GK101"])
    assert result.exit_code == 0
    assert "GK101 UnboundedModelLoop" in result.output
    assert "BoundModelLoops" in result.output
    assert CliRunner().invoke(scan, ["--explain", "GK999"]).exit_code == 2


def test_pyproject_config_ignore_and_custom_client(project: Path) -> None:
    (project / "src" / "custom.py").write_text(
        "from mycorp.llm import Gateway\ngw = Gateway()\ngw.ask(prompt='hi')\n"
    )
    code, out = run("src/custom.py")
    assert code == 0  # unknown client: not a model call
    (project / "pyproject.toml").write_text(
        "[tool.guardkit]\nignore = ['GK101']\n"
        "[tool.guardkit.model-clients]\n'mycorp.llm.Gateway' = 'mycorp'\n"
        "[tool.guardkit.client-methods]\nmycorp = ['ask']\n"
    )
    _, out = run("src", "--format", "json")
    found = {(Path(f["path"]).name, f["rule"]) for f in json.loads(out)["findings"]}
    assert found == {("agent.py", "GK102"), ("custom.py", "GK102")}


def test_bad_config_is_a_usage_error(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.guardkit]\nmax-turns = 0\n")
    code, out = run("src")
    assert code == 2
    assert "max-turns" in out


def test_inline_suppressions(project: Path) -> None:
    agent = project / "src" / "agent.py"
    text = agent.read_text()
    agent.write_text(
        text.replace("while True:", "while True:  # guardkit: ignore[GK101]").replace(
            "        client.messages", "        # guardkit: ignore\n        client.messages"
        )
    )
    assert run("src") == (0, "Found 0 findings in 2 files.\n")
    agent.write_text(text.replace("while True:", "while True:  # guardkit: ignore[GK201]"))
    assert run("src")[0] == 1  # a different rule id does not silence GK101


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_for_long_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with cli._progress(10, True) as short:
        assert short is None
    with cli._progress(500, False) as disabled:
        assert disabled is None
    with cli._progress(500, True) as update:
        assert update is not None
        update(250, 500)
    assert "scanning" in terminal.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with cli._progress(500, True) as piped:
        assert piped is None

"""Shared fixtures for the static-pass tests."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import scan

#: the fixture projects under data/ are scanned, never collected (one has a tests/ folder)
collect_ignore_glob = ["data/*"]

LOOP = """\
import anthropic

client = anthropic.Anthropic()


def run(messages):
    while True:
        client.messages.create(model="m", messages=messages)
"""

CLEAN = """\
import json


def load(path):
    return json.loads(path)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tmp project (cwd) with one agent file, one clean file and a pyproject.toml."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "agent.py").write_text(LOOP)
    (tmp_path / "src" / "util.py").write_text(CLEAN)
    return tmp_path


@pytest.fixture
def data_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """Copies the fixture project ``data/<name>`` to a tmp folder and makes it the cwd."""

    def copy(name: str) -> Path:
        target = tmp_path / f"{name}_project"
        shutil.copytree(Path(__file__).parent / "data" / name, target)
        monkeypatch.chdir(target)
        return target

    return copy


def _scan_found(*args: str) -> set[tuple[str, int, str, str]]:
    """``guardkit scan . --format json --no-cache`` in the cwd, which must find something:
    each finding as (path, line, rule, symbol)."""
    result = CliRunner().invoke(scan, [".", "--format", "json", "--no-cache", *args])
    assert result.exit_code == 1, result.output
    return {
        (f["path"], f["line"], f["rule"], f["symbol"])
        for f in json.loads(result.output)["findings"]
    }


@pytest.fixture
def found() -> Callable[..., set[tuple[str, int, str, str]]]:
    """:func:`_scan_found` (a conftest module is not imported by name)."""
    return _scan_found

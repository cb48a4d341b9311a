"""A callee picked from a table by what the model returned (issue 20): the model answers with
one token, a number, and ``HELPERS[int(reply) - 1]`` is called; a dispatch like a lookup by
name, and the functions of the module-level table are the tools. Decoys: a table indexed by a
turn counter, a reply indexed by a constant."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import scan

DATA = Path(__file__).parent / "data" / "picked"


@pytest.fixture
def picked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "picked_project"
    shutil.copytree(DATA, target)
    monkeypatch.chdir(target)
    return target


def test_a_table_item_the_reply_selects_is_a_dispatch(picked: Path) -> None:
    result = CliRunner().invoke(scan, [".", "--format", "json", "--no-cache"])
    assert result.exit_code == 1, result.output
    found = {
        (f["path"], f["line"], f["rule"], f["symbol"])
        for f in json.loads(result.output)["findings"]
        if f["rule"] in {"GK201", "GK202"}
    }
    assert found == {
        ("router.py", 11, "GK201", "weather"),
        ("router.py", 15, "GK201", "search"),
        ("router.py", 26, "GK202", "HELPERS[index - 1]"),
    }

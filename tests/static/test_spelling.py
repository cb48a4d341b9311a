"""A model-chosen tool name respelled before the lookup (issue 20): ``key = self._key(call.name)``
where ``_key`` returns ``name.lower().replace("_", "")``, then ``self.tools[key]`` read through a
``@property`` typed ``dict[str, Tool]``. The lookup is a dispatch and the tool class behind the
table is the tool (the schemas reach the model through the executor, which is not itself a
tool). ``getattr(self, name.lower()) if name.lower() in ACTIONS else None`` then
``impl(**arguments)`` is a dispatch too. A key respelled from a configuration field
(``field.label``, ``key.upper()``) is no tool name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import scan

DATA = Path(__file__).parent / "data" / "spelling"


@pytest.fixture
def spelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "spelling_project"
    shutil.copytree(DATA, target)
    monkeypatch.chdir(target)
    return target


def test_a_respelled_name_still_selects_the_tool(spelling: Path) -> None:
    result = CliRunner().invoke(scan, [".", "--format", "json", "--no-cache"])
    assert result.exit_code == 1, result.output
    found = {
        (f["path"], f["line"], f["rule"], f["symbol"])
        for f in json.loads(result.output)["findings"]
    }
    assert found == {
        ("crew/agent.py", 14, "GK102", "client.messages.create"),
        ("crew/desktop.py", 26, "GK202", "getattr(self, name.lower())"),
        ("crew/desktop.py", 34, "GK102", "client.chat.completions.create"),
        ("crew/executor.py", 29, "GK202", "self.tools[key]"),
        ("crew/tools.py", 18, "GK201", "Shell.execute"),
    }

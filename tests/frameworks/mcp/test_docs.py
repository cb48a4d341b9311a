"""The MCP section of docs/frameworks.md and README.md: every Python block runs as pasted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _blocks() -> list[str]:
    docs = (ROOT / "docs" / "frameworks.md").read_text()
    section = docs.split("\n## MCP\n", 1)[1].split("\n## ", 1)[0]
    readme = (ROOT / "README.md").read_text().split("\n### MCP\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section + readme, re.S)


@pytest.mark.parametrize("block", _blocks())
def test_python_block_runs_offline_in_a_fresh_folder(block, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Denied by the policy guard" in done.stdout or "path_denied" in done.stdout

"""Every ``python`` block of the OpenAI Agents SDK section of docs/frameworks.md runs as pasted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents")

ROOT = Path(__file__).resolve().parents[2]
FENCED = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _section(path: Path, heading: str) -> str:
    """From ``heading`` (a level-2 heading) to the next level-2 heading."""
    text = path.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


BLOCKS = FENCED.findall(_section(ROOT / "docs" / "frameworks.md", "## OpenAI Agents SDK"))


def test_the_section_has_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_runs_as_pasted(code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

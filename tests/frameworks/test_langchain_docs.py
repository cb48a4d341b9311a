"""The LangChain examples in docs/frameworks.md and README.md run as pasted, offline, in a fresh
temporary directory."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain.agents.middleware")

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def section(path: Path, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = len(heading.split(" ", 1)[0])
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = lines.index(heading + "\n")
    fenced = False
    for end in range(start + 1, len(lines)):
        fenced ^= lines[end].startswith("```")
        marks = len(lines[end]) - len(lines[end].lstrip("#"))
        if not fenced and 0 < marks <= level and lines[end][marks] == " ":
            return "".join(lines[start:end])
    return "".join(lines[start:])


EXAMPLES = [
    (name, index, code)
    for name, heading in (
        ("docs/frameworks.md", "## LangChain and LangGraph"),
        ("README.md", "### LangChain / LangGraph"),
    )
    for index, code in enumerate(BLOCK.findall(section(ROOT / name, heading)))
]


def test_every_section_has_an_example():
    assert {name for name, _, _ in EXAMPLES} == {"docs/frameworks.md", "README.md"}


@pytest.mark.parametrize(("name", "index", "code"), EXAMPLES, ids=lambda v: str(v)[:24])
def test_example_runs_as_pasted(name, index, code, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{name} example {index}:\n{done.stderr}"

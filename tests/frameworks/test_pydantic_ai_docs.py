"""The pydantic-ai examples in docs/frameworks.md and README.md run as pasted, offline."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def section(path: Path, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    text = path.read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    found = re.search(rf"\n#{{1,{len(level)}}} ", text[start + 1 :])
    return text[start : start + 1 + found.start()] if found else text[start:]


BLOCKS = [
    (name, block)
    for name, path, heading in [
        ("docs", ROOT / "docs" / "frameworks.md", "## pydantic-ai"),
        ("readme", ROOT / "README.md", "### pydantic-ai"),
    ]
    for block in re.findall(r"```python\n(.*?)```", section(path, heading), re.S)
]


def test_each_section_has_an_example():
    assert {name for name, _ in BLOCKS} == {"docs", "readme"}


@pytest.mark.parametrize(
    "block", [b for _, b in BLOCKS], ids=[f"{n}-{i}" for i, (n, _) in enumerate(BLOCKS)]
)
def test_example_runs_as_pasted(block, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()

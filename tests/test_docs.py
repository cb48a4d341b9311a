"""Every ```python block in README.md, docs/ and the examples' READMEs runs as pasted.

Each block runs in a fresh temporary directory (outside the checkout, so the installed
``guardkit`` is what it imports), offline, in its own interpreter: a block that defines pytest
tests (``def test_``) is run by pytest, with guardkit's plugin loaded as an installed plugin is;
any other block by ``python``. A block that imports crewai is marked ``crewai``: crewai cannot be
installed beside the dev extras, so it runs in the crewai venv (``make test-crewai``) and is
skipped where crewai is missing. Blocks in docs/rules.md are the code the scanner reads (each
rule's examples, run through the scanner by tests/static): they are compiled, not run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
_FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_COMPILED_ONLY = {"docs/rules.md"}
_CREWAI = re.compile(r"^(from|import) crewai\b", re.MULTILINE)


def _documents() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found += sorted((ROOT / "examples").glob("*/README.md"))
    return found


def _blocks() -> list[tuple[str, int, str]]:
    out = []
    for path in _documents():
        text = path.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            out.append((path.relative_to(ROOT).as_posix(), line, match.group(1)))
    return out


BLOCKS = _blocks()


def _param(document: str, line: int, code: str) -> Any:
    marks = [pytest.mark.crewai] if _CREWAI.search(code) else []
    return pytest.param(document, line, code, id=f"{document}:{line}", marks=marks)


@pytest.mark.parametrize(("document", "line", "code"), [_param(*block) for block in BLOCKS])
def test_snippet_runs_as_pasted(document: str, line: int, code: str, tmp_path: Path) -> None:
    if (
        _CREWAI.search(code)
        and not os.environ.get("GUARDKIT_TEST_CREWAI")
        and importlib.util.find_spec("crewai") is None
    ):
        pytest.skip("crewai runs in its own venv: make test-crewai")
    if document in _COMPILED_ONLY:
        compile(code, f"{document}:{line}", "exec")
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUARDKIT_", "OTEL_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if "def test_" in code:
        script = tmp_path / "test_snippet.py"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            str(script),
        ]
    else:
        script = tmp_path / "snippet.py"
        command = [sys.executable, str(script)]
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, (
        f"{document}:{line} failed (exit {done.returncode})\n{done.stdout[-3000:]}\n"
        f"{done.stderr[-3000:]}"
    )


def test_every_document_is_found() -> None:
    assert any(d == "README.md" for d, _, _ in BLOCKS)

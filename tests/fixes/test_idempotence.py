"""fix ∘ fix == fix, on every fix fixture and every rule example, and every output compiles.

Projects (every folder of ``tests/fixes/data`` and ``tests/static/data``) are fixed as
projects, twice, through ``fix_paths`` (what ``guardkit fix --write`` runs); each rule example
is fixed as a module of its own. An existing gate, guardkit's or an integration's, is never
wrapped again; a gate around a retry loop covers whichever branch of it calls a provider.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from guardkit.codemods.config import Config
from guardkit.codemods.fixer import fix_paths, fix_source
from guardkit.codemods.rules import RULES

HERE = Path(__file__).parent
#: every fixture project of the fix and scan tests
PROJECTS = sorted(
    p
    for data in (HERE / "data", HERE.parent / "static" / "data")
    for p in data.iterdir()
    if p.is_dir()
)
EXAMPLES = [
    pytest.param(textwrap.dedent(example.code), id=f"{rule.ID}-{n}")
    for rule in RULES
    for n, example in enumerate((*rule.VALID, *rule.INVALID))
]


def _sources(root: Path) -> dict[Path, str]:
    return {p: p.read_text() for p in sorted(root.rglob("*.py"))}


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_a_second_fix_of_a_project_changes_nothing(project: Path, tmp_path: Path) -> None:
    root = tmp_path / project.name
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("fixed"))
    files = [str(p) for p in sorted(root.rglob("*.py"))]
    config = Config()
    first = fix_paths(files, config, jobs=1, write=True)
    assert [r.error for r in first if r.error] == []
    once = _sources(root)
    for path, code in once.items():
        compile(code, str(path), "exec")
    second = fix_paths(files, config, jobs=1, write=True)
    assert [r.path for r in second if r.changed] == []
    assert _sources(root) == once


@pytest.mark.parametrize("code", EXAMPLES)
def test_a_second_fix_of_a_rule_example_changes_nothing(code: str) -> None:
    once = fix_source(code, "example.py")
    assert once.error is None
    compile(once.after, "example.py", "exec")
    twice = fix_source(once.after, "example.py")
    assert twice.error is None
    assert twice.after == once.after

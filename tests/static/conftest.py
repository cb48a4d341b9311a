"""Shared fixtures for the static-pass tests."""

from __future__ import annotations

from pathlib import Path

import pytest

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

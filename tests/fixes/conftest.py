"""Shared fixtures for the codemod tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def agent_repo(tmp_path: Path) -> Path:
    """A fresh copy of the realistic fixture repository."""
    target = tmp_path / "agent_repo"
    shutil.copytree(DATA / "agent_repo", target)
    return target

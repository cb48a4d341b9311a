"""Importing ``guardkit.plugins.crewai`` without crewai names the extra (runs in every venv)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.crewai  # also run by make test-crewai


def test_importing_without_the_extra_names_it() -> None:
    code = "import sys; sys.modules['crewai'] = None\nimport guardkit.plugins.crewai\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "pip install 'guardkit[crewai]'" in done.stderr

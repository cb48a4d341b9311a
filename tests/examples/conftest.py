"""Load the example agents (``examples/<name>/agent.py``, not installed) as modules for tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(example: str, name: str) -> ModuleType:
    """Import ``examples/<example>/agent.py`` as ``name``; its folder goes on ``sys.path``."""
    if name in sys.modules:
        return sys.modules[name]
    folder = EXAMPLES / example
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, folder / "agent.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def payments() -> ModuleType:
    return load("deepseek-payments-agent", "payments_agent")


@pytest.fixture(scope="session")
def ops() -> ModuleType:
    return load("guarded-agent", "ops_agent")

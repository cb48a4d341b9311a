"""Load the example agents (``examples/<name>/agent.py``, not installed) as modules for tests.

The fake provider APIs of ``tests/adapters/fake_apis.py`` are served here too, so the examples
can also run over the real SDKs.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(path: Path, name: str, *, on_path: bool = True) -> ModuleType:
    """Import the file at ``path`` as module ``name`` (its folder on ``sys.path`` if asked)."""
    if name in sys.modules:
        return sys.modules[name]
    if on_path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def payments() -> ModuleType:
    return load(EXAMPLES / "deepseek-payments-agent" / "agent.py", "payments_agent")


@pytest.fixture(scope="session")
def ops() -> ModuleType:
    return load(EXAMPLES / "guarded-agent" / "agent.py", "ops_agent")


def _fakes() -> ModuleType:
    return load(
        Path(__file__).parents[1] / "adapters" / "fake_apis.py",
        "guardkit_tests_fake_apis",
        on_path=False,
    )


@pytest.fixture
def fake_anthropic() -> Iterator[Any]:
    api = _fakes().FakeAnthropic()
    yield api
    api.close()


@pytest.fixture
def fake_deepseek() -> Iterator[Any]:
    api = _fakes().FakeDeepSeek()
    yield api
    api.close()

"""Fixtures serving the fake provider APIs of ``fake_apis.py`` on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def load_fakes() -> ModuleType:
    """``fake_apis.py`` as a module (the tests folder is not a package)."""
    name = "guardkit_tests_fake_apis"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("fake_apis.py")
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fakes = load_fakes()


def _serve(factory: Callable[[], Any]) -> Iterator[Any]:
    api = factory()
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def fake_anthropic() -> Iterator[Any]:
    yield from _serve(fakes.FakeAnthropic)


@pytest.fixture
def fake_deepseek() -> Iterator[Any]:
    yield from _serve(fakes.FakeDeepSeek)

"""pytester and a small project under test: two guarded tools and one ungated tool."""

from __future__ import annotations

import sys
import textwrap
from typing import Any

# guardkit.codemods pulls in libcst.codemod (~0.6 s); in-process runs drop modules first imported
# inside them, so import the static pass once here and let every inner run reuse it.
import guardkit.codemods.runner  # noqa: F401
import pytest


def pytest_configure(config: pytest.Config) -> None:
    # ``pytest_plugins`` is only allowed in the rootdir's conftest; load pytester from here.
    config.pluginmanager.import_plugin("pytester")


AGENTS_STUB = """
def function_tool(fn):
    return fn
"""

APP = """
import guardkit
from agents import function_tool


@function_tool
@guardkit.tool()
def search(query: str) -> str:
    return f"results for {query}"


@function_tool
@guardkit.tool()
def lookup(key: str) -> str:
    return key.upper()


@function_tool
def delete_file(path: str) -> str:
    return f"deleted {path}"
"""

TESTS = """
import pytest
import app


def test_search(guard_agent, guard_log):
    assert app.search("x") == "results for x"
    guard_log.assert_allowed("search")


@pytest.mark.guard_policy({"budget": 10, "tools": {"search": {"cost": 1}}})
def test_lookup_denied(guard_agent, guard_log):
    with pytest.raises(Exception):
        app.lookup("k")
    guard_log.assert_denied("lookup", code="tool_not_allowed")
"""

DYNAMIC = """
import app


def test_dynamic_delete(guard_agent):
    tool = getattr(app, "delete" + "_file")
    assert tool("/tmp/x") == "deleted /tmp/x"
"""


@pytest.fixture(autouse=True)
def _forget_the_real_agents_sdk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    # The inner runs are in-process: once another test imported the installed OpenAI Agents SDK
    # (package ``agents``), the projects' own ``agents.py`` stand-ins would lose to the cached one.
    if "pytester" not in request.fixturenames:
        return
    for name in [m for m in sys.modules if m == "agents" or m.startswith("agents.")]:
        monkeypatch.delitem(sys.modules, name)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The fixture project: ``agents.py`` stands in for the OpenAI Agents SDK's decorator."""
    pytester.makepyfile(agents=AGENTS_STUB, app=APP, test_app=TESTS)
    return pytester


def _run(pytester: pytest.Pytester, *args: str, **kwargs: Any) -> pytest.RunResult:
    """The one way these tests run pytest: in order, without the cache, in-process."""
    return pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", *args, **kwargs)


@pytest.fixture
def run() -> Any:
    """``run(pytester, *args)``: the shared way to start the inner pytest."""
    return _run


@pytest.fixture
def dynamic_test() -> str:
    """A test that reaches the ungated tool by name at run time."""
    return DYNAMIC


@pytest.fixture
def dedent() -> Any:
    return textwrap.dedent

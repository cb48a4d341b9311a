"""guardkit's pytest plugin (``pytest11`` entry point ``guardkit``): fixtures and guard coverage.

Loaded in every pytest run, so it costs nothing unless asked: importing it imports neither the
guard nor the static pass, the fixtures import guardkit when a test requests them, and the hooks
that watch tests (``guard_session``) are registered only when an option, an ini key or a
``guard_strict`` marker on a collected test asks for coverage or strict mode. See
``docs/testing.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .guard_settings import Settings, add_options, read_settings, strict_marker

if TYPE_CHECKING:
    from guardkit.local import Guard, LocalAgent
    from guardkit.testing import ScriptedModel

    from .guard_fixtures import Approver, GuardLog, PolicyChoice

__all__ = [
    "approver",
    "guard",
    "guard_agent",
    "guard_log",
    "scripted_model",
]

_SETTINGS = pytest.StashKey[Settings]()
_RECORDING = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "guard_policy(policy=None, /, *, agent_id='agent', **fields): the policy of the guard "
        "fixture's agent (a dict, a JSON/TOML path relative to the test file, or policy fields)",
    )
    config.addinivalue_line(
        "markers",
        "guard_strict(enabled=True): fail this test if a tool runs without the guard "
        "(guard_strict(False) exempts it from --guard-strict)",
    )
    config.stash[_SETTINGS] = read_settings(config)
    config.stash[_RECORDING] = False


# -- coverage and strict mode: the hooks that do the work are registered only when needed ----


def _watch(config: pytest.Config, *, report: bool, record: bool) -> None:
    from .guard_session import Recording, Reporting, discover

    settings = config.stash[_SETTINGS]
    reporting = None
    if report:
        reporting = Reporting(settings, discover(settings, config.rootpath), config.rootpath)
        config.pluginmanager.register(reporting, "guardkit-reporting")
    if record:
        tools = reporting.tools if reporting else Recording.tools_for(config, settings)
        recording = Recording(config, settings, tools)
        config.pluginmanager.register(recording, "guardkit-recording")
        config.stash[_RECORDING] = True
        if reporting:
            reporting.share(recording)


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    settings = config.stash[_SETTINGS]
    if settings.active:
        # Tests run in a plain session or on pytest-xdist workers, never on the controller (which
        # has xdist's "dsession" plugin); the report is made once, by the controller if any.
        worker = hasattr(config, "workerinput")
        controller = config.pluginmanager.has_plugin("dsession")
        _watch(config, report=settings.reports and not worker, record=not controller)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.stash[_RECORDING] and any(strict_marker(item) for item in items):
        _watch(config, report=False, record=True)


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def _guard_policy(request: pytest.FixtureRequest) -> PolicyChoice:
    from .guard_fixtures import resolve_policy

    marker = request.node.get_closest_marker("guard_policy")
    config = request.config
    return resolve_policy(
        marker.args if marker else None,
        marker.kwargs if marker else None,
        config.getoption("guard_policy"),
        config.getini("guard_policy") or None,
        test_dir=request.path.parent,
        invocation_dir=config.invocation_params.dir,
        root_dir=config.rootpath,
    )


@pytest.fixture
def guard(request: pytest.FixtureRequest, _guard_policy: PolicyChoice) -> Iterator[Guard]:
    """An in-memory ``Guard`` with one agent whose policy comes from the marker, option or ini.

    An approval no ``approver`` rule gives fails the test after ``guard_approval_wait`` seconds.
    """
    from .guard_approvals import TestGuard

    wait = request.config.stash[_SETTINGS].approval_wait
    with TestGuard(":memory:", approval_wait=wait) as g:
        g.create_agent(_guard_policy.agent_id, _guard_policy.policy)
        yield g


@pytest.fixture
def guard_agent(guard: Guard, _guard_policy: PolicyChoice) -> Iterator[LocalAgent]:
    """The ``guard`` fixture's agent, also the current agent of ``@guardkit.tool()`` tools."""
    from guardkit import use_agent

    agent = guard.agent(_guard_policy.agent_id)
    with use_agent(agent):
        yield agent


@pytest.fixture
def guard_log(guard: Guard) -> GuardLog:
    """The decisions the ``guard`` fixture made during the test, with assertion helpers."""
    from .guard_fixtures import GuardLog

    return GuardLog(guard, lambda: [a["agent_id"] for a in guard.agents()])


@pytest.fixture
def scripted_model() -> Callable[..., ScriptedModel]:
    """Fake models replaying turns: ``scripted_model([[("search", {"q": "x"})], "done"])``."""
    from guardkit.testing import ScriptedModel

    def make(turns: Any, *, usage: int | None = None) -> ScriptedModel:
        return ScriptedModel(turns, usage=usage)

    return make


@pytest.fixture
def approver(guard: Guard) -> Iterator[Approver]:
    """Rules that approve or reject the ``guard`` fixture's pending actions during the test."""
    from .guard_approvals import TestGuard
    from .guard_fixtures import Approver

    decider = Approver(guard)
    if isinstance(guard, TestGuard):  # the guard fixture's (a test may override the fixture)
        guard.approvers.append(decider)
    yield decider
    decider.close()

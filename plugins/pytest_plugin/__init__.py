"""guardkit's pytest plugin (``pytest11`` entry point ``guardkit``): fixtures and guard coverage.

Loaded in every pytest run, so it does nothing unless asked: the fixtures import guardkit when
a test requests them, and coverage / strict mode start only with an option, an ini key or a
``guard_strict`` marker. The hooks are thin; the work is in ``guard_fixtures`` and
``guard_coverage``. See ``docs/testing.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import guard_coverage as coverage
from . import guard_fixtures as fixtures

if TYPE_CHECKING:
    from guardkit.local import Guard, LocalAgent
    from guardkit.testing import ScriptedModel

__all__ = [
    "approver",
    "guard",
    "guard_agent",
    "guard_log",
    "scripted_model",
]


@dataclass(slots=True, kw_only=True)
class Settings:
    """Options and ini keys, resolved (the command line wins over the ini file)."""

    coverage: bool
    fail_under: float | None
    strict: bool
    sources: list[Path]
    report_json: Path | None

    @property
    def active(self) -> bool:
        return self.coverage or self.strict or self.fail_under is not None or bool(self.report_json)


@dataclass(slots=True)
class _Session:
    settings: Settings
    tools: list[coverage.ToolEntry]
    recorder: coverage.Recorder
    failure: str | None = None
    lines: list[str] = field(default_factory=list)


_SESSION = pytest.StashKey["_Session | None"]()
_SETTINGS = pytest.StashKey[Settings]()


# -- options ---------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("guardkit", "guardkit: guard fixtures and guard coverage")
    group.addoption(
        "--guard-policy",
        metavar="PATH",
        help="policy file (JSON or TOML) for the guard fixture; a guard_policy marker wins",
    )
    group.addoption(
        "--guard-coverage",
        action="store_true",
        default=None,
        help="print a table of every tool in the sources: guarded, called, denial path",
    )
    group.addoption(
        "--guard-fail-under",
        metavar="N",
        type=float,
        help="fail the session when fewer than N percent of the tools are guarded",
    )
    group.addoption(
        "--guard-strict",
        action="store_true",
        default=None,
        help="fail a test during which a tool ran without going through the guard",
    )
    group.addoption(
        "--no-guard-strict",
        dest="guard_strict",
        action="store_false",
        help="turn off strict mode set by the guard_strict ini key",
    )
    group.addoption(
        "--guard-source",
        metavar="PATH",
        action="append",
        help="where to look for tools (repeatable; default: guard_coverage_paths or rootdir)",
    )
    group.addoption(
        "--guard-report-json",
        metavar="PATH",
        help="write the guard coverage report as JSON (for CI dashboards)",
    )
    parser.addini("guard_policy", "policy file for the guard fixture (relative to rootdir)")
    parser.addini("guard_coverage", "print the guard coverage table", type="bool", default=False)
    parser.addini("guard_fail_under", "fail when fewer than N percent of tools are guarded")
    parser.addini("guard_strict", "fail tests that run unguarded tools", type="bool", default=False)
    parser.addini("guard_coverage_paths", "where to look for tools", type="paths", default=[])
    parser.addini("guard_report_json", "write the guard coverage report as JSON to this path")


def _settings(config: pytest.Config) -> Settings:
    fail_under = config.getoption("guard_fail_under")
    ini_fail = str(config.getini("guard_fail_under") or "").strip()
    if fail_under is None and ini_fail:
        try:
            fail_under = float(ini_fail)
        except ValueError:
            raise pytest.UsageError(
                f"guard_fail_under must be a number, got {ini_fail!r}"
            ) from None
    strict = config.getoption("guard_strict")
    sources = [config.invocation_params.dir / p for p in config.getoption("guard_source") or []]
    report = config.getoption("guard_report_json") or config.getini("guard_report_json")
    return Settings(
        coverage=bool(config.getoption("guard_coverage") or config.getini("guard_coverage")),
        fail_under=fail_under,
        strict=bool(config.getini("guard_strict")) if strict is None else bool(strict),
        sources=sources or list(config.getini("guard_coverage_paths")) or [config.rootpath],
        report_json=config.invocation_params.dir / report if report else None,
    )


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
    config.stash[_SETTINGS] = _settings(config)
    config.stash[_SESSION] = None


# -- coverage and strict mode ----------------------------------------------------------------


def _start(config: pytest.Config) -> _Session:
    session = config.stash[_SESSION]
    if session is None:
        settings = config.stash[_SETTINGS]
        try:
            tools = coverage.discover(settings.sources, config.rootpath)
        except ValueError as exc:
            raise pytest.UsageError(f"guard coverage: {exc}") from None
        session = _Session(settings, tools, coverage.Recorder(tools, config.rootpath))
        config.stash[_SESSION] = session
    session.recorder.install()
    return session


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.stash[_SETTINGS].active:
        _start(session.config)


def _strict_for(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("guard_strict")
    if marker is not None:
        return bool(marker.args[0]) if marker.args else bool(marker.kwargs.get("enabled", True))
    return item.config.stash[_SETTINGS].strict


def pytest_runtest_setup(item: pytest.Item) -> None:
    session = item.config.stash[_SESSION]
    if session is None and _strict_for(item):
        session = _start(item.config)
    if session is not None:
        session.recorder.start_test(item.nodeid)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    result = yield
    session = item.config.stash[_SESSION]
    if session is not None:
        violations = session.recorder.take_violations(item.nodeid)
        if violations and _strict_for(item):
            lines = "\n".join(v.describe() for v in violations)
            pytest.fail(f"guard strict mode:\n{lines}", pytrace=False)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash[_SESSION]
    if state is None:
        return
    state.recorder.uninstall()
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller reports
        workeroutput["guardkit"] = {
            "data": state.recorder.data.to_dict(),
            "violations": [[v.test, v.tool, v.path, v.line] for v in state.recorder.violations],
        }
        return
    _finish(session, state)


def _finish(session: pytest.Session, state: _Session) -> None:
    settings = state.settings
    report = coverage.CoverageReport.build(
        state.tools, state.recorder.data, state.recorder.violations
    )
    if settings.report_json is not None:
        settings.report_json.parent.mkdir(parents=True, exist_ok=True)
        settings.report_json.write_text(report.to_json(settings.fail_under), encoding="utf-8")
    if settings.coverage or settings.fail_under is not None:
        state.lines = report.lines()
    if settings.fail_under is not None and report.percent < settings.fail_under:
        state.failure = (
            f"FAIL Required guard coverage of {settings.fail_under:g}% not reached. "
            f"Total guarded: {report.percent:.2f}%"
        )
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: merge what a worker recorded."""
    state = node.config.stash[_SESSION]
    output = getattr(node, "workeroutput", {}).get("guardkit")
    if state is None or output is None:
        return
    state.recorder.data.merge(output["data"])
    state.recorder.violations.extend(coverage.Violation(*v) for v in output["violations"])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash[_SESSION]
    if state is None or not (state.lines or state.failure):
        return
    if state.lines:
        terminalreporter.write_sep("=", "guard coverage")
        for line in state.lines:
            terminalreporter.write_line(line)
    if state.failure:
        terminalreporter.write_line(state.failure, red=True, bold=True)


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def _guard_policy(request: pytest.FixtureRequest) -> fixtures.PolicyChoice:
    marker = request.node.get_closest_marker("guard_policy")
    config = request.config
    return fixtures.resolve_policy(
        marker.args if marker else None,
        marker.kwargs if marker else None,
        config.getoption("guard_policy"),
        config.getini("guard_policy") or None,
        test_dir=request.path.parent,
        invocation_dir=config.invocation_params.dir,
        root_dir=config.rootpath,
    )


@pytest.fixture
def guard(_guard_policy: fixtures.PolicyChoice) -> Iterator[Guard]:
    """An in-memory ``Guard`` with one agent whose policy comes from the marker, option or ini."""
    from guardkit.local import Guard

    with Guard(":memory:") as g:
        g.create_agent(_guard_policy.agent_id, _guard_policy.policy)
        yield g


@pytest.fixture
def guard_agent(guard: Guard, _guard_policy: fixtures.PolicyChoice) -> Iterator[LocalAgent]:
    """The ``guard`` fixture's agent, also the current agent of ``@guardkit.tool()`` tools."""
    from guardkit import use_agent

    agent = guard.agent(_guard_policy.agent_id)
    with use_agent(agent):
        yield agent


@pytest.fixture
def guard_log(guard: Guard) -> fixtures.GuardLog:
    """The decisions the ``guard`` fixture made during the test, with assertion helpers."""
    return fixtures.GuardLog(guard, lambda: [a["agent_id"] for a in guard.agents()])


@pytest.fixture
def scripted_model() -> Callable[..., ScriptedModel]:
    """Fake models replaying turns: ``scripted_model([[("search", {"q": "x"})], "done"])``."""
    from guardkit.testing import ScriptedModel

    def make(turns: Any, *, usage: int | None = None) -> ScriptedModel:
        return ScriptedModel(turns, usage=usage)

    return make


@pytest.fixture
def approver(guard: Guard) -> Iterator[fixtures.Approver]:
    """Rules that approve or reject the ``guard`` fixture's pending actions during the test."""
    decider = fixtures.Approver(guard)
    yield decider
    decider.close()

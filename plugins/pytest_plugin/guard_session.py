"""The hooks of a session that watches tools, registered only when something asks for it.

Two plugin objects, so a session pays only for what it does:

* ``Recording`` runs where tests run (a plain session, or each pytest-xdist worker): the
  profile hook around each test's setup, call and teardown, and strict mode, which fails the
  offending test there. A worker sends what it recorded to the controller in ``workeroutput``.
* ``Reporting`` runs where the session is reported (a plain session, or the xdist controller):
  it finds the tools once (a controller hands them to its workers in ``workerinput``), merges
  the workers' records as each one finishes (``pytest_testnodedown``), then prints the table,
  writes the JSON and applies ``--guard-fail-under`` once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .guard_coverage import CoverageReport, RunCounts, ToolDict, ToolEntry, Violation, WorkerOutput
from .guard_discovery import project_tools
from .guard_recorder import Recorder
from .guard_settings import Settings, strict_marker

__all__ = ["Recording", "Reporting", "discover"]

#: The keys under which tools travel to workers and records come back.
KEY = "guardkit"


def _shown(path: Path | str, root: Path) -> str:
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def discover(settings: Settings, root: Path) -> list[ToolEntry]:
    """The tools in ``settings.sources``, paths shown relative to ``root``."""
    try:
        found = project_tools(settings.sources, root=root)
    except ValueError as exc:
        raise pytest.UsageError(f"guard coverage: {exc}") from None
    return [
        ToolEntry(
            name=tool.name,
            path=_shown(tool.path, root),
            line=tool.line,
            how=tool.how,
            guarded=tool.gated,
            first_line=tool.def_line,
            aliases=tool.keys,
        )
        for tool in found
    ]


class Recording:
    """Watches each test where tests run; strict mode fails a test that ran a tool unguarded."""

    def __init__(self, config: pytest.Config, settings: Settings, tools: Sequence[ToolEntry]):
        self.settings = settings
        self.recorder = Recorder(tools, config.rootpath)

    @classmethod
    def tools_for(cls, config: pytest.Config, settings: Settings) -> list[ToolEntry]:
        """On an xdist worker, the controller's tools (found once); else found here."""
        workerinput = getattr(config, "workerinput", {})
        sent: list[ToolDict] | None = workerinput.get(KEY)
        if sent is not None:
            return [ToolEntry.from_dict(t) for t in sent]
        return discover(settings, config.rootpath)

    def _strict(self, item: pytest.Item) -> bool:
        marked = strict_marker(item)
        return self.settings.strict if marked is None else marked

    # trylast: the innermost wrappers, so the hook watches the test and its fixtures, not the
    # other plugins' wrappers around them.
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        self.recorder.start_test(item.nodeid)
        with self.recorder.installed():
            return (yield)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        with self.recorder.installed():
            result = yield
        violations = self.recorder.take_violations(item.nodeid)
        if violations and self._strict(item):
            lines = "\n".join(v.describe() for v in violations)
            pytest.fail(f"guard strict mode:\n{lines}", pytrace=False)
        return result

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        with self.recorder.installed():
            return (yield)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            output: WorkerOutput = {
                "counts": self.recorder.counts.to_dict(),
                "violations": [(v.test, v.tool, v.path, v.line) for v in self.recorder.violations],
            }
            workeroutput[KEY] = output


class Reporting:
    """Reports the session once: the table, the JSON report, ``--guard-fail-under``."""

    def __init__(self, settings: Settings, tools: Sequence[ToolEntry], root: Path) -> None:
        self.settings = settings
        self.tools = list(tools)
        self.sources = [
            f"the rootdir ({root})" if Path(p).resolve() == root.resolve() else _shown(p, root)
            for p in settings.sources
        ]
        self.counts = RunCounts()
        self.violations: list[Violation] = []
        self.lines: list[str] = []
        self.failure: str | None = None

    def share(self, recording: Recording) -> None:
        """Report what ``recording`` records (a session without xdist)."""
        self.counts = recording.recorder.counts
        self.violations = recording.recorder.violations

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: hand the tools to a worker, so it need not find them again."""
        node.workerinput[KEY] = [t.to_dict() for t in self.tools]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: merge what a worker recorded."""
        output: WorkerOutput | None = getattr(node, "workeroutput", {}).get(KEY)
        if output is not None:
            self.counts.merge(output["counts"])
            self.violations.extend(Violation(*v) for v in output["violations"])

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        settings = self.settings
        report = CoverageReport.build(self.tools, self.counts, self.violations, self.sources)
        if settings.report_json is not None:
            settings.report_json.parent.mkdir(parents=True, exist_ok=True)
            settings.report_json.write_text(report.to_json(settings.fail_under), encoding="utf-8")
        if settings.coverage or settings.fail_under is not None:
            self.lines = report.lines()
        if settings.fail_under is not None:
            self.failure = report.shortfall(settings.fail_under, settings.allow_no_tools)
            if self.failure and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.lines:
            terminalreporter.write_sep("=", "guard coverage")
            for line in self.lines:
                terminalreporter.write_line(line)
        if self.failure:
            terminalreporter.write_line(self.failure, red=True, bold=True)

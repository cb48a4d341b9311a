"""The plugin's options and ini keys, and ``Settings``: them resolved (the command line wins)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["Settings", "add_options", "read_settings", "strict_marker"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Options and ini keys, resolved (the command line wins over the ini file)."""

    coverage: bool
    fail_under: float | None
    strict: bool
    sources: list[Path]
    report_json: Path | None
    allow_no_tools: bool
    #: Seconds a call waits for an approval no ``approver`` rule gives (then the test fails).
    approval_wait: float

    @property
    def reports(self) -> bool:
        """Whether the session ends with a report (table, threshold or JSON)."""
        return self.coverage or self.fail_under is not None or self.report_json is not None

    @property
    def active(self) -> bool:
        """Whether tools are discovered and watched from the start of the session."""
        return self.reports or self.strict


def add_options(parser: pytest.Parser) -> None:
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
        "--guard-allow-no-tools",
        action="store_true",
        default=None,
        help="let --guard-fail-under pass when the sources hold no tools at all",
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
    group.addoption(
        "--guard-approval-wait",
        metavar="SECONDS",
        type=float,
        help="how long a guarded call waits for an approval no approver rule gives (default 0)",
    )
    parser.addini("guard_policy", "policy file for the guard fixture (relative to rootdir)")
    parser.addini("guard_coverage", "print the guard coverage table", type="bool", default=False)
    parser.addini("guard_fail_under", "fail when fewer than N percent of tools are guarded")
    parser.addini(
        "guard_allow_no_tools", "pass guard_fail_under when no tool is found", type="bool"
    )
    parser.addini("guard_strict", "fail tests that run unguarded tools", type="bool", default=False)
    parser.addini("guard_coverage_paths", "where to look for tools", type="paths", default=[])
    parser.addini(
        "guard_approval_wait", "seconds to wait for an approval no approver rule gives (default 0)"
    )
    parser.addini("guard_report_json", "write the guard coverage report as JSON to this path")


def _fail_under(config: pytest.Config) -> float | None:
    value: float | None = config.getoption("guard_fail_under")
    ini = str(config.getini("guard_fail_under") or "").strip()
    if value is None and ini:
        try:
            value = float(ini)
        except ValueError:
            raise pytest.UsageError(f"guard_fail_under must be a number, got {ini!r}") from None
    return value


def _approval_wait(config: pytest.Config) -> float:
    value: float | None = config.getoption("guard_approval_wait")
    ini = str(config.getini("guard_approval_wait") or "").strip()
    if value is None and ini:
        try:
            value = float(ini)
        except ValueError:
            raise pytest.UsageError(f"guard_approval_wait must be seconds, got {ini!r}") from None
    if value is not None and value < 0:
        raise pytest.UsageError(f"guard_approval_wait must be >= 0 seconds, got {value:g}")
    return value or 0.0


def read_settings(config: pytest.Config) -> Settings:
    strict = config.getoption("guard_strict")
    allow = config.getoption("guard_allow_no_tools")
    sources = [config.invocation_params.dir / p for p in config.getoption("guard_source") or []]
    report = config.getoption("guard_report_json") or config.getini("guard_report_json")
    return Settings(
        coverage=bool(config.getoption("guard_coverage") or config.getini("guard_coverage")),
        fail_under=_fail_under(config),
        strict=bool(config.getini("guard_strict")) if strict is None else bool(strict),
        sources=sources or list(config.getini("guard_coverage_paths")) or [config.rootpath],
        report_json=config.invocation_params.dir / report if report else None,
        allow_no_tools=bool(allow or config.getini("guard_allow_no_tools")),
        approval_wait=_approval_wait(config),
    )


def strict_marker(item: pytest.Item) -> bool | None:
    """What a ``guard_strict`` marker on the test (or its class or module) says, if any."""
    marker = item.get_closest_marker("guard_strict")
    if marker is None:
        return None
    return bool(marker.args[0]) if marker.args else bool(marker.kwargs.get("enabled", True))

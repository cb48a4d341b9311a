"""The plugin's helpers called directly: policy resolution, GuardLog, Approver, the report."""

from __future__ import annotations

import json
import time

import pytest
from guardkit.plugins.pytest_plugin.guard_coverage import (
    CoverageReport,
    RunCounts,
    ToolEntry,
    Violation,
)
from guardkit.plugins.pytest_plugin.guard_fixtures import (
    PERMISSIVE_POLICY,
    Approver,
    GuardLog,
    resolve_policy,
)

from guardkit import Guard


def _resolve(tmp_path, args=None, kwargs=None, option=None, ini=None):
    return resolve_policy(
        args, kwargs, option, ini, test_dir=tmp_path, invocation_dir=tmp_path, root_dir=tmp_path
    )


def test_marker_keywords_merge_over_the_positional_policy(tmp_path):
    base = {"budget": 5, "tools": {"a": {"cost": 1}}}
    choice = _resolve(tmp_path, (base,), {"budget": 9, "agent_id": "clerk"})
    assert choice.policy == {"budget": 9, "tools": {"a": {"cost": 1}}}
    assert (choice.agent_id, choice.source) == ("clerk", "marker")


def test_marker_with_only_an_agent_id_keeps_the_permissive_default(tmp_path):
    choice = _resolve(tmp_path, (), {"agent_id": "x"})
    assert choice.policy == PERMISSIVE_POLICY
    assert choice.agent_id == "x"


def test_marker_path_is_relative_to_the_test_file(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps({"budget": 7, "tools": {}}))
    choice = _resolve(tmp_path, ("p.json",), {}, option="other.json")
    assert choice.policy["budget"] == 7


def test_defaults_when_nothing_names_a_policy(tmp_path):
    choice = _resolve(tmp_path)
    assert choice.policy == PERMISSIVE_POLICY
    assert choice.policy is not PERMISSIVE_POLICY
    assert choice.source == "default"


@pytest.fixture
def guard():
    with Guard(":memory:") as g:
        g.create_agent(
            "a", {"budget": 10, "tools": {"pay": {"cost": 1, "requires_approval": True}}}
        )
        g.create_agent("b", {"budget": 10, "tools": {"search": {"cost": 1}}})
        yield g


def test_guard_log_reads_every_agent_in_order(guard):
    log = GuardLog(guard, lambda: ["a", "b"])
    pending = guard.agent("a").request("pay", {})
    guard.reject("a", pending["action_id"], "ann", "no")
    guard.agent("b").request("search", {})
    guard.agent("b").request("rm", {})
    assert [d.line() for d in log.decisions] == [
        "pay: pending_approval",
        "pay: denied (rejected)",
        "search: allowed",
        "rm: denied (tool_not_allowed)",
    ]
    assert str(log).splitlines()[0] == "  a act-1 pay: pending_approval"
    log.assert_sequence([d.line() for d in log.decisions])


def test_approver_decides_by_rule_order_and_leaves_the_rest(guard):
    approver = Approver(guard, poll=60)
    try:
        approver.reject("pay", when=lambda action: action["input"].get("big", False))
        approver.approve("pay")
        big = guard.agent("a").request("pay", {"big": True})["action_id"]
        small = guard.agent("a").request("pay", {})["action_id"]
        assert approver.decide_pending() == 2
        assert guard.action("a", big)["status"] == "denied"
        assert guard.action("a", small)["status"] == "allowed"
        assert approver.decide_pending() == 0
    finally:
        approver.close()


def test_approver_thread_wakes_a_waiting_agent(guard):
    approver = Approver(guard, poll=0.005).approve()
    try:
        action_id = guard.agent("a").request("pay", {})["action_id"]
        start = time.monotonic()
        assert guard.agent("a").wait_for_approval(action_id, timeout=5, poll=0.01) == "allowed"
        assert time.monotonic() - start < 5
        assert approver.decided == [("a", action_id, "pay", "approved")]
    finally:
        approver.close()


def test_report_percent_lines_and_json():
    tools = [
        ToolEntry(name="a", path="m.py", line=3, how="decorator", guarded=True, first_line=2),
        ToolEntry(name="b", path="m.py", line=9, how="Tool(...)", guarded=False, aliases=("bee",)),
    ]
    data = RunCounts()
    data.runs["m.py:3:a"] = 2
    data.denials["bee"] = 1
    report = CoverageReport.build(tools, data, [Violation("t::x", "b", "m.py", 9)], ["m.py"])
    assert report.percent == 50.0
    assert report.lines()[-2:] == ["TOTAL 1/2 tools guarded (50.00%)", "ungated: b"]
    rows = {r.tool.name: r for r in report.rows}
    assert (rows["a"].called, rows["a"].denial_exercised) == (True, False)
    assert (rows["b"].called, rows["b"].denial_exercised) == (False, True)
    parsed = json.loads(report.to_json(75))
    assert parsed["violations"] == [{"test": "t::x", "tool": "b", "path": "m.py", "line": 9}]
    assert parsed["fail_under"] == 75


def test_runtime_counts_survive_the_trip_from_a_worker():
    data = RunCounts()
    data.runs["k"] = 1
    data.requests["t"] = 2
    merged = RunCounts()
    merged.merge(json.loads(json.dumps(data.to_dict())))
    merged.merge(data.to_dict())
    assert merged.runs["k"] == 2
    assert merged.requests["t"] == 4


def test_no_tools_is_no_percentage_and_fails_unless_allowed():
    report = CoverageReport.build([], RunCounts(), [], ["src", "lib"])
    assert report.percent is None
    assert report.lines()[0] == "no tools found in src, lib (test modules are skipped)"
    assert "no tools found" in (report.shortfall(0, allow_no_tools=False) or "")
    assert report.shortfall(0, allow_no_tools=True) is None
    assert json.loads(report.to_json(None))["guarded_percent"] is None


def test_a_tool_entry_survives_the_trip_to_a_worker():
    entry = ToolEntry(
        name="T.run",
        path="m.py",
        line=4,
        how="tool class",
        guarded=True,
        first_line=3,
        aliases=("t",),
    )
    assert ToolEntry.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry
    assert entry.names == {"T.run", "run", "T", "t"}

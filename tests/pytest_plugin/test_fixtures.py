"""The fixtures: guard, guard_agent, guard_log, scripted_model, approver; policy precedence."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile

import pytest


def test_guard_fixtures_end_to_end(pytester, run):
    pytester.makepyfile(
        test_it="""
        import guardkit
        import pytest
        from guardkit.loop import run


        @guardkit.tool()
        def search(query: str) -> str:
            return "found " + query


        def test_default_policy_allows_everything(guard, guard_agent, guard_log):
            assert guard.agents()[0]["agent_id"] == "agent"
            assert search("x") == "found x"
            guard_log.assert_allowed("search", times=1)
            guard_log.assert_never_ran("rm")
            guard_log.assert_sequence(["search: allowed"])


        @pytest.mark.guard_policy(budget=10, tools={"llm_turn": {"cost": 1}, "search": {"cost": 1}})
        def test_loop_with_a_scripted_model(guard_agent, guard_log, scripted_model):
            model = scripted_model([[("search", {"query": "q"}), ("rm", {})], "all done"])
            result = run(model, guard_agent, {"search": search.__wrapped__}, [], max_turns=5)
            assert result.outcome == "done"
            assert result.text == "all done"
            guard_log.assert_denied("rm", code="tool_not_allowed")
            guard_log.assert_never_ran("rm")
            guard_log.assert_sequence([
                "llm_turn: allowed",
                "search: allowed",
                "rm: denied (tool_not_allowed)",
                "llm_turn: allowed",
            ])


        PAY = {"pay": {"cost": 5, "requires_approval": True}}


        @pytest.mark.guard_policy({"budget": 50, "tools": PAY}, agent_id="clerk")
        def test_approver_rules(guard, guard_agent, guard_log, approver):
            pay = guardkit.tool("pay", approval_timeout=5, poll=0.01)(lambda amount: f"{amount}")
            approver.reject("pay", when=lambda a: a["input"]["amount"] > 100, reason="too much")
            approver.approve("pay")
            assert pay(amount=20) == "20"
            with pytest.raises(guardkit.ToolDenied):
                pay(amount=500)
            guard_log.assert_pending("pay")
            guard_log.assert_denied("pay", code="rejected")
            assert [d[2:] for d in approver.decided] == [("pay", "approved"), ("pay", "rejected")]
            assert guard_agent.agent_id == "clerk"
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=3)


def test_guard_log_failures_show_the_decisions(pytester, run):
    pytester.makepyfile(
        test_it="""
        def test_denied(guard_agent, guard_log):
            guard_agent.request("search", {})
            guard_log.assert_denied("search", code="tool_not_allowed")

        def test_sequence(guard_agent, guard_log):
            guard_agent.request("search", {})
            guard_agent.request("fetch", {})
            guard_log.assert_sequence(["search: allowed", "rm: allowed"])

        def test_pending(guard_agent, guard_log):
            guard_log.assert_pending("pay")

        def test_times(guard_agent, guard_log):
            guard_agent.request("search", {})
            guard_log.assert_allowed("search", times=2)

        def test_never_ran(guard_agent, guard_log):
            guard_agent.request("search", {})
            guard_log.assert_never_ran("search")
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(
        [
            "E * expected a denial of 'search' with code 'tool_not_allowed';"
            " the guard's decisions were:",
            "E *   agent act-1 search: allowed",
            "E * the guard's decisions differ:",
            "E * --- expected",
            "E * +++ guard log",
            "E *  search: allowed",
            "E * -rm: allowed",
            "E * +fetch: allowed",
            "E * expected 'pay' to wait for approval; the guard's decisions were:",
            "E *   (no decisions)",
            "E * expected 'search' to be allowed 2 time(s), it was allowed 1*",
            "E * expected 'search' never to be allowed to run*",
        ]
    )


_LEVELS = ("marker", "option", "ini")


@pytest.mark.parametrize(
    "present", [c for n in range(4) for c in itertools.combinations(_LEVELS, n)]
)
def test_policy_precedence_marker_over_option_over_ini(pytester, run, present):
    budgets = {"marker": 3, "option": 2, "ini": 1}
    for level in ("option", "ini"):
        pytester.path.joinpath(f"{level}.json").write_text(
            json.dumps({"budget": budgets[level], "tools": {}})
        )
    pytester.path.joinpath("marker.toml").write_text("budget = 3\n[tools]\n")
    marker = '@pytest.mark.guard_policy("marker.toml")\n' if "marker" in present else ""
    winner = next((lv for lv in _LEVELS if lv in present), None)
    expected = budgets[winner] if winner else 1_000_000_000
    pytester.makepyfile(
        test_it=f"import pytest\n\n{marker}def test_it(guard_agent):\n"
        f"    assert guard_agent.status()['budget'] == {expected}\n"
    )
    if "ini" in present:
        pytester.makeini("[pytest]\nguard_policy = ini.json\n")
    args = ["--guard-policy=option.json"] if "option" in present else []
    run(pytester, *args).assert_outcomes(passed=1)


def test_markers_are_registered_for_strict_markers(pytester, run):
    pytester.makepyfile(
        test_it="import pytest\n\n@pytest.mark.guard_policy(budget=1, tools={})\n"
        "@pytest.mark.guard_strict(False)\ndef test_it():\n    pass\n"
    )
    run(pytester, "--strict-markers").assert_outcomes(passed=1)
    result = run(pytester, "--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.guard_policy(policy=None, /, *, agent_id='agent', **fields): *",
            "@pytest.mark.guard_strict(enabled=True): *",
        ]
    )


def test_help_text(pytester, run):
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(
        [
            "guardkit: guard fixtures and guard coverage:",
            "  --guard-policy=PATH   policy file (JSON or TOML) for the guard fixture; a",
            "                        guard_policy marker wins",
            "  --guard-coverage      print a table of every tool in the sources: guarded,",
            "                        called, denial path",
            "  --guard-fail-under=N  fail the session when fewer than N percent of the tools",
            "                        are guarded",
            "  --guard-allow-no-tools",
            "                        let --guard-fail-under pass when the sources hold no",
            "                        tools at all",
            "  --guard-strict        fail a test during which a tool ran without going",
            "                        through the guard",
            "  --no-guard-strict     turn off strict mode set by the guard_strict ini key",
            "  --guard-source=PATH   where to look for tools (repeatable; default:",
            "                        guard_coverage_paths or rootdir)",
            "  --guard-report-json=PATH",
            "                        write the guard coverage report as JSON (for CI",
            "                        dashboards)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "  guard_policy (string):*",
            "  guard_coverage (bool):*",
            "  guard_fail_under (string):*",
            "  guard_allow_no_tools (bool):*",
            "  guard_strict (bool):*",
            "  guard_coverage_paths (paths):*",
            "  guard_report_json (string):*",
        ],
        consecutive=False,
    )


def test_inert_unless_asked(pytester, run):
    pytester.makepyfile(
        test_it="""
        import sys

        def test_nothing_installed(request):
            assert sys.getprofile() is None
            plugins = request.config.pluginmanager
            assert not plugins.has_plugin("guardkit-recording")
            assert not plugins.has_plugin("guardkit-reporting")
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*guard coverage*")


def test_a_strict_marker_alone_starts_recording(pytester, run):
    pytester.makepyfile(
        test_it="""
        import pytest

        @pytest.mark.guard_strict
        def test_marked(request):
            assert request.config.pluginmanager.has_plugin("guardkit-recording")
        """
    )
    run(pytester).assert_outcomes(passed=1)


def test_importing_the_plugin_loads_only_its_options():
    # The entry point makes every pytest run import guardkit: neither the guard, nor the static
    # pass, nor the plugin's coverage code may come with it.
    probe = (
        "import sys\n"
        "import guardkit.plugins.pytest_plugin\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in "
        "('guardkit', 'opentelemetry', 'libcst', 'wrapt')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tempfile.gettempdir()
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(
        [
            "guardkit",
            "guardkit._fallback",
            "guardkit._version",
            "guardkit.plugins",
            "guardkit.plugins.pytest_plugin",
            "guardkit.plugins.pytest_plugin.guard_settings",
        ]
    )

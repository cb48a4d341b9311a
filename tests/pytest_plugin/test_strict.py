"""--guard-strict: a tool body that starts without a guard request fails the test."""

from __future__ import annotations

import itertools

import pytest

LOOP_TEST = """
from guardkit.loop import run
from guardkit.protocols import ToolCall
import app


def test_loop_runs_a_tool_under_another_name(guard_agent, scripted_model):
    model = scripted_model([[("remove", {"path": "/tmp/y"})], "done"])
    result = run(model, guard_agent, {"remove": app.delete_file}, [], max_turns=3)
    assert result.outcome == "done"
    assert result.calls == [("remove", "act-2", "allowed")]
"""

HAND_DISPATCH = """
import app

TOOLS = {"delete_file": app.delete_file}


def test_hand_written_dispatch(guard_agent):
    decision = guard_agent.request("delete_file", {"path": "/tmp/z"})
    assert decision["decision"] == "allowed"
    TOOLS["delete_file"](path="/tmp/z")


def test_request_for_another_tool_does_not_cover(guard_agent):
    guard_agent.request("search", {"query": "q"})
    app.delete_file("/tmp/w")


def test_one_request_covers_one_run(guard_agent):
    guard_agent.request("delete_file", {"path": "/tmp/v"})
    app.delete_file("/tmp/v")
    app.delete_file("/tmp/v")


@pytest.mark.guard_policy({"budget": 5, "tools": {}})
def test_a_denied_request_covers_nothing(guard_agent):
    assert guard_agent.request("delete_file", {})["decision"] == "denied"
    app.delete_file("/tmp/u")
"""


def test_strict_catches_a_dynamic_call_of_the_ungated_tool(project, run, dynamic_test):
    project.makepyfile(test_dynamic=dynamic_test)
    result = run(project, "--guard-strict")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_dynamic_delete _*",
            "guard strict mode:",
            "tool 'delete_file' (app.py:18) ran without going through the guard",
        ]
    )


def test_guarded_tools_pass_strict(project, run):
    result = run(project, "--guard-strict")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2)


def test_the_loop_counts_as_the_guard(project, run):
    project.makepyfile(test_loop=LOOP_TEST)
    result = run(project, "--guard-strict", "test_loop.py")
    result.assert_outcomes(passed=1)


def test_requests_are_matched_by_name_and_consumed(project, run):
    project.makepyfile(test_hand="import pytest\n" + HAND_DISPATCH)
    result = run(project, "--guard-strict", "test_hand.py", "-rf")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "FAILED test_hand.py::test_request_for_another_tool_does_not_cover*",
            "FAILED test_hand.py::test_one_request_covers_one_run*",
            "FAILED test_hand.py::test_a_denied_request_covers_nothing*",
        ],
        consecutive=False,
    )


_OPTION = {"absent": (), "on": ("--guard-strict",), "off": ("--no-guard-strict",)}
_INI = {"absent": None, "on": "true", "off": "false"}
_MARKER = {
    "absent": "",
    "on": "@pytest.mark.guard_strict\n",
    "off": "@pytest.mark.guard_strict(False)\n",
}


def _expected(option: str, ini: str, marker: str) -> bool:
    for level in (marker, option, ini):
        if level != "absent":
            return level == "on"
    return False


@pytest.mark.parametrize(
    ("option", "ini", "marker"), list(itertools.product(_OPTION, _INI, _MARKER))
)
def test_strict_precedence_marker_over_option_over_ini(pytester, run, option, ini, marker):
    pytester.makepyfile(
        tools=(
            "from agents import function_tool\n\n@function_tool\ndef wipe():\n    return 'wiped'\n"
        ),
        agents="def function_tool(fn):\n    return fn\n",
        test_it=(
            f"import pytest\nimport tools\n\n{_MARKER[marker]}def test_it():\n    tools.wipe()\n"
        ),
    )
    if _INI[ini] is not None:
        pytester.makeini(f"[pytest]\nguard_strict = {_INI[ini]}\n")
    result = run(pytester, *_OPTION[option])
    if _expected(option, ini, marker):
        result.assert_outcomes(failed=1)
    else:
        result.assert_outcomes(passed=1)


ASYNC_APP = """
import asyncio
import guardkit
from agents import function_tool


@function_tool
@guardkit.tool()
async def fetch(url: str) -> str:
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return url


@function_tool
async def leak(url: str) -> str:
    await asyncio.sleep(0)
    return url
"""

ASYNC_TESTS = """
import asyncio
import app_async


def test_guarded_coroutine_counts_once(guard_agent):
    assert asyncio.run(app_async.fetch("u")) == "u"


def test_ungated_coroutine(guard_agent):
    assert asyncio.run(app_async.leak("u")) == "u"


def test_tool_in_a_thread(guard_agent):
    import threading
    box = []
    worker = threading.Thread(target=lambda: box.append(asyncio.run(app_async.leak("t"))))
    worker.start()
    worker.join()
    assert box == ["t"]
"""


def test_async_tools_and_threads(pytester, run):
    pytester.makepyfile(
        agents="def function_tool(fn):\n    return fn\n",
        app_async=ASYNC_APP,
        test_async=ASYNC_TESTS,
    )
    result = run(pytester, "--guard-strict", "--guard-coverage", "-rf")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "FAILED test_async.py::test_ungated_coroutine - Failed: guard strict mode:",
            "FAILED test_async.py::test_tool_in_a_thread - Failed: guard strict mode:",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(["fetch *app_async.py:8 *yes *yes *no"])


def test_the_hook_is_removed_after_the_session(pytester, run):
    import sys

    pytester.makepyfile(test_it="def test_it():\n    pass\n")
    before = sys.getprofile()
    run(pytester, "--guard-strict").assert_outcomes(passed=1)
    assert sys.getprofile() is before


SEED_APP = """
import json

def do_search(query: str) -> str:
    return "found " + query

def do_wipe() -> str:
    return "wiped"

TOOLS = {"search": do_search, "wipe": do_wipe}
SCHEMAS = [{"name": "search", "input_schema": {}}]


def dispatch(agent, name, args):
    decision = agent.request(name, args)
    if decision["decision"] != "allowed":
        return "Denied"
    return TOOLS[name](**args)
"""

SEED_TESTS = """
import seed


def test_dispatch_under_the_table_key(guard_agent):
    assert seed.dispatch(guard_agent, "search", {"query": "q"}) == "found q"


def test_bypassing_the_dispatcher(guard_agent):
    assert seed.TOOLS["wipe"]() == "wiped"
"""


def test_dispatch_tables_match_requests_by_their_keys(pytester, run):
    pytester.makepyfile(seed=SEED_APP, test_seed=SEED_TESTS)
    result = run(pytester, "--guard-strict", "--guard-coverage", "-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "tool 'do_wipe' (seed.py:6) ran without going through the guard",
            "do_search *seed.py:3 *yes *yes *no",
            "do_wipe *seed.py:6 *yes *yes *no",
            "FAILED test_seed.py::test_bypassing_the_dispatcher - Failed: guard strict mode:",
        ],
        consecutive=False,
    )

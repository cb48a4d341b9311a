"""Under pytest-xdist the workers record and the controller reports once, as a plain run does.

The ``-n 2`` runs are real pytest-xdist sessions in a subprocess. Plugin autoloading is off in
them (the installed plugins' start-up, paid again by every worker, would dominate the run) and
the two plugins under test are loaded with ``-p``.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("xdist")

MORE_TESTS = """
import pytest
import app


@pytest.mark.parametrize("n", range(4))
def test_search_again(guard_agent, n):
    assert app.search(str(n)) == f"results for {n}"
"""


@pytest.fixture
def xdist_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """``xdist_run(*args)``: ``pytest -n 2`` in a subprocess, with only xdist and guardkit."""

    def run(*args: str) -> pytest.RunResult:
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        return pytester.runpytest_subprocess(
            "-p", "xdist.plugin", "-p", "guardkit.plugins.pytest_plugin", "-n", "2", *args
        )

    return run


def test_two_workers_report_what_one_process_reports(project, run, xdist_run, dynamic_test):
    project.makepyfile(test_dynamic=dynamic_test, test_more=MORE_TESTS)
    args = ("--guard-fail-under=100", "--guard-report-json=guard.json", "--guard-strict")
    serial = run(project, *args)
    serial_report = json.loads((project.path / "guard.json").read_text())
    (project.path / "guard.json").unlink()

    parallel = xdist_run(*args, "-v")

    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED
    parallel.assert_outcomes(passed=6, failed=1)
    report = json.loads((project.path / "guard.json").read_text())
    assert report == serial_report
    assert report["violations"][0]["test"] == "test_dynamic.py::test_dynamic_delete"
    lines = parallel.stdout.lines
    assert sum("PASSED" in line and "[gw0]" in line for line in lines) >= 1
    assert sum("PASSED" in line and "[gw1]" in line for line in lines) >= 1
    assert sum("= guard coverage =" in line for line in lines) == 1
    parallel.stdout.fnmatch_lines(
        [
            "guard strict mode:",
            "tool 'delete_file' (app.py:18) ran without going through the guard",
            "search *app.py:7 *yes *yes *no",
            "lookup *app.py:13 *yes *yes *yes",
            "delete_file *app.py:18 *no *yes *no",
            "TOTAL 2/3 tools guarded (66.67%)",
            "FAIL Required guard coverage of 100% not reached. Total guarded: 66.67%",
        ],
        consecutive=False,
    )


def test_a_strict_marker_alone_fails_the_test_on_its_worker(pytester, xdist_run):
    pytester.makepyfile(
        tools="from agents import function_tool\n\n@function_tool\ndef wipe():\n    return 1\n",
        agents="def function_tool(fn):\n    return fn\n",
        test_it=(
            "import pytest\nimport tools\n\n@pytest.mark.guard_strict\ndef test_it():\n"
            "    tools.wipe()\n\ndef test_other():\n    tools.wipe()\n"
        ),
    )
    result = xdist_run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["tool 'wipe' (tools.py:4) ran without going through the guard"])
    result.stdout.no_fnmatch_line("*guard coverage*")

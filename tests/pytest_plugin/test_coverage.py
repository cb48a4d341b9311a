"""--guard-coverage, --guard-fail-under and the JSON report, on the fixture project."""

from __future__ import annotations

import json

import pytest


def test_fails_under_100_and_names_the_ungated_tool(project, run):
    result = run(project, "--guard-fail-under=100")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*= guard coverage =*",
            "tool *where *guarded *called *denial path",
            "search *app.py:7 *yes *yes *no",
            "lookup *app.py:13 *yes *yes *yes",
            "delete_file *app.py:18 *no *no *no",
            "TOTAL 2/3 tools guarded (66.67%)",
            "ungated: delete_file",
            "FAIL Required guard coverage of 100% not reached. Total guarded: 66.67%",
        ]
    )


def test_passes_at_60(project, run):
    result = run(project, "--guard-fail-under=60")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["TOTAL 2/3 tools guarded (66.67%)"])
    result.stdout.no_fnmatch_line("*FAIL Required*")


def test_ini_threshold_and_option_override(project, run):
    project.makeini("[pytest]\nguard_fail_under = 70\n")
    assert run(project).ret == pytest.ExitCode.TESTS_FAILED
    assert run(project, "--guard-fail-under=50").ret == pytest.ExitCode.OK


def test_a_failing_test_keeps_its_own_exit_status(project, run):
    project.makepyfile(test_bad="def test_bad():\n    assert False\n")
    result = run(project, "--guard-fail-under=100")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=1)


def test_no_tests_collected_keeps_exit_5(pytester, run):
    pytester.makepyfile(app="import guardkit\n")
    result = run(pytester, "--guard-fail-under=100", "-k", "nothing")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_called_and_denial_columns_follow_the_tests(project, run, dynamic_test):
    project.makepyfile(test_dynamic=dynamic_test)
    result = run(project, "--guard-coverage")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["delete_file *app.py:18 *no *yes *no"])


def test_json_report(project, run, dynamic_test):
    project.makepyfile(test_dynamic=dynamic_test)
    result = run(project, "--guard-report-json=reports/guard.json", "--guard-fail-under=50")
    assert result.ret == pytest.ExitCode.OK
    data = json.loads((project.path / "reports" / "guard.json").read_text())
    assert data["guarded_percent"] == 66.67
    assert data["fail_under"] == 50.0
    assert data["violations"] == [
        {
            "test": "test_dynamic.py::test_dynamic_delete",
            "tool": "delete_file",
            "path": "app.py",
            "line": 18,
        }
    ]
    by_name = {t["name"]: t for t in data["tools"]}
    assert by_name["delete_file"] == {
        "name": "delete_file",
        "path": "app.py",
        "line": 18,
        "first_line": 17,
        "aliases": [],
        "how": "decorator",
        "guarded": False,
        "called": True,
        "denial_exercised": False,
        "runs": 1,
        "requests": 0,
        "denials": 0,
    }
    assert by_name["lookup"]["denials"] == 1
    assert by_name["search"]["runs"] == 1


def test_sources_come_from_the_option_or_the_ini(project, run):
    project.mkpydir("pkg")
    (project.path / "pkg" / "extra.py").write_text(
        "from agents import function_tool\n\n@function_tool\ndef wipe():\n    pass\n"
    )
    result = run(project, "--guard-coverage", "--guard-source=pkg")
    result.stdout.fnmatch_lines(["wipe *pkg/extra.py:4 *no*", "TOTAL 0/1 tools guarded (0.00%)"])
    project.makeini("[pytest]\nguard_coverage_paths = pkg app.py\n")
    result = run(project, "--guard-coverage")
    result.stdout.fnmatch_lines(["TOTAL 2/4 tools guarded (50.00%)"])


def test_no_tools_found_fails_the_threshold_and_says_where_it_looked(pytester, run):
    pytester.makepyfile(test_one="def test_one():\n    pass\n", helpers="X = 1\n")
    result = run(pytester, "--guard-fail-under=100", "--guard-report-json=guard.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"no tools found in the rootdir ({pytester.path}) (test modules are skipped)",
            "point --guard-source or the guard_coverage_paths ini key at the code that defines*",
            "FAIL Required guard coverage of 100% not reached: no tools found. If this project "
            "has none, pass --guard-allow-no-tools (ini: guard_allow_no_tools = true).",
        ]
    )
    result.stdout.no_fnmatch_line("*100.00%*")
    data = json.loads((pytester.path / "guard.json").read_text())
    assert (data["guarded_percent"], data["tools"]) == (None, [])


def test_no_tools_found_passes_when_allowed(pytester, run):
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    pytester.mkdir("lib")
    result = run(pytester, "--guard-fail-under=100", "--guard-allow-no-tools", "--guard-source=lib")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["no tools found in lib (test modules are skipped)"])
    result.stdout.no_fnmatch_line("FAIL*")
    pytester.makeini("[pytest]\nguard_allow_no_tools = true\n")
    assert run(pytester, "--guard-fail-under=100").ret == pytest.ExitCode.OK


def test_bad_ini_threshold_is_a_usage_error(project, run):
    project.makeini("[pytest]\nguard_fail_under = most\n")
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*guard_fail_under must be a number, got 'most'*"])


def test_guardkit_config_excludes_and_extends(project, run):
    project.makepyfile(
        extra=("from mycorp.agents import expose\n\n@expose\ndef launch():\n    pass\n")
    )
    project.makepyprojecttoml(
        '[tool.guardkit]\nexclude = ["app.py"]\ntool-decorators = ["mycorp.agents.expose"]\n'
    )
    result = run(project, "--guard-coverage", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["launch *extra.py:4 *no *no *no", "TOTAL 0/1 tools guarded*"])
    result.stdout.no_fnmatch_line("search *")


def test_malformed_guardkit_config_is_a_usage_error(project, run):
    project.makepyprojecttoml("[tool.guardkit]\nmax-turns = 0\n")
    result = run(project, "--guard-coverage")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*guard coverage: [[]tool.guardkit[]] max-turns must be*"])


def test_discovery_skips_test_code_and_virtualenvs_as_the_scan_does(project, run):
    tool = "from agents import function_tool\n\n@function_tool\ndef {name}():\n    pass\n"
    for folder, name in [("tests", "in_tests"), ("pkg/test", "in_test"), ("venv/lib", "in_venv")]:
        (project.path / folder).mkdir(parents=True)
        (project.path / folder / "helpers.py").write_text(tool.format(name=name))
    (project.path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (project.path / "pkg" / "tools.py").write_text(tool.format(name="kept"))
    (project.path / "pkg" / "tools_test.py").write_text(tool.format(name="in_a_test_module"))
    result = run(project, "--guard-coverage")
    result.stdout.fnmatch_lines(["kept *pkg/tools.py:4 *no*", "TOTAL 2/4 tools guarded*"])
    result.stdout.no_fnmatch_line("in_*")


def test_a_name_given_in_the_decorator_is_an_alias(pytester, run):
    pytester.makepyfile(
        agents="def function_tool(name_override=None):\n    return lambda fn: fn\n",
        tools=(
            "from agents import function_tool\n\n"
            "@function_tool(name_override='web_search')\ndef search(q):\n    return q\n"
        ),
        test_it=(
            "import tools\n\ndef test_it(guard_agent):\n"
            "    guard_agent.request('web_search', {})\n    tools.search('q')\n"
        ),
    )
    result = run(pytester, "--guard-strict", "--guard-report-json=guard.json")
    result.assert_outcomes(passed=1)
    (tool,) = json.loads((pytester.path / "guard.json").read_text())["tools"]
    assert (tool["name"], tool["aliases"], tool["requests"]) == ("search", ["web_search"], 1)

"""SARIF output against a vendored subset of the 2.1.0 schema, plus GitHub's extra demands."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import scan
from guardkit.codemods.rules import RULES

SCHEMA = json.loads((Path(__file__).parent / "sarif-2.1.0-subset.schema.json").read_text())
AGENT = """\
import anthropic
from langchain_core.tools import tool

client = anthropic.Anthropic()

@tool
def search(q: str) -> str:
    return q

while True:
    client.messages.create(model="m", messages=[])
"""


@pytest.fixture
def sarif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "agent.py").write_text(AGENT)
    (tmp_path / "pkg" / "broken.py").write_text("import openai\ndef f(:\n")
    result = CliRunner().invoke(scan, ["pkg", "--format", "sarif", "--no-cache"])
    assert result.exit_code == 2  # a file did not parse; the rest was still scanned
    return json.loads(result.output)


def test_validates_against_the_schema(sarif: dict) -> None:
    jsonschema.Draft7Validator(SCHEMA).validate(sarif)


def test_schema_rejects_what_github_would_reject(sarif: dict) -> None:
    bad = json.loads(json.dumps(sarif))
    bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startColumn"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SCHEMA).validate(bad)
    del bad["version"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SCHEMA).validate(bad)


def test_github_code_scanning_requirements(sarif: dict) -> None:
    assert sarif["version"] == "2.1.0"
    assert len(sarif["runs"]) == 1
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.ID for r in RULES]
    for rule in rules:
        for key in ("shortDescription", "fullDescription", "help"):
            assert 0 < len(rule[key]["text"]) <= 1024
    results = run["results"]
    assert {r["ruleId"] for r in results} == {"GK101", "GK102", "GK201"}
    for result in results:
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == "pkg/agent.py"  # repository-relative
        assert result["partialFingerprints"]["primaryLocationLineHash"]
        assert result["message"]["text"]
    loop = next(r for r in results if r["ruleId"] == "GK101")
    assert loop["locations"][0]["physicalLocation"]["region"]["startLine"] == 10
    assert loop["locations"][0]["physicalLocation"]["region"]["startColumn"] == 1  # 1-based
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes] == [
        "pkg/broken.py"
    ]


def test_fingerprints_are_stable_when_lines_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "agent.py"
    target.write_text(AGENT)
    first = json.loads(
        CliRunner().invoke(scan, ["agent.py", "--format", "sarif", "--no-cache"]).output
    )
    target.write_text("# a new comment\n\n" + AGENT)
    second = json.loads(
        CliRunner().invoke(scan, ["agent.py", "--format", "sarif", "--no-cache"]).output
    )

    def prints(log: dict) -> list[str]:
        return [
            r["partialFingerprints"]["primaryLocationLineHash"] for r in log["runs"][0]["results"]
        ]

    assert prints(first) == prints(second)
    lines = [
        r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in second["runs"][0]["results"]
    ]
    assert min(lines) > 2

"""Structured output (issue 20): a model call told the class of its reply
(``response_model=``, ``response_format=``, ``output_type=``) returns an instance of it, or of
a class its fields are annotated with. A run method called on that reply runs what the model
chose: each class that has the method is a tool, and the call a dispatch when the model can
pick among several. ``guardkit fix`` names each class's tool after its class, so the guard and
the policy tell them apart."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from guardkit.codemods.fixer import fix_source

Found = Callable[[], set[tuple[str, int, str, str]]]

CLASSES = """\
import subprocess
from typing import Union

from openai import OpenAI
from pydantic import BaseModel

client = OpenAI()


class Step(BaseModel):
    def execute(self) -> str:
        raise NotImplementedError


class RunShell(Step):
    command: str

    def execute(self) -> str:
        return subprocess.run(self.command, shell=True, capture_output=True, text=True).stdout


class WriteNote(Step):
    title: str
    body: str

    def execute(self) -> str:
        with open(self.title, "w") as f:
            f.write(self.body)
        return "ok"


class Summary(BaseModel):
    text: str
"""


def _write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str) -> str:
    monkeypatch.chdir(tmp_path)
    code = CLASSES + textwrap.dedent(tail)
    (tmp_path / "agent.py").write_text(code)
    return code


def _line(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if text in line)


def test_a_run_method_on_a_union_field_of_the_reply_is_a_dispatch_of_each_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    code = _write(
        tmp_path,
        monkeypatch,
        """

        class Plan(BaseModel):
            thought: str
            action: Union[RunShell, WriteNote]


        def step(history: list) -> str:
            reply = client.beta.chat.completions.parse(
                model="m", messages=history, response_format=Plan
            )
            plan = reply.choices[0].message.parsed
            return plan.action.execute()
        """,
    )
    got = {(rule, line) for _, line, rule, _ in found() if rule != "GK102"}
    assert got == {
        ("GK201", _line(code, "return subprocess.run") - 1),
        ("GK201", _line(code, 'with open(self.title, "w")') - 1),
        ("GK202", _line(code, "return plan.action.execute()")),
    }


def test_a_list_of_actions_in_the_reply_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    code = _write(
        tmp_path,
        monkeypatch,
        """

        class Batch(BaseModel):
            actions: "list[RunShell | WriteNote]"


        def step(history: list) -> list[str]:
            batch = client.responses.parse(model="m", input=history, text_format=Batch)
            return [action.execute() for action in batch.output_parsed.actions]
        """,
    )
    assert ("agent.py", _line(code, "return [action.execute()"), "GK202") in {
        (path, line, rule) for path, line, rule, _ in found()
    }


def test_one_class_of_reply_is_a_tool_run_on_what_the_model_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    code = _write(
        tmp_path,
        monkeypatch,
        """

        def step(history: list) -> str:
            reply = client.beta.chat.completions.parse(
                model="m", messages=history, response_format=RunShell
            )
            return reply.choices[0].message.parsed.execute()
        """,
    )
    got = {(rule, line) for _, line, rule, _ in found() if rule != "GK102"}
    assert got == {("GK201", _line(code, "return subprocess.run") - 1)}


def test_a_class_of_reply_without_the_method_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner
    from guardkit.codemods.cli import scan

    _write(
        tmp_path,
        monkeypatch,
        """

        def step(history: list, runner: Step) -> str:
            reply = client.beta.chat.completions.parse(
                model="m", messages=history, response_format=Summary
            )
            text = reply.choices[0].message.parsed.text
            return text.strip()
        """,
    )
    result = CliRunner().invoke(scan, [".", "--no-cache", "--select", "GK2"])
    assert result.exit_code == 0, result.output


def test_fix_names_each_class_tool_after_its_class() -> None:
    code = CLASSES + textwrap.dedent(
        """

        class Plan(BaseModel):
            action: Union[RunShell, WriteNote]


        def step(history: list) -> str:
            reply = client.beta.chat.completions.parse(
                model="m", messages=history, response_format=Plan
            )
            return reply.choices[0].message.parsed.action.execute()
        """
    )
    fixed = fix_source(code, "agent.py")
    assert fixed.error is None
    assert '@guardkit.tool(name="RunShell")\n    def execute' in fixed.after
    assert '@guardkit.tool(name="WriteNote")\n    def execute' in fixed.after
    assert {"RunShell", "WriteNote"} <= set(fixed.tools)

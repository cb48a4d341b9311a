"""Model stages and the receivers of a run method (issue 20): what one model wrote, handed to
the ``run`` of another stage that asks a model itself (an outline handed to the writer that
expands it), is text turned into text, no tool the model runs; handed to a stage that acts on
it (a shell), that stage is a tool. A base's ``run`` that calls its subclasses' ``_run`` runs,
on an instance of one subclass, that subclass's hook only: the base's other subclasses are no
tools unless an instance of them can be the receiver (a parameter typed by the base)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

BASE = """\
from openai import OpenAI


class Stage:
    def __init__(self, client: OpenAI | None = None):
        self.client = client or OpenAI()

    def run(self, text, context=""):
        return self._run(text, context)

    def _run(self, text, context):
        raise NotImplementedError
"""

KINDS = """\
import subprocess

from pipeline.base import Stage


class Outline(Stage):
    def _run(self, text, context):
        messages = [{"role": "user", "content": text}]
        r = self.client.chat.completions.create(model="m", messages=messages)
        return r.choices[0].message.content


class Expand(Stage):
    def _run(self, text, context):
        prompt = f"{context}\\n{text}"
        messages = [{"role": "user", "content": prompt}]
        r = self.client.chat.completions.create(model="m", messages=messages)
        return r.choices[0].message.content


class Publish(Stage):
    def _run(self, text, context):
        return subprocess.run(["publish", text], capture_output=True).stdout


class Archive(Stage):
    def _run(self, text, context):
        with open(context, "w") as f:
            f.write(text)
        return context
"""


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, app: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "__init__.py").write_text("")
    (tmp_path / "pipeline" / "base.py").write_text(BASE)
    (tmp_path / "pipeline" / "kinds.py").write_text(KINDS)
    (tmp_path / "app.py").write_text(textwrap.dedent(app))


MODEL_CALLS = {
    ("pipeline/kinds.py", 9, "GK102", "self.client.chat.completions.create"),
    ("pipeline/kinds.py", 17, "GK102", "self.client.chat.completions.create"),
}


def test_a_reply_handed_to_another_model_stage_is_no_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    _project(
        tmp_path,
        monkeypatch,
        """\
        from pipeline.kinds import Expand, Outline


        def write(topic):
            text = ""
            for _ in range(3):
                outline = Outline().run(topic)
                text = Expand().run(outline, context=text)
            return text
        """,
    )
    assert found() == MODEL_CALLS


def test_a_stage_that_acts_on_the_reply_is_a_tool_and_no_other_subclass_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    # Publish inherits Stage.run: it runs Publish._run, not Archive's or the model stages'
    _project(
        tmp_path,
        monkeypatch,
        """\
        from pipeline.kinds import Expand, Outline, Publish


        def write(topic):
            for _ in range(3):
                outline = Outline().run(topic)
                text = Expand().run(outline)
                Publish().run(text)
        """,
    )
    assert found() == MODEL_CALLS | {("pipeline/kinds.py", 22, "GK201", "Publish._run")}


def test_a_receiver_typed_by_the_base_runs_every_subclass_that_acts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    _project(
        tmp_path,
        monkeypatch,
        """\
        from pipeline.base import Stage
        from pipeline.kinds import Outline


        def write(topic, sink: Stage):
            for _ in range(3):
                outline = Outline().run(topic)
                sink.run(outline, context="out.txt")
        """,
    )
    assert found() == MODEL_CALLS | {
        ("pipeline/kinds.py", 22, "GK201", "Publish._run"),
        ("pipeline/kinds.py", 27, "GK201", "Archive._run"),
    }

"""An ``if``/``elif`` chain on what the model wrote is a dispatch (issue 20): a computer-use
agent whose helper in another module returns ``json.loads`` of the model's text, handed through
``asyncio.run`` and a parameter, compares each operation's ``"operation"`` with constants and
runs a method of a project object in each branch: the chain is the dispatch and the methods it
runs are its tools (a method no branch runs is none). Chains on a response's type tags
(``event.type`` of a stream: the protocol's, not the model's choice) and a single test of the
model's answer are neither."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]


@pytest.fixture
def operations(data_project: Callable[[str], Path]) -> Path:
    return data_project("operations")


def test_the_chain_on_the_models_operation_is_the_dispatch_and_its_calls_the_tools(
    operations: Path, found: Found
) -> None:
    rules = {(p, line, r, s) for p, line, r, s in found() if r in {"GK201", "GK202"}}
    assert rules == {
        ("desk/main.py", 16, "GK202", "if kind == ..."),
        ("desk/screen.py", 5, "GK201", "Screen.type_text"),
        ("desk/screen.py", 8, "GK201", "Screen.click"),
    }


def test_one_branch_is_no_dispatch(operations: Path, found: Found) -> None:
    main = operations / "desk" / "main.py"
    text = main.read_text()
    start, end = (
        text.index('        elif kind == "click":'),
        text.index('        elif kind == "done":'),
    )
    main.write_text(text[:start] + text[end:])
    assert {(p, r) for p, _, r, _ in found() if r in {"GK201", "GK202"}} == set()


def test_type_tags_of_a_response_are_no_choice_of_the_model(operations: Path, found: Found) -> None:
    stream = operations / "desk" / "stream.py"

    def dispatches() -> set[tuple[int, str]]:
        return {(line, s) for p, line, r, s in found() if p == "desk/stream.py" and r == "GK202"}

    assert dispatches() == set()
    # the same chain on what the model wrote (a parse of its text) is a dispatch
    stream.write_text(
        stream.read_text()
        .replace("etype = event.type", "etype = json.loads(event.delta)['action']")
        .replace("from openai import OpenAI", "import json\n\nfrom openai import OpenAI")
    )
    assert dispatches() == {(20, "if etype == ...")}

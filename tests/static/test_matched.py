"""A command picked by a test on what the model wrote (issue 20): ``for command in
self.commands: if command.matches(text): return command.execute(text)`` runs the method of the
element whose test the reply passes, a dispatch, and the commands' ``execute`` methods are its
tools. A loop over the same commands whose calls are handed nothing the model wrote
(``command.reset()``) runs no tool."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]


@pytest.fixture
def matched(data_project: Callable[[str], Path]) -> Path:
    return data_project("matched")


def _tools_and_dispatch(found: Found) -> set[tuple[str, int, str, str]]:
    return {f for f in found() if f[2] in {"GK201", "GK202"}}


def test_the_element_a_test_on_the_reply_picks_is_dispatched(matched: Path, found: Found) -> None:
    assert _tools_and_dispatch(found) == {
        ("agentx/agent.py", 17, "GK202", "command.execute"),
        ("agentx/commands.py", 17, "GK201", "RunPython.execute"),
        ("agentx/commands.py", 24, "GK201", "Submit.execute"),
    }


def test_a_test_that_reads_no_reply_picks_nothing(matched: Path, found: Found) -> None:
    agent = matched / "agentx" / "agent.py"
    agent.write_text(agent.read_text().replace("command.matches(text)", 'command.tag == "python"'))
    assert _tools_and_dispatch(found) == set()

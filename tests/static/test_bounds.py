"""What bounds a model loop, and where a project's modules are imported from (issue 20): a
call of a function defined inside the loop's function reaches what that function calls; an
exit counts as the counter's only when the counter's own test decides it (not an exit further
down under a person's command); an ``if`` leads to a raise only when it is the nearest test
above it; an attribute stepped up on entry and down on return gauges a depth, it counts no
turns; a text the loop grows with the model's words and tests for a word (``while "THE END"
not in story``) counts nothing; a package whose files import each other from inside it
(``from utils.llm import ...`` in ``app/helpers/convo.py``) is named from there."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

LLM = """\
import anthropic

client = anthropic.Anthropic()


def ask(messages):
    return client.messages.create(model="m", max_tokens=64, messages=messages)
"""


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    monkeypatch.chdir(tmp_path)

    def files(**sources: str) -> None:
        for name, text in sources.items():
            path = tmp_path / name.replace("__", "/").replace("/init", "/__init__")
            path = path.with_suffix(".py")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))

    return files


def _loops(found: Found) -> set[tuple[str, int]]:
    return {(p, line) for p, line, rule, _ in found() if rule == "GK101"}


def test_a_function_defined_in_the_loops_function_reaches_what_it_calls(
    write: Callable[..., None], found: Found
) -> None:
    write(
        llm=LLM,
        main="""\
        from llm import ask


        def run(messages):
            def step():
                return ask(messages)

            while True:
                reply = step()
                messages.append(reply)
        """,
    )
    assert _loops(found) == {("main.py", 8)}


EXIT_UNDER_A_COMMAND = """\
from llm import ask


def chat(messages, read):
    turns = 0
    while True:
        if turns > 0:
            command = read()
            if command == "/exit":
                break
        messages.append(ask(messages))
        turns += 1
"""


def test_an_exit_under_a_persons_command_is_not_the_counters(
    write: Callable[..., None], found: Found
) -> None:
    write(llm=LLM, main=EXIT_UNDER_A_COMMAND)
    assert _loops(found) == {("main.py", 6)}


def test_an_exit_the_counters_test_decides_bounds_the_loop(
    write: Callable[..., None], found: Found
) -> None:
    bounded = EXIT_UNDER_A_COMMAND.replace("if turns > 0:", "if turns > 20:\n            break")
    write(llm=LLM, main=bounded)
    result = [f for f in found() if f[2] == "GK101"]
    assert result == []


RETRIED = """\
from llm import ask


class Agent:
    def __init__(self):
        self.sent = 0

    def step(self, messages, first):
        if first:
            tries = 0
            while tries < 3:
                tries += 1
                if tries > 2:
                    raise RuntimeError("no valid first reply")
        self.sent += 1
        return ask(messages)


def run(agent, messages):
    while True:
        messages.append(agent.step(messages, first=not messages))


run(Agent(), [])
"""


def test_an_if_that_only_leads_to_a_raise_is_no_limit(
    write: Callable[..., None], found: Found
) -> None:
    # ``if first:`` holds a retry loop whose own test raises: it bounds that retry, not the
    # calls of ``step`` (the attribute compared is ``first``, not ``self.sent``)
    write(llm=LLM, main=RETRIED.replace("if first:", "if self.sent == 0 and first:"))
    assert _loops(found) == {("main.py", 20)}


DEPTH = """\
from llm import ask


class Debugger:
    def __init__(self):
        self.depth = 0

    def debug(self, messages):
        self.depth += 1
        if self.depth > 3:
            raise RecursionError("too deep")
        reply = ask(messages)
        self.depth -= 1
        return reply


def fix(messages):
    debugger = Debugger()
    while True:
        messages.append(debugger.debug(messages))
"""


def test_a_depth_gauge_bounds_no_loop_of_calls(write: Callable[..., None], found: Found) -> None:
    write(llm=LLM, main=DEPTH)
    assert _loops(found) == {("main.py", 19)}


def test_a_counter_stepped_one_way_is_a_limit(write: Callable[..., None], found: Found) -> None:
    write(llm=LLM, main=DEPTH.replace("        self.depth -= 1\n", ""))
    assert _loops(found) == set()


GROWS = """\
from llm import ask


def write_story(task):
    story = task
    while "THE END" not in story:
        story += ask([story]).content[0].text
    return story


def count_words(task, most):
    words = 0
    while words < most:
        words += len(ask([task]).content[0].text.split())
"""


def test_text_the_loop_adds_the_models_words_to_is_no_counter(
    write: Callable[..., None], found: Found
) -> None:
    write(llm=LLM, main=GROWS)
    assert _loops(found) == {("main.py", 6)}


def test_a_package_whose_files_import_from_inside_it_is_named_from_there(
    write: Callable[..., None], found: Found
) -> None:
    write(
        app__init="",
        app__utils__init="",
        app__utils__llm=LLM,
        app__helpers__init="",
        app__helpers__convo="""\
        from utils.llm import ask


        def converse(messages):
            while True:
                messages.append(ask(messages))
        """,
    )
    assert _loops(found) == {("app/helpers/convo.py", 5)}


MODES = """\
from llm import ask


class Runner:
    def __init__(self, max_turns="auto", max_retries=3):
        self.max_turns = max_turns
        self.max_retries = max_retries

    def run(self, messages, done=False):
        turns = retries = 0
        while {test}:
            turns += 1
            retries += 1
            reply = ask(messages)
            done = reply.stop_reason == "end_turn"
"""


@pytest.mark.parametrize(
    ("test", "unbounded"),
    [
        ('self.max_turns == "auto" or turns < self.max_turns', True),
        ("turns < self.max_turns or not done", True),
        ("turns < self.max_turns and not done", False),
        ("turns < self.max_turns or retries < self.max_retries", False),
    ],
)
def test_a_loop_goes_on_while_any_side_of_an_or_holds(
    write: Callable[..., None], found: Found, test: str, unbounded: bool
) -> None:
    write(llm=LLM, runner=MODES.replace("{test}", test))
    assert (("runner.py", 11, "GK101") in {f[:3] for f in found()}) is unbounded

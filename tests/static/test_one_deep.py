"""A recursion one call deep at most (issue 20): a function that reaches a model and calls
itself passing a parameter a constant (``follow_up=True``), only where that parameter is not
that constant (``if ... and not follow_up:``, after ``if follow_up: return ...``, in the
``else`` of ``if follow_up:``), runs twice at most; the same call where the parameter may
already be that constant (a falsy constant under ``not``, an ``or``, a parameter reassigned
before the test) is an unbounded loop."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

UNDER_A_TEST = """\
import anthropic

client = anthropic.Anthropic()


def draft(topic, follow_up=False):
    reply = client.messages.create(model="m", max_tokens=64, messages=[topic])
    text = reply.content[0].text
    if reply.stop_reason == "max_tokens" and not follow_up:
        text += draft(topic + text, follow_up=True)
    return text
"""

EARLY_RETURN = """\
import anthropic

client = anthropic.Anthropic()


class Writer:
    def draft(self, topic, stage="outline"):
        reply = client.messages.create(model="m", max_tokens=64, messages=[topic])
        if stage == "final":
            return reply.content[0].text
        return self.draft(reply.content[0].text, stage="final")
"""

IN_THE_ELSE = """\
import anthropic

client = anthropic.Anthropic()


def draft(topic, retried=False):
    reply = client.messages.create(model="m", max_tokens=64, messages=[topic])
    if retried:
        text = reply.content[0].text
    else:
        text = draft(topic, True) if not reply.content else reply.content[0].text
    return text
"""


@pytest.fixture
def scan_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> Callable[[str], set[int]]:
    """Writes ``agent.py`` and returns the lines of its GK101 findings."""
    monkeypatch.chdir(tmp_path)

    def lines(source: str) -> set[int]:
        (tmp_path / "agent.py").write_text(textwrap.dedent(source))
        return {line for _, line, rule, _ in found() if rule == "GK101"}

    return lines


@pytest.mark.parametrize("source", [UNDER_A_TEST, EARLY_RETURN, IN_THE_ELSE])
def test_a_recursion_that_passes_a_constant_it_rules_out_is_one_deep(
    scan_one: Callable[[str], set[int]], source: str
) -> None:
    assert scan_one(source) == set()


@pytest.mark.parametrize(
    ("source", "line"),
    [
        # the nested call passes the very value the test lets through
        (UNDER_A_TEST.replace("follow_up=True)", "follow_up=False)"), 6),
        # ``or``: the call may run with ``follow_up`` already set
        (UNDER_A_TEST.replace("and not follow_up", "or not follow_up"), 6),
        # the parameter is changed before the test: it no longer says what the caller passed
        (
            UNDER_A_TEST.replace(
                "    text = reply", "    follow_up = len(topic) > 9\n    text = reply"
            ),
            6,
        ),
        # the early return is for another value than the one passed on
        (EARLY_RETURN.replace('stage == "final"', 'stage == "outline"'), 7),
        # the early return is for the value passed on, but does not leave
        (
            EARLY_RETURN.replace(
                "            return reply.content[0].text", "            print(stage)"
            ),
            7,
        ),
        # the constant is passed in the branch where the flag is set
        (IN_THE_ELSE.replace("if retried:", "if not retried:"), 6),
    ],
)
def test_a_recursion_that_may_pass_the_constant_again_is_unbounded(
    scan_one: Callable[[str], set[int]], source: str, line: int
) -> None:
    assert scan_one(source) == {line}

"""A counter bounds a loop only when every turn that goes round again steps it (issue 20): a
retry loop whose attempt counter one handler bumps while another handler goes round again is
unbounded; ``finally`` steps every path; a step inside a nested loop (which may run no turn)
or under one branch of an ``if`` is no step of every turn."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from guardkit.codemods.analysis.loops import steps_every_turn

Found = Callable[[], set[tuple[str, int, str, str]]]


def _every_turn(source: str) -> bool:
    loop = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(loop, ast.While)
    return steps_every_turn(loop.body, "n")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("while n < 3:\n    n += 1\n    ask()\n", True),
        ("while n < 3:\n    ask()\n    n = n + 1\n", True),
        ("while n < 3:\n    if ok():\n        n += 1\n    ask()\n", False),
        ("while n < 3:\n    if ok():\n        n += 1\n    else:\n        n += 2\n", True),
        ("while n < 3:\n    if ok():\n        break\n    n += 1\n", True),
        ("while n < 3:\n    if ok():\n        continue\n    n += 1\n", False),
        ("while n < 3:\n    n += 1\n    if ok():\n        continue\n    ask()\n", True),
        (
            "while n < 3:\n    try:\n        return ask()\n    except A:\n        n += 1\n"
            "    except B:\n        continue\n",
            False,
        ),
        ("while n < 3:\n    try:\n        return ask()\n    except A:\n        n += 1\n", True),
        ("while n < 3:\n    try:\n        ask()\n    finally:\n        n += 1\n", True),
        ("while n < 3:\n    for x in xs:\n        n += 1\n    ask()\n", False),
        (
            "while n < 3:\n    match ask():\n        case 'a':\n            n += 1\n"
            "        case _:\n            n += 1\n",
            True,
        ),
        ("while n < 3:\n    match ask():\n        case 'a':\n            n += 1\n", False),
    ],
)
def test_a_counter_is_stepped_on_every_turn_or_not(source: str, expected: bool) -> None:
    assert _every_turn(source) is expected


def test_a_retry_whose_other_handler_goes_round_again_is_unbounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    monkeypatch.chdir(tmp_path)
    source = """\
        import openai

        client = openai.OpenAI()


        def complete(messages):
            attempts = 0
            while attempts < 3:
                try:
                    return client.chat.completions.create(model="m", messages=messages)
                except openai.BadRequestError:
                    attempts += 1
                except openai.RateLimitError:
                    continue
        """
    (tmp_path / "llm.py").write_text(textwrap.dedent(source))
    assert ("llm.py", 8) in {(p, line) for p, line, rule, _ in found() if rule == "GK101"}
    (tmp_path / "llm.py").write_text(textwrap.dedent(source).replace("continue", "attempts += 1"))
    assert not {(p, r) for p, _, r, _ in found() if r == "GK101"}

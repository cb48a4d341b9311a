"""BoundModelLoops before/after pairs."""

from __future__ import annotations

import pytest
from guardkit.codemods.testing import assert_codemod
from guardkit.codemods.transforms import BoundModelLoops


def test_while_true_becomes_a_counted_range() -> None:
    assert_codemod(
        BoundModelLoops,
        """
        import anthropic

        client = anthropic.Anthropic()


        def run(messages):

            # the agent loop
            while True:  # until the model stops
                response = client.messages.create(model="m", messages=messages)
                if response.stop_reason != "tool_use":
                    break
        """,
        """
        import anthropic

        client = anthropic.Anthropic()


        def run(messages):

            # the agent loop
            for _gk_turns in range(25):  # until the model stops
                response = client.messages.create(model="m", messages=messages)
                if response.stop_reason != "tool_use":
                    break
        """,
    )


def test_a_function_that_returns_the_loops_result_still_returns_it() -> None:
    """No bare ``break``: running out of turns raises instead of returning ``None``."""
    assert_codemod(
        BoundModelLoops,
        """
        import anthropic

        client = anthropic.Anthropic()


        def run(messages):
            while True:
                reply = client.messages.create(model="m", messages=messages)
                if reply.stop_reason != "tool_use":
                    return reply.content


        def drain(messages, done=False):
            while not done:
                reply = client.messages.create(model="m", messages=messages)
                done = reply.stop_reason != "tool_use"
            return reply
        """,
        """
        import anthropic

        client = anthropic.Anthropic()


        def run(messages):
            for _gk_turns in range(25):
                reply = client.messages.create(model="m", messages=messages)
                if reply.stop_reason != "tool_use":
                    return reply.content
            else:
                raise RuntimeError("agent loop stopped after 25 turns (guardkit fix)")


        def drain(messages, done=False):
            _gk_turns_2 = 0
            while not done:
                _gk_turns_2 += 1
                if _gk_turns_2 > 25:  # guardkit: turn limit
                    raise RuntimeError("agent loop stopped after 25 turns (guardkit fix)")
                reply = client.messages.create(model="m", messages=messages)
                done = reply.stop_reason != "tool_use"
            return reply
        """,
    )


def test_limit_is_configurable_and_names_do_not_clash() -> None:
    assert_codemod(
        BoundModelLoops,
        """
        from openai import OpenAI
        client = OpenAI()
        _gk_turns = 0
        while _gk_turns < 3:
            _gk_turns += 1
            client.responses.create(model="m", input="x")
        while not done: client.responses.create(model="m", input="y")
        """,
        """
        from openai import OpenAI
        client = OpenAI()
        _gk_turns = 0
        while _gk_turns < 3:
            _gk_turns += 1
            client.responses.create(model="m", input="x")
        _gk_turns_2 = 0
        while not done:
            _gk_turns_2 += 1
            if _gk_turns_2 > 5:  # guardkit: turn limit
                break
            client.responses.create(model="m", input="y")
        """,
        max_turns=5,
    )


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            """
            import litellm
            for _ in range(5):
                litellm.completion(model="m", messages=[])
            """,
            id="bounded-for",
        ),
        pytest.param(
            """
            import itertools
            import litellm
            for _ in itertools.count():
                litellm.completion(model="m", messages=[])
            """,
            id="unbounded-for-is-not-rewritten",
        ),
        pytest.param(
            """
            import litellm
            steps = 0
            while steps < 10:
                steps += 1
                litellm.completion(model="m", messages=[])
            """,
            id="counter",
        ),
    ],
)
def test_nothing_to_do(code: str) -> None:
    assert_codemod(BoundModelLoops, code, None)

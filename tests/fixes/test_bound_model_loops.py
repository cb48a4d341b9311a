"""BoundModelLoops before/after pairs."""

from __future__ import annotations

import pytest
from guardkit.codemods.testing import assert_codemod
from guardkit.codemods.transforms import BoundModelLoops


def test_while_true_gets_a_counter() -> None:
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
            _gk_turns = 0
            while True:  # until the model stops
                _gk_turns += 1
                if _gk_turns > 25:  # guardkit: turn limit
                    break
                response = client.messages.create(model="m", messages=messages)
                if response.stop_reason != "tool_use":
                    break
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

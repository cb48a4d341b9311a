"""GateModelCalls before/after pairs."""

from __future__ import annotations

import pytest
from guardkit.codemods.testing import assert_codemod
from guardkit.codemods.transforms import GateModelCalls


def test_call_in_loop_breaks_and_call_outside_raises() -> None:
    assert_codemod(
        GateModelCalls,
        """
        from openai import OpenAI

        client = OpenAI(base_url="https://api.deepseek.com")


        def loop(messages):
            for _ in range(10):
                # ask the model
                reply = client.chat.completions.create(model="deepseek-chat", messages=messages)
                messages.append(reply)


        def once(prompt):
            return client.chat.completions.create(model="deepseek-chat", messages=[prompt])
        """,
        """
        from openai import OpenAI
        import guardkit

        client = OpenAI(base_url="https://api.deepseek.com")


        def loop(messages):
            for _ in range(10):
                # ask the model
                _gk_turn = guardkit.current_agent().request("llm_turn", {})
                if _gk_turn["decision"] != "allowed":
                    break
                reply = client.chat.completions.create(model="deepseek-chat", messages=messages)
                messages.append(reply)


        def once(prompt):
            _gk_turn = guardkit.current_agent().request("llm_turn", {})
            if _gk_turn["decision"] != "allowed":
                raise guardkit.ActionDenied(_gk_turn["action_id"], _gk_turn["reason"])
            return client.chat.completions.create(model="deepseek-chat", messages=[prompt])
        """,
    )


def test_each_call_gets_its_own_gate_and_loop_else_is_outside_the_loop() -> None:
    assert_codemod(
        GateModelCalls,
        """
        import guardkit
        import litellm
        async def agent(messages):
            for m in messages:
                first = await litellm.acompletion(model="a", messages=[m])
                second = await litellm.acompletion(model="b", messages=[first])
            else:
                await litellm.acompletion(model="c", messages=[])
        """,
        """
        import guardkit
        import litellm
        async def agent(messages):
            for m in messages:
                _gk_turn = guardkit.current_agent().request("llm_turn", {})
                if _gk_turn["decision"] != "allowed":
                    break
                first = await litellm.acompletion(model="a", messages=[m])
                _gk_turn = guardkit.current_agent().request("llm_turn", {})
                if _gk_turn["decision"] != "allowed":
                    break
                second = await litellm.acompletion(model="b", messages=[first])
            else:
                _gk_turn = guardkit.current_agent().request("llm_turn", {})
                if _gk_turn["decision"] != "allowed":
                    raise guardkit.ActionDenied(_gk_turn["action_id"], _gk_turn["reason"])
                await litellm.acompletion(model="c", messages=[])
        """,
    )


def test_with_statement_and_nested_function_in_loop() -> None:
    assert_codemod(
        GateModelCalls,
        """
        import anthropic
        client = anthropic.Anthropic()
        while True:
            def helper():
                return client.messages.create(model="m", messages=[])
            with client.messages.stream(model="m", messages=[]) as stream:
                pass
        """,
        """
        import anthropic
        import guardkit

        client = anthropic.Anthropic()
        while True:
            def helper():
                _gk_turn = guardkit.current_agent().request("llm_turn", {})
                if _gk_turn["decision"] != "allowed":
                    raise guardkit.ActionDenied(_gk_turn["action_id"], _gk_turn["reason"])
                return client.messages.create(model="m", messages=[])
            _gk_turn = guardkit.current_agent().request("llm_turn", {})
            if _gk_turn["decision"] != "allowed":
                break
            with client.messages.stream(model="m", messages=[]) as stream:
                pass
        """,
    )


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            """
            import guardkit
            import anthropic
            client = anthropic.Anthropic()
            def ask(agent):
                turn = agent.request("llm_turn", {})
                if turn["decision"] != "allowed":
                    return None
                return client.messages.create(model="m", messages=[])
            """,
            id="already-gated",
        ),
        pytest.param(
            """
            import anthropic
            client = anthropic.Anthropic()
            while client.messages.create(model="m", messages=[]).stop_reason == "tool_use":
                pass
            """,
            id="call-in-while-test-is-not-rewritten",
        ),
        pytest.param(
            """
            import anthropic
            client = anthropic.Anthropic()
            replies = [client.messages.create(model="m", messages=[p]) for p in prompts]
            """,
            id="call-in-comprehension-is-not-rewritten",
        ),
        pytest.param(
            """
            def ask(client):
                return client.messages.create(model="m", messages=[])
            """,
            id="unknown-receiver",
        ),
    ],
)
def test_nothing_to_do(code: str) -> None:
    assert_codemod(GateModelCalls, code, None)

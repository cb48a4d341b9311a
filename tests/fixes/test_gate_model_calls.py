"""GateModelCalls before/after pairs."""

from __future__ import annotations

import pytest
from guardkit.codemods.testing import assert_codemod
from guardkit.codemods.transforms import GateModelCalls


def test_the_statement_holding_the_call_runs_inside_model_turn() -> None:
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
                with guardkit.model_turn():
                    reply = client.chat.completions.create(model="deepseek-chat", messages=messages)
                messages.append(reply)


        def once(prompt):
            with guardkit.model_turn():
                return client.chat.completions.create(model="deepseek-chat", messages=[prompt])
        """,
    )


def test_async_code_gets_async_with_and_each_call_its_own_gate() -> None:
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
        def sync_helper():
            return litellm.completion(model="d", messages=[])
        """,
        """
        import guardkit
        import litellm
        async def agent(messages):
            for m in messages:
                async with guardkit.model_turn():
                    first = await litellm.acompletion(model="a", messages=[m])
                async with guardkit.model_turn():
                    second = await litellm.acompletion(model="b", messages=[first])
            else:
                async with guardkit.model_turn():
                    await litellm.acompletion(model="c", messages=[])
        def sync_helper():
            with guardkit.model_turn():
                return litellm.completion(model="d", messages=[])
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
                with guardkit.model_turn():
                    return client.messages.create(model="m", messages=[])
            with guardkit.model_turn(), client.messages.stream(model="m", messages=[]) as stream:
                pass
        """,
    )


def test_a_retried_provider_helper_is_gated_at_its_callers() -> None:
    """tenacity runs the helper again on errors: a gate inside would charge every attempt and
    retry a denial with back-off; the agent's turn is the call of the helper."""
    assert_codemod(
        GateModelCalls,
        """
        import anthropic
        from tenacity import retry, stop_after_attempt

        client = anthropic.Anthropic()


        @retry(stop=stop_after_attempt(3))
        def complete(messages):
            return client.messages.create(model="m", messages=messages)


        def turn(messages):
            reply = complete(messages)
            messages.append(reply)
        """,
        """
        import anthropic
        from tenacity import retry, stop_after_attempt
        import guardkit

        client = anthropic.Anthropic()


        @retry(stop=stop_after_attempt(3))
        def complete(messages):
            return client.messages.create(model="m", messages=messages)


        def turn(messages):
            with guardkit.model_turn():
                reply = complete(messages)
            messages.append(reply)
        """,
    )


def test_a_helper_under_the_projects_own_retry_decorator_is_gated_at_its_callers() -> None:
    """A decorator of the module that wraps the function in tenacity's ``retry`` (a
    conditional retry, as qodo-cover writes it) is a retry decorator too."""
    assert_codemod(
        GateModelCalls,
        """
        from functools import wraps

        import litellm
        from tenacity import retry, stop_after_attempt


        def conditional_retry(func):
            @wraps(func)
            def wrapper(self, *args, **kwargs):
                if not self.enable_retry:
                    return func(self, *args, **kwargs)

                @retry(stop=stop_after_attempt(3))
                def again():
                    return func(self, *args, **kwargs)

                return again()

            return wrapper


        class Caller:
            @conditional_retry
            def call_model(self, prompt):
                return litellm.completion(model="m", messages=prompt)

            def ask(self, prompt):
                return self.call_model(prompt)
        """,
        """
        from functools import wraps

        import litellm
        from tenacity import retry, stop_after_attempt
        import guardkit


        def conditional_retry(func):
            @wraps(func)
            def wrapper(self, *args, **kwargs):
                if not self.enable_retry:
                    return func(self, *args, **kwargs)

                @retry(stop=stop_after_attempt(3))
                def again():
                    return func(self, *args, **kwargs)

                return again()

            return wrapper


        class Caller:
            @conditional_retry
            def call_model(self, prompt):
                return litellm.completion(model="m", messages=prompt)

            def ask(self, prompt):
                with guardkit.model_turn():
                    return self.call_model(prompt)
        """,
    )


def test_a_hand_written_retry_loop_is_gated_as_a_whole() -> None:
    assert_codemod(
        GateModelCalls,
        """
        import time
        import litellm

        def ask(messages):
            for attempt in range(3):
                try:
                    return litellm.completion(model="m", messages=messages)
                except litellm.RateLimitError:
                    time.sleep(2**attempt)
            raise RuntimeError("no reply")
        """,
        """
        import time
        import litellm
        import guardkit

        def ask(messages):
            with guardkit.model_turn():
                for attempt in range(3):
                    try:
                        return litellm.completion(model="m", messages=messages)
                    except litellm.RateLimitError:
                        time.sleep(2**attempt)
            raise RuntimeError("no reply")
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
            import guardkit
            client = anthropic.AsyncAnthropic()
            async def ask():
                async with guardkit.model_turn():
                    return await client.messages.create(model="m", messages=[])
            """,
            id="already-gated-async",
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
        pytest.param(
            """
            import backoff
            import openai
            client = openai.OpenAI()
            @backoff.on_exception(backoff.expo, openai.RateLimitError)
            def complete(messages):
                return client.chat.completions.create(model="m", messages=messages)
            """,
            id="retried-helper-without-callers-is-a-follow-up",
        ),
    ],
)
def test_nothing_to_do(code: str) -> None:
    assert_codemod(GateModelCalls, code, None)


def test_a_statement_that_is_already_a_gate_is_never_wrapped_again() -> None:
    """Even when the analysis points at the gate itself (the retry-loop helper of issue 20),
    ``with guardkit.model_turn():`` is not nested in another one."""
    import libcst as cst
    from libcst.codemod import CodemodContext

    code = (
        "import guardkit\n"
        "def ask(client, messages):\n"
        "    with guardkit.model_turn():\n"
        "        for _gk_turns in range(25):\n"
        "            try:\n"
        "                return client.messages.create(messages=messages)\n"
        "            except OSError:\n"
        "                pass\n"
    )

    class PointedAtTheGate(GateModelCalls):
        def transform_module_impl(self, tree: cst.Module) -> cst.Module:
            self.wraps = {(3, 4)}  # the ``with`` statement itself
            self._async = []
            return tree.visit(self)

    codemod = PointedAtTheGate(CodemodContext(filename="helper.py"))
    assert codemod.transform_module(cst.parse_module(code)).code == code

"""GK302: a guard denial that raises out of the agent loop."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..analysis.facts import ModuleFacts
from ..findings import Finding
from .base import Invalid, Rule, Valid


class DenialEscapesLoop(Rule):
    ID = "GK302"
    MESSAGE = "a denial at {symbol} raises out of the agent loop instead of going back to the model"
    EXPLANATION = (
        "When the guard denies a tool call, the agent should tell the model (as the tool result, "
        "with the denial's reason) and let it choose another way; raising out of the loop kills "
        "the whole run, loses the conversation, and teaches nothing. Flagged inside loops that "
        "call a model: a `raise` under a test of the decision, and `authorize(...)` or calls of "
        "guarded tools that are not inside a `try` catching `ActionDenied` (or a base class)."
    )
    FIX = (
        "Wrap the call in `try: ... except guardkit.ActionDenied as denied:` and append a tool "
        'result such as `{"type": "tool_result", "is_error": True, "content": str(denied)}`. '
        "No automatic fix."
    )
    USE_INSTEAD = """
        import guardkit
        import anthropic
        client = anthropic.Anthropic()
        def loop(guard, messages):
            for _ in range(5):
                client.messages.create(model="m", messages=messages)
                try:
                    guard.authorize("search", {}, 1)
                except guardkit.ActionDenied as denied:
                    messages.append({"role": "user", "content": str(denied)})
        """
    LIMITS = (
        "Checked inside loops that call a model in the same function; a denial raised in a "
        "helper the loop calls is not followed."
    )
    VALID = (
        Valid(
            code="""
            import guardkit
            import anthropic
            client = anthropic.Anthropic()
            def loop(guard, messages):
                for _ in range(5):
                    r = client.messages.create(model="m", messages=messages)
                    try:
                        guard.authorize("search", {}, 1)
                    except guardkit.ActionDenied as denied:
                        messages.append({"role": "user", "content": str(denied)})
            """
        ),
        Valid(
            code="""
            import guardkit
            def once(guard):
                guard.authorize("search", {}, 1)
            """,
            note="no agent loop",
        ),
        Valid(
            code="""
            from openai import OpenAI
            client = OpenAI()
            def loop(agent, messages):
                while len(messages) < 20:
                    client.chat.completions.create(model="m", messages=messages)
                    try:
                        agent.authorize("shell", {}, 1)
                    except Exception as exc:
                        messages.append({"role": "tool", "content": str(exc)})
            """,
            note="caught by a base class",
        ),
    )
    INVALID = (
        Invalid(
            code="""
            import anthropic
            client = anthropic.Anthropic()
            def loop(guard, messages):
                for _ in range(5):
                    client.messages.create(model="m", messages=messages)
                    d = guard.request("search", {})
                    if d["decision"] != "allowed":
                        raise RuntimeError("denied")
            """,
            line=8,
            column=12,
        ),
        Invalid(
            code="""
            from openai import OpenAI
            client = OpenAI()
            def loop(agent, messages):
                for _ in range(5):
                    client.chat.completions.create(model="m", messages=messages)
                    agent.authorize("shell", {"cmd": "ls"}, 1)
            """,
            line=6,
            column=8,
        ),
        Invalid(
            code="""
            import guardkit
            from openai import OpenAI
            client = OpenAI()
            @guardkit.tool()
            def search(q): return q
            def loop(messages):
                for _ in range(5):
                    client.chat.completions.create(model="m", messages=messages)
                    try:
                        search("x")
                    except ValueError:
                        pass
            """,
            line=10,
            column=12,
            note="a handler that does not catch denials",
        ),
        Invalid(
            code="""
            import ollama
            def loop(guard):
                for _ in range(3):
                    ollama.chat(model="llama3", messages=[])
                    turn = guard.request("search", {})
                    if turn.decision == "denied":
                        raise PermissionError(turn.reason)
            """,
            line=7,
            column=12,
        ),
        Invalid(
            code="""
            import guardkit
            import anthropic
            client = anthropic.Anthropic()
            @guardkit.tool()
            def search(q): return q
            TOOLS = {"search": search}
            def loop(messages):
                while len(messages) < 9:
                    reply = client.messages.create(model="m", messages=messages)
                    for block in reply.content:
                        messages.append(TOOLS[block.name](**block.input))
            """,
            line=11,
            column=28,
            note="a guarded tool run through a dispatch table (as after guardkit fix)",
        ),
    )

    @classmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        for node in facts.escapes:
            symbol = "raise" if isinstance(node, ast.Raise) else ast.unparse(node).split("(")[0]
            yield cls.finding(path, node, symbol=symbol, fixable=False)

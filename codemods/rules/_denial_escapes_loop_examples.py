"""The examples of DenialEscapesLoop: flagged and accepted code, and the fixed form of what
`guardkit fix` fixes (checked by tests/static/test_rules.py, shown in docs/rules.md)."""

from __future__ import annotations

from .base import Invalid, Valid

__all__ = ["INVALID", "USE_INSTEAD", "VALID"]

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

VALID: tuple[Valid, ...] = (
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

INVALID: tuple[Invalid, ...] = (
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

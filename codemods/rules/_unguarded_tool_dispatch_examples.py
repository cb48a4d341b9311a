"""The examples of UnguardedToolDispatch: flagged and accepted code, and the fixed form of what
`guardkit fix` fixes (checked by tests/static/test_rules.py, shown in docs/rules.md)."""

from __future__ import annotations

from .base import Invalid, Valid

__all__ = ["INVALID", "USE_INSTEAD", "VALID"]

USE_INSTEAD = """
    import anthropic
    client = anthropic.Anthropic()
    def search(q): return q
    TOOLS = {"search": search}
    def step(guard, block):
        guard.authorize(block.name, block.input, 0)
        return TOOLS[block.name](**block.input)
    """

VALID: tuple[Valid, ...] = (
    Valid(
        code="""
        from openai import OpenAI
        client = OpenAI()
        class Chat:
            def __init__(self, log):
                self.log = log
                self.notes = []
            def turn(self, task):
                reply = client.chat.completions.create(model="m", messages=[task])
                kind, _, text = reply.choices[0].message.content.partition(":")
                if kind == "SAY":
                    self.log.info(text)
                elif kind == "NOTE":
                    self.notes.append(text)
        """,
        note="a chain on the model's words whose branches only log or keep what it wrote",
    ),
    Valid(
        code="""
        import json
        from openai import OpenAI
        client = OpenAI()
        def click_item(x, y):
            return {"type": "click", "x": x, "y": y}
        def text_item(text):
            return {"type": "type", "text": text}
        def to_items(messages):
            reply = client.chat.completions.create(model="m", messages=messages)
            act = json.loads(reply.choices[0].message.content)
            if act["action"] == "click":
                return [click_item(act["x"], act["y"])]
            elif act["action"] == "type":
                return [text_item(act["text"])]
            return []
        """,
        note="a chain whose branches only build another provider's items from the action",
    ),
    Valid(
        code="""
        import anthropic
        client = anthropic.Anthropic()
        def search(q): return q
        TOOLS = {"search": search}
        def step(guard, block):
            guard.authorize(block.name, block.input, 0)
            return TOOLS[block.name](**block.input)
        """
    ),
    Valid(
        code="""
        import guardkit
        @guardkit.tool()
        def search(q): return q
        TOOL_MAP = {"search": search}
        def run(name, args):
            return TOOL_MAP[name](**args)
        """,
        note="every function in the table is guarded",
    ),
    Valid(
        code="""
        import guardkit
        @guardkit.tool()
        def search(q): return q
        @guardkit.tool()
        def fetch(url): return url
        def run(call):
            chosen = {"search": search, "fetch": fetch}[call["name"]]
            return chosen(**call["args"])
        """,
        note="a table written where it is used, every entry guarded",
    ),
    Valid(
        code="""
        COMMANDS = {"start": print}
        def main(cmd):
            COMMANDS[cmd]("x")
        """,
        note="a command table in a non-agent module",
    ),
    Valid(
        code="""
        import openai
        def greet(): return "hi"
        if __name__ == "__main__":
            greet()
        """,
        note="__name__ is not a tool name",
    ),
    Valid(
        code="""
        import anthropic
        from tools import search
        client = anthropic.Anthropic()
        def run(guard, block):
            client.messages.create(model="m", messages=[])
            guard.authorize(block.name, block.input, 1)
            if block.name == "search":
                return search(**block.input)
        """,
        note="the branch runs after a guard request",
    ),
    Valid(
        code="""
        import anthropic
        from tools import search
        client = anthropic.Anthropic()
        def run(guard, block):
            client.messages.create(model="m", messages=[])
            guard.authorize("search", block.input, 1)
            if block.name == "search":
                return search(**block.input)
        """,
        note="a request naming this tool",
    ),
    Valid(
        code="""
        import anthropic
        from retry_helpers import backoff
        client = anthropic.Anthropic()
        def ask(messages):
            try:
                return client.messages.create(model="m", messages=messages)
            except Exception as exc:
                if type(exc).__name__ == "RateLimitError":
                    return backoff(exc)
                raise
        """,
        note="a branch over exception types",
    ),
    Valid(
        code="""
        from openai import OpenAI
        from ui import print_event
        client = OpenAI()
        def show(events):
            for event in events:
                if event.name == "tool_start":
                    print_event(event)
        """,
        note="an event printer",
    ),
    Valid(
        code="""
        from openai import OpenAI
        from parsing import parse_answer
        client = OpenAI()
        def final(parts):
            for part in parts:
                if part.name == "final_answer":
                    return parse_answer(part.text)
        """,
        note="a response parser",
    ),
    Valid(
        code="""
        def to_csv(rows): return rows
        def to_json(rows): return rows
        HANDLERS = {"csv": to_csv, "json": to_json}
        def export(config, rows):
            return HANDLERS[config.name](rows)
        """,
        note="a table indexed by configuration",
    ),
    Valid(
        code="""
        from langchain_core.tools import tool
        files: dict[str, str] = {}
        @tool
        def edit(path: str, old: str, new: str) -> str:
            content = files[path]
            files[path] = content.replace(old, new)
            return "ok"
        """,
        note="data read by a tool's parameter is not a dispatch",
    ),
    Valid(
        code="""
        def render(call, validators):
            Model = build_model(call.name, validators)
            return Model(**call.arguments)
        """,
        note="a call given the tool name and more builds something from it; not a lookup",
    ),
    Valid(
        code="""
        from pathlib import Path
        import openai
        client = openai.OpenAI()
        def read_note(tool_name: str, args: dict) -> str:
            return Path(tool_name).read_text(encoding=args["encoding"])
        def ask(messages):
            return client.chat.completions.create(model="m", messages=messages, tools=[read_note])
        """,
        note="a tool body that builds a path from what the model wrote looks no tool up",
    ),
)

INVALID: tuple[Invalid, ...] = (
    Invalid(
        code="""
        import openai
        client = openai.OpenAI()
        def get_weather(city): return city
        available_functions = {"get_weather": get_weather}
        def handle(call):
            fn = available_functions[call.function.name]
            return fn(city="x")
        """,
        line=7,
        column=11,
        expected_fix="""
            import openai
            import guardkit

            client = openai.OpenAI()
            @guardkit.tool()
            def get_weather(city): return city
            available_functions = {"get_weather": get_weather}
            def handle(call):
                fn = available_functions[call.function.name]
                return fn(city="x")
            """,
    ),
    Invalid(
        code="""
        import anthropic
        from tools import search
        client = anthropic.Anthropic()
        def run(block):
            if block.name == "search":
                return search(**block.input)
            return client.messages.create(model="m", messages=[])
        """,
        line=6,
        column=15,
        note="an if-chain reaching an imported function",
    ),
    Invalid(
        code="""
        from mcp.server import Server
        server = Server("files")
        @server.call_tool()
        async def call_tool(name: str, arguments: dict):
            return []
        """,
        line=4,
        column=0,
        note="low-level MCP handler",
    ),
    Invalid(
        code="""
        def lookup(q): return q
        TOOL_REGISTRY = {"lookup": lookup}
        def dispatch(name, args):
            return TOOL_REGISTRY.get(name)(**args)
        """,
        line=4,
        column=11,
        expected_fix="""
            import guardkit

            @guardkit.tool()
            def lookup(q): return q
            TOOL_REGISTRY = {"lookup": lookup}
            def dispatch(name, args):
                return TOOL_REGISTRY.get(name)(**args)
            """,
    ),
    Invalid(
        code="""
        import anthropic
        from tools import search
        client = anthropic.Anthropic()
        def run(guard, block):
            client.messages.create(model="m", messages=[])
            guard.authorize("lookup", block.input, 1)
            if block.name == "search":
                return search(**block.input)
        """,
        line=8,
        column=15,
        note="a request for a different tool does not count",
    ),
    Invalid(
        code="""
        import json
        from openai import OpenAI
        client = OpenAI()
        def get_weather(city: str) -> str:
            return city
        function_map = {"get_weather": get_weather}
        def execute(tool_call):
            name = tool_call.function.name
            args = json.loads(tool_call.function.arguments)
            return function_map[name](**args)
        """,
        line=10,
        column=11,
        note="a function_map indexed by the tool call's name",
        expected_fix="""
            import json
            from openai import OpenAI
            import guardkit

            client = OpenAI()
            @guardkit.tool()
            def get_weather(city: str) -> str:
                return city
            function_map = {"get_weather": get_weather}
            def execute(tool_call):
                name = tool_call.function.name
                args = json.loads(tool_call.function.arguments)
                return function_map[name](**args)
            """,
    ),
    Invalid(
        code="""
        import anthropic
        client = anthropic.Anthropic()
        class ToolCollection:
            def __init__(self, *tools):
                self.tool_map = {tool.name: tool for tool in tools}
            async def run(self, *, name: str, tool_input: dict):
                tool = self.tool_map.get(name)
                return await tool(**tool_input)
        """,
        line=8,
        column=21,
        note="a table built by a comprehension, looked up by the tool name",
    ),
    Invalid(
        code="""
        import json
        from openai import OpenAI
        from .registry import get_function
        client = OpenAI()
        def handle(name: str, arguments: str):
            return get_function(name)(**json.loads(arguments))
        """,
        line=6,
        column=11,
        note="a getter called with the tool name",
    ),
    Invalid(
        code="""
        class Registry:
            def __init__(self):
                self._functions = {}
            def get(self, name):
                return self._functions.get(name)
            async def call(self, name: str, arguments: dict):
                found = self.get(name)
                function = found
                return await function(**arguments)
        """,
        line=9,
        column=21,
        note="a registry lookup followed through a chain of variables",
    ),
    Invalid(
        code="""
        import json
        from openai import OpenAI
        def agent_turn(tools: dict, message):
            for call in message.tool_calls:
                entry = tools[call.function.name]
                arguments = json.loads(call.function.arguments)
                entry["callable"](**arguments)
        """,
        line=7,
        column=8,
        note="the callable read from the looked-up entry",
    ),
    Invalid(
        code="""
        from langchain_core.messages import ToolMessage
        async def run_tools(message, tools):
            by_name = {tool.name: tool for tool in tools}
            for call in message.tool_calls:
                output = await execute_safely(by_name[call["name"]], call["args"])
                yield ToolMessage(content=output, tool_call_id=call["id"])
        """,
        line=5,
        column=23,
        note="an executor handed the looked-up tool and the model's arguments",
    ),
    Invalid(
        code="""
        from langchain_core.tools import tool
        def task_tool(agents: dict):
            @tool
            def task(description: str, agent_type: str) -> str:
                sub_agent = agents[agent_type]
                return sub_agent.invoke({"messages": [description]})
            return task
        """,
        line=6,
        column=15,
        note="a sub-agent picked by a tool parameter the model wrote, then run",
    ),
    Invalid(
        code="""
        import anthropic
        from .files import read_file
        client = anthropic.Anthropic()
        def turn(messages, tools):
            reply = client.messages.create(model="m", messages=messages, tools=tools)
            for block in reply.content:
                match block.name:
                    case "read_file":
                        messages.append(read_file(**block.input))
                    case _:
                        messages.append(f"unknown tool {block.name}")
        """,
        line=9,
        column=32,
        note="a match on the tool name the model chose (the function is imported: no fix here)",
    ),
    Invalid(
        code="""
        import asyncio, json
        import openai
        client = openai.AsyncOpenAI()
        HANDLERS = {}
        async def call_one(fn_id, raw):
            return HANDLERS.get(fn_id)(**json.loads(raw))
        async def turn(messages, tools):
            reply = await client.chat.completions.create(model="m", messages=messages, tools=tools)
            calls = reply.choices[0].message.tool_calls or []
            pairs = [(c.function.name, c.function.arguments) for c in calls]
            return await asyncio.gather(*(call_one(fn_id, raw) for fn_id, raw in pairs))
        """,
        line=6,
        column=11,
        note="the chosen name followed through a tuple, a generator's target and a parameter",
    ),
    Invalid(
        code="""
        import re
        from openai import OpenAI
        client = OpenAI()
        class WebAgent:
            def __init__(self, page):
                self.page = page
            def act(self, task):
                for _ in range(20):
                    reply = client.chat.completions.create(model="m", messages=[task])
                    text = reply.choices[0].message.content
                    match = re.search(r"ACTION: (\\w+) VALUE: (.*)", text)
                    action, value = match.group(1), match.group(2)
                    if action == "GOTO":
                        self.page.goto(value)
                    elif action == "TYPE":
                        self.page.keyboard.type(value)
                    elif action == "STOP":
                        return
        """,
        line=13,
        column=12,
        note="a chain on the model's words driving an object of no known type (a browser page)",
    ),
)

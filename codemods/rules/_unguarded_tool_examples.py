"""The examples of UnguardedTool: flagged and accepted code, and the fixed form of what
`guardkit fix` fixes (checked by tests/static/test_rules.py, shown in docs/rules.md)."""

from __future__ import annotations

from .base import Invalid, Valid

__all__ = ["INVALID", "USE_INSTEAD", "VALID"]

USE_INSTEAD = """
    import guardkit
    from langchain_core.tools import tool
    @tool
    @guardkit.tool()
    def search(query: str) -> str:
        return query
    """

VALID: tuple[Valid, ...] = (
    Valid(
        code="""
        import guardkit
        from langchain_core.tools import tool
        @tool
        @guardkit.tool()
        def search(query: str) -> str:
            return query
        """
    ),
    Valid(
        code="""
        import guardkit
        from crewai.tools import tool
        guarded = guardkit.tool(name="lookup")
        @tool("lookup")
        @guarded
        def lookup(q: str) -> str:
            return q
        """,
        note="wrapped indirectly through an alias",
    ),
    Valid(
        code="""
        import guardkit
        from langchain.tools import Tool
        def search(q: str) -> str:
            return q
        search_tool = Tool(name="search", func=guardkit.tool()(search), description="d")
        """,
        note="wrapped at registration",
    ),
    Valid(
        code="""
        from mcp.server.fastmcp import FastMCP
        mcp = FastMCP("demo")
        def helper(x: int) -> int:
            return x
        """,
        note="a plain function is not a tool",
    ),
    Valid(
        code="""
        from smolagents import Tool
        class Weather(Tool):
            def forward(self, city: str) -> str:
                self.guard.authorize("weather", {"city": city}, 0)
                return city
        """,
        note="a tool that asks the guard itself",
    ),
    Valid(
        code="""
        import guardkit
        from pydantic_ai import Agent
        agent = guardkit.Agent()
        @agent.tool()
        def roll() -> int:
            return 4
        """,
        note="agent.tool of a guardkit agent is the guard",
    ),
    Valid(
        code="""
        import guardkit
        from fastmcp import FastMCP
        mcp = FastMCP("files")
        @mcp.tool()
        @guardkit.tool()
        def read_file(path: str) -> str:
            return path
        """
    ),
    Valid(
        code="""
        from langchain.agents import create_agent
        from guardkit.plugins.langchain import GuardMiddleware
        def search(query: str) -> str:
            return query
        agent = create_agent("openai:gpt-4o", tools=[search], middleware=[GuardMiddleware()])
        """,
        note="tools of an agent built with guardkit's middleware",
    ),
    Valid(
        code="""
        from mcp.server.fastmcp import FastMCP
        from guardkit.plugins.mcp import guard_server
        mcp = FastMCP("files")
        @mcp.tool()
        def delete_file(path: str) -> None:
            pass
        guard_server(mcp)
        """,
        note="an MCP server wrapped by guard_server",
    ),
    Valid(
        code="""
        import guardkit
        from mcp.server import Server
        server = Server("files")
        def remove(path: str) -> str:
            return path
        @server.call_tool()
        async def call_tool(name: str, arguments: dict) -> list:
            guardkit.current_agent().authorize(name, arguments)
            match name:
                case "remove":
                    return [remove(arguments["path"])]
                case _:
                    raise ValueError(name)
        """,
        note="an MCP call_tool handler that asks the guard before dispatching gates its tools",
    ),
    Valid(
        code="""
        from mcp.server import Server
        from mcp.types import Tool
        server = Server("files")
        @server.list_tools()
        async def list_tools() -> list[Tool]:
            return [Tool(name="remove", description="Remove a file", inputSchema={})]
        """,
        note="listing tool specs runs nothing",
    ),
    Valid(
        code="""
        from mcp.server import Server
        server = Server("notes")
        class Handler:
            def run(self, args: dict) -> list:
                raise NotImplementedError
        class Append(Handler):
            def run(self, args: dict) -> list:
                return [args["text"]]
        HANDLERS: dict[str, Handler] = {}
        def handler_for(name: str) -> Handler:
            return HANDLERS[name]
        @server.call_tool()
        async def call_tool(name: str, arguments: dict) -> list:
            if not guard.authorize(name, arguments):
                return []
            return handler_for(name).run(arguments)
        """,
        note="a typed lookup behind a guard request: the implementations are gated",
    ),
    Valid(
        code="""
        import sys
        def build(args): return args
        def clean(args): return args
        class Cli:
            def __init__(self):
                self._commands = {"build": build, "clean": clean}
            def run(self, command: str, *args):
                return self._commands[command](*args)
        Cli().run(sys.argv[1], *sys.argv[2:])
        """,
        note="a table picked by a parameter that no tool forwards to: commands a person typed",
    ),
)

INVALID: tuple[Invalid, ...] = (
    Invalid(
        code="""
        from langchain_core.tools import tool as lc_tool
        @lc_tool
        def search(query: str) -> str:
            return query
        """,
        line=3,
        column=0,
        expected_fix="""
            from langchain_core.tools import tool as lc_tool
            import guardkit

            @lc_tool
            @guardkit.tool()
            def search(query: str) -> str:
                return query
            """,
    ),
    Invalid(
        code="""
        from agents import function_tool
        @function_tool
        async def fetch(url: str) -> str:
            return url
        """,
        line=3,
        column=0,
        expected_fix="""
            from agents import function_tool
            import guardkit

            @function_tool
            @guardkit.tool()
            async def fetch(url: str) -> str:
                return url
            """,
    ),
    Invalid(
        code="""
        from mcp.server.fastmcp import FastMCP
        mcp = FastMCP("files")
        @mcp.tool()
        def delete_file(path: str) -> None:
            pass
        """,
        line=4,
        column=0,
        expected_fix="""
            from mcp.server.fastmcp import FastMCP
            import guardkit

            mcp = FastMCP("files")
            @mcp.tool()
            @guardkit.tool()
            def delete_file(path: str) -> None:
                pass
            """,
    ),
    Invalid(
        code="""
        from smolagents import Tool
        class Weather(Tool):
            name = "weather"
            def forward(self, city: str) -> str:
                return city
        """,
        line=4,
        column=4,
    ),
    Invalid(
        code="""
        import guardkit
        from langchain_core.tools import tool
        @guardkit.tool()
        @tool
        def search(q: str) -> str:
            return q
        """,
        line=5,
        column=0,
        note="guard above the framework decorator",
    ),
    Invalid(
        code="""
        from langchain.tools import Tool
        def search(q: str) -> str:
            return q
        tools = [Tool(name="search", func=search, description="web search")]
        """,
        line=2,
        column=0,
        expected_fix="""
            from langchain.tools import Tool
            import guardkit

            @guardkit.tool()
            def search(q: str) -> str:
                return q
            tools = [Tool(name="search", func=search, description="web search")]
            """,
    ),
    Invalid(
        code="""
        from pydantic_ai import Agent
        agent = Agent("openai:gpt-4o")
        @agent.tool_plain
        def roll() -> int:
            return 4
        """,
        line=4,
        column=0,
        expected_fix="""
            from pydantic_ai import Agent
            import guardkit

            agent = Agent("openai:gpt-4o")
            @agent.tool_plain
            @guardkit.tool()
            def roll() -> int:
                return 4
            """,
    ),
    Invalid(
        code="""
        from crewai.tools import tool
        @tool("Search the web")
        def search(query: str) -> str:
            return query
        """,
        line=3,
        column=0,
        note="CrewAI",
        expected_fix="""
            from crewai.tools import tool
            import guardkit

            @tool("Search the web")
            @guardkit.tool()
            def search(query: str) -> str:
                return query
            """,
    ),
    Invalid(
        code="""
        from smolagents import tool
        @tool
        def get_time(zone: str) -> str:
            return zone
        """,
        line=3,
        column=0,
        note="smolagents",
    ),
    Invalid(
        code="""
        from openai import OpenAI
        class Calculator:
            def run(self, expression: str) -> str:
                return expression
        client = OpenAI()
        agent = make_agent(client, tools=[Calculator()])
        """,
        line=3,
        column=4,
        note="a class registered in tools=[...]",
        expected_fix="""
            from openai import OpenAI
            import guardkit

            class Calculator:
                @guardkit.tool(name="Calculator")
                def run(self, expression: str) -> str:
                    return expression
            client = OpenAI()
            agent = make_agent(client, tools=[Calculator()])
            """,
    ),
    Invalid(
        code="""
        def get_time(zone: str) -> str:
            return zone
        TOOL_FUNCTIONS = {"get_time": get_time}
        """,
        line=1,
        column=0,
        note="a tool table handed to a loop elsewhere",
        expected_fix="""
            import guardkit

            @guardkit.tool()
            def get_time(zone: str) -> str:
                return zone
            TOOL_FUNCTIONS = {"get_time": get_time}
            """,
    ),
    Invalid(
        code="""
        from swarm import Agent
        def transfer_funds(account: str, amount: int) -> str:
            return f"sent {amount} to {account}"
        banker = Agent(name="Banker", functions=[transfer_funds])
        """,
        line=2,
        column=0,
        note="a plain function handed over in functions=[...]",
        expected_fix="""
            from swarm import Agent
            import guardkit

            @guardkit.tool()
            def transfer_funds(account: str, amount: int) -> str:
                return f"sent {amount} to {account}"
            banker = Agent(name="Banker", functions=[transfer_funds])
            """,
    ),
    Invalid(
        code="""
        from agents.decorators import tool
        @tool
        def delete_branch(name: str) -> str:
            return name
        """,
        line=3,
        column=0,
        note="agents.decorators.tool",
        expected_fix="""
            from agents.decorators import tool
            import guardkit

            @tool
            @guardkit.tool()
            def delete_branch(name: str) -> str:
                return name
            """,
    ),
    Invalid(
        code="""
        from mcp.server import MCPServer
        server = MCPServer("files")
        @server.tool()
        def write_file(path: str, text: str) -> None:
            open(path, "w").write(text)
        """,
        line=4,
        column=0,
        note="mcp 2.x MCPServer",
        expected_fix="""
            from mcp.server import MCPServer
            import guardkit

            server = MCPServer("files")
            @server.tool()
            @guardkit.tool()
            def write_file(path: str, text: str) -> None:
                open(path, "w").write(text)
            """,
    ),
    Invalid(
        code="""
        import anthropic
        client = anthropic.Anthropic()
        class BashTool:
            def execute(self, command: str) -> str:
                return command
        TOOLS = {"bash": BashTool}
        def run(block):
            return TOOLS[block.name]().execute(**block.input)
        """,
        line=4,
        column=4,
        note="a tool class reached through a registry",
        expected_fix="""
            import anthropic
            import guardkit

            client = anthropic.Anthropic()
            class BashTool:
                @guardkit.tool(name="BashTool")
                def execute(self, command: str) -> str:
                    return command
            TOOLS = {"bash": BashTool}
            def run(block):
                return TOOLS[block.name]().execute(**block.input)
            """,
    ),
    Invalid(
        code="""
        import anthropic
        import subprocess
        from .base import ToolSpec
        def execute_shell(code: str) -> str:
            return subprocess.run(code, shell=True, capture_output=True).stdout
        def examples() -> str:
            return "ls"
        tool = ToolSpec(name="sh", desc="Run", execute=execute_shell, examples=examples)
        """,
        line=4,
        column=0,
        note="a tool spec: name, description and the function that runs it",
        expected_fix="""
            import anthropic
            import subprocess
            from .base import ToolSpec
            import guardkit

            @guardkit.tool()
            def execute_shell(code: str) -> str:
                return subprocess.run(code, shell=True, capture_output=True).stdout
            def examples() -> str:
                return "ls"
            tool = ToolSpec(name="sh", desc="Run", execute=execute_shell, examples=examples)
            """,
    ),
    Invalid(
        code="""
        from assistant import Assistant
        class Debugger:
            def run_command(self, command: str) -> str:
                return command
            def show_source(self, name: str) -> str:
                return name
            def functions(self):
                found = [self.run_command]
                if self.has_sources():
                    found.append(self.show_source)
                return found
            def start(self):
                functions = self.functions()
                return Assistant(instructions="debug", functions=functions)
        """,
        line=5,
        column=4,
        note="bound methods listed by a helper, handed over through a local variable",
        expected_fix="""
            from assistant import Assistant
            import guardkit

            class Debugger:
                @guardkit.tool()
                def run_command(self, command: str) -> str:
                    return command
                @guardkit.tool()
                def show_source(self, name: str) -> str:
                    return name
                def functions(self):
                    found = [self.run_command]
                    if self.has_sources():
                        found.append(self.show_source)
                    return found
                def start(self):
                    functions = self.functions()
                    return Assistant(instructions="debug", functions=functions)
            """,
    ),
    Invalid(
        code="""
        from fastmcp import FastMCP
        class NotesServer(FastMCP):
            def setup(self, read_only: bool) -> None:
                async def append_note(text: str) -> str:
                    return text
                handler = append_note
                if not read_only:
                    self.tool(handler, name="append-note")
        """,
        line=4,
        column=8,
        note="a nested function registered by a call on a FastMCP subclass",
        expected_fix="""
            from fastmcp import FastMCP
            import guardkit

            class NotesServer(FastMCP):
                def setup(self, read_only: bool) -> None:
                    @guardkit.tool()
                    async def append_note(text: str) -> str:
                        return text
                    handler = append_note
                    if not read_only:
                        self.tool(handler, name="append-note")
            """,
    ),
    Invalid(
        code="""
        import os
        from google.adk.agents import Agent
        def plan_query(question: str) -> str:
            return question
        def plan_query_fast(question: str) -> str:
            return question
        agent = Agent(
            name="db",
            tools=[plan_query_fast if os.getenv("FAST") else plan_query],
        )
        """,
        line=3,
        column=0,
        note="either branch of a conditional in the tool list",
        expected_fix="""
            import os
            from google.adk.agents import Agent
            import guardkit

            @guardkit.tool()
            def plan_query(question: str) -> str:
                return question
            @guardkit.tool()
            def plan_query_fast(question: str) -> str:
                return question
            agent = Agent(
                name="db",
                tools=[plan_query_fast if os.getenv("FAST") else plan_query],
            )
            """,
    ),
    Invalid(
        code="""
        from mcp.server import Server
        server = Server("vcs")
        def commit(message: str) -> str:
            return message
        @server.call_tool()
        async def call_tool(name: str, arguments: dict) -> list:
            match name:
                case "commit":
                    result = commit(arguments["message"])
                    return [result]
                case _:
                    raise ValueError(f"unknown tool {name}")
        """,
        line=3,
        column=0,
        note="an MCP low-level handler's match on the tool name: the function a case runs is the "
        "tool",
        expected_fix="""
            from mcp.server import Server
            import guardkit

            server = Server("vcs")
            @guardkit.tool()
            def commit(message: str) -> str:
                return message
            @server.call_tool()
            async def call_tool(name: str, arguments: dict) -> list:
                match name:
                    case "commit":
                        result = commit(arguments["message"])
                        return [result]
                    case _:
                        raise ValueError(f"unknown tool {name}")
            """,
    ),
    Invalid(
        code="""
        import json
        import shutil
        from mcp.server import Server
        server = Server("files")
        def to_text(value) -> list:
            return [json.dumps(value)]
        @server.call_tool()
        async def call_tool(name: str, arguments: dict) -> list:
            if name == "move_file":
                shutil.move(arguments["src"], arguments["dst"])
                return to_text({"moved": arguments["dst"]})
            raise ValueError(f"unknown tool {name}")
        """,
        line=9,
        column=4,
        note="a branch that acts on the arguments itself and calls the project only to format "
        "its result: the branch is the tool, not the formatter",
    ),
    Invalid(
        code="""
        import json
        from openai import OpenAI
        client = OpenAI()
        def search(query):
            return query
        def fetch(url):
            return url
        def run_tool(name, arguments, online):
            tools = {"search": search}
            if online:
                tools["fetch"] = fetch
            return tools[name](**arguments)
        def step(messages):
            reply = client.chat.completions.create(model="m", messages=messages, tools=[])
            for call in reply.choices[0].message.tool_calls or []:
                run_tool(call.function.name, json.loads(call.function.arguments), online=True)
        """,
        line=6,
        column=0,
        note="an entry added to a name table after its literal (when a setting allows it)",
        expected_fix="""
            import json
            from openai import OpenAI
            import guardkit

            client = OpenAI()
            @guardkit.tool()
            def search(query):
                return query
            @guardkit.tool()
            def fetch(url):
                return url
            def run_tool(name, arguments, online):
                tools = {"search": search}
                if online:
                    tools["fetch"] = fetch
                return tools[name](**arguments)
            def step(messages):
                reply = client.chat.completions.create(model="m", messages=messages, tools=[])
                for call in reply.choices[0].message.tool_calls or []:
                    run_tool(call.function.name, json.loads(call.function.arguments), online=True)
            """,
    ),
    Invalid(
        code="""
        import shutil
        from mcp.server import Server
        server = Server("files")
        async def file_tools(name: str, arguments: dict) -> str:
            if name == "fs_remove_tree":
                shutil.rmtree(arguments["path"])
            return "ok"
        @server.call_tool()
        async def call_tool(name: str, arguments: dict) -> list:
            if name.startswith("fs_"):
                return [await file_tools(name, arguments)]
            raise ValueError(f"unknown tool {name}")
        """,
        line=4,
        column=0,
        note="an MCP low-level handler that hands a group of tools (a name prefix) to a helper: "
        "the helper is a tool",
        expected_fix="""
            import shutil
            from mcp.server import Server
            import guardkit

            server = Server("files")
            @guardkit.tool()
            async def file_tools(name: str, arguments: dict) -> str:
                if name == "fs_remove_tree":
                    shutil.rmtree(arguments["path"])
                return "ok"
            @server.call_tool()
            async def call_tool(name: str, arguments: dict) -> list:
                if name.startswith("fs_"):
                    return [await file_tools(name, arguments)]
                raise ValueError(f"unknown tool {name}")
            """,
    ),
    Invalid(
        code="""
        import httpx
        from mcp.server import Server
        server = Server("weather")
        async def get(client, url):
            return (await client.get(url)).json()
        @server.call_tool()
        async def handle(name: str, arguments: dict) -> list:
            if name == "forecast":
                async with httpx.AsyncClient() as client:
                    point = await get(client, f"/points/{arguments['at']}")
                    return [await get(client, point["forecast"])]
            raise ValueError(name)
        """,
        line=8,
        column=4,
        note="a branch that does the work itself (several calls) is the tool; no decorator fits "
        "a branch",
    ),
    Invalid(
        code="""
        from mcp.server import Server
        server = Server("fetch")
        @server.call_tool()
        async def call_tool(name, arguments: dict) -> list:
            url = arguments["url"]
            return [url]
        """,
        line=4,
        column=0,
        note="a handler that never looks at the tool name is the one tool itself",
    ),
    Invalid(
        code="""
        from mcp.server import Server
        server = Server("clock")
        class Clock:
            def convert(self, source: str, target: str) -> str:
                return target
        clock = Clock()
        @server.call_tool()
        async def call_tool(name: str, arguments: dict) -> list:
            if name == "convert":
                if "target" not in arguments:
                    raise ValueError("target is required")
                return [clock.convert(arguments["source"], arguments["target"])]
            raise ValueError(name)
        """,
        line=4,
        column=4,
        note="a method of the project's own object, called from a branch",
        expected_fix="""
            from mcp.server import Server
            import guardkit

            server = Server("clock")
            class Clock:
                @guardkit.tool()
                def convert(self, source: str, target: str) -> str:
                    return target
            clock = Clock()
            @server.call_tool()
            async def call_tool(name: str, arguments: dict) -> list:
                if name == "convert":
                    if "target" not in arguments:
                        raise ValueError("target is required")
                    return [clock.convert(arguments["source"], arguments["target"])]
                raise ValueError(name)
            """,
    ),
    Invalid(
        code="""
        from mcp.server import Server
        server = Server("notes")
        class Handler:
            def run(self, args: dict) -> list:
                raise NotImplementedError
        class Append(Handler):
            def run(self, args: dict) -> list:
                return [args["text"]]
        HANDLERS: dict[str, Handler] = {}
        def handler_for(name: str) -> Handler:
            return HANDLERS[name]
        @server.call_tool()
        async def call_tool(name: str, arguments: dict) -> list:
            handler = handler_for(name)
            return handler.run(arguments)
        """,
        line=7,
        column=4,
        note="a lookup whose type is known: the implementations of the method it calls are the "
        "tools (the abstract one is not)",
        expected_fix="""
            from mcp.server import Server
            import guardkit

            server = Server("notes")
            class Handler:
                def run(self, args: dict) -> list:
                    raise NotImplementedError
            class Append(Handler):
                @guardkit.tool(name="Append")
                def run(self, args: dict) -> list:
                    return [args["text"]]
            HANDLERS: dict[str, Handler] = {}
            def handler_for(name: str) -> Handler:
                return HANDLERS[name]
            @server.call_tool()
            async def call_tool(name: str, arguments: dict) -> list:
                handler = handler_for(name)
                return handler.run(arguments)
            """,
    ),
    Invalid(
        code="""
        from langchain_core.tools import BaseTool
        def create_refund(context, payment: str) -> str:
            return payment
        def list_refunds(context) -> list:
            return []
        class Api:
            def __init__(self):
                self._dispatch = {"create_refund": create_refund, "list_refunds": list_refunds}
            def run(self, method: str, **kwargs) -> str:
                function = self._dispatch[method]
                return function(None, **kwargs)
        class PaymentsTool(BaseTool):
            api: Api
            method: str
            def _run(self, **kwargs) -> str:
                return self.api.run(self.method, **kwargs)
        """,
        line=2,
        column=0,
        note="the functions of a name table whose dispatch helper a tool forwards to (the "
        "generic tool class is the adapter; the operations are the tools)",
        expected_fix="""
            from langchain_core.tools import BaseTool
            import guardkit

            @guardkit.tool()
            def create_refund(context, payment: str) -> str:
                return payment
            @guardkit.tool()
            def list_refunds(context) -> list:
                return []
            class Api:
                def __init__(self):
                    self._dispatch = {"create_refund": create_refund, "list_refunds": list_refunds}
                def run(self, method: str, **kwargs) -> str:
                    function = self._dispatch[method]
                    return function(None, **kwargs)
            class PaymentsTool(BaseTool):
                api: Api
                method: str
                @guardkit.tool(name="PaymentsTool")
                def _run(self, **kwargs) -> str:
                    return self.api.run(self.method, **kwargs)
            """,
    ),
    Invalid(
        code="""
        import llm
        def shell(command: str) -> str:
            return command
        @llm.hookimpl
        def register_tools(register):
            register(shell)
        """,
        line=2,
        column=0,
        note="a tool registered through llm's plugin hook",
        expected_fix="""
            import llm
            import guardkit

            @guardkit.tool()
            def shell(command: str) -> str:
                return command
            @llm.hookimpl
            def register_tools(register):
                register(shell)
            """,
    ),
)

from agents import function_tool
from langchain_core.tools import BaseTool, StructuredTool, tool
from llama_index.core.tools import FunctionTool
from pydantic_ai import Tool

from app.funcs import transfer


def shell(command: str) -> str:
    """Run a shell command."""
    return command


async def fetch(url: str) -> str:
    """Fetch a page."""
    return url


def calendar(day: str) -> str:
    """Read the calendar."""
    return day


async def archive(path: str) -> str:
    """Archive a folder."""
    return path


shell_tool = tool(shell)
fetch_tool = FunctionTool.from_defaults(async_fn=fetch)
calendar_tool = function_tool(calendar)
archive_tool = StructuredTool.from_function(coroutine=archive)
transfer_tool = FunctionTool.from_defaults(transfer)


def proxy(server, name: str) -> Tool:
    async def forward(arg: str) -> str:
        return await server.call(name, arg)

    return Tool(forward, name=name)


def as_tools(functions):
    return [f if isinstance(f, BaseTool) else tool(f) for f in functions]


def summarise(text: str) -> str:
    """Summarise a text."""
    return text[:100]


NOTE_TOOLS = as_tools([summarise])

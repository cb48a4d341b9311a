"""Tools of agent frameworks the corpus holds no project of, recognised from the framework's
own API: a tool decorator (Strands, Agno, Haystack, Semantic Kernel), a constructor given the
callable (Haystack, AutoGen, DSPy, CAMEL, Google ADK), a subclass of a tool base class with the
method the framework runs (agency-swarm, Google ADK, AutoGen, LlamaIndex)."""

from __future__ import annotations

import pytest
from guardkit.codemods.scanner import scan_source

BODY = "    import subprocess\n    return subprocess.run(command, shell=True).returncode\n"

DECORATED = [
    ("strands", "tool", "@tool"),
    ("agno.tools", "tool", "@tool(show_result=True)"),
    ("haystack.tools", "tool", "@tool"),
    ("semantic_kernel.functions", "kernel_function", '@kernel_function(name="shell")'),
]


@pytest.mark.parametrize(("module", "name", "decorator"), DECORATED)
def test_a_framework_tool_decorator_makes_a_tool(module: str, name: str, decorator: str) -> None:
    source = f"from {module} import {name}\n\n\n{decorator}\ndef shell(command: str):\n{BODY}"
    found = [(f.rule, f.symbol) for f in scan_source(source, "tools.py").findings]
    assert found == [("GK201", "shell")]


CONSTRUCTED = [
    (
        "haystack.tools",
        "Tool",
        'Tool(name="shell", description="d", parameters={}, function=shell)',
    ),
    ("haystack.tools", "create_tool_from_function", "create_tool_from_function(shell)"),
    ("autogen_core.tools", "FunctionTool", 'FunctionTool(shell, description="run a command")'),
    ("dspy", "Tool", "Tool(shell)"),
    ("camel.toolkits", "FunctionTool", "FunctionTool(shell)"),
    ("google.adk.tools", "LongRunningFunctionTool", "LongRunningFunctionTool(func=shell)"),
    # where the package defines what it re-exports
    ("camel.toolkits.function_tool", "FunctionTool", "FunctionTool(shell)"),
    ("llama_index.core.tools.function_tool", "FunctionTool", "FunctionTool.from_defaults(shell)"),
    ("autogen_core.tools._function_tool", "FunctionTool", "FunctionTool(shell, description='d')"),
]


@pytest.mark.parametrize(("module", "name", "made"), CONSTRUCTED)
def test_a_framework_tool_constructor_makes_a_tool(module: str, name: str, made: str) -> None:
    source = f"from {module} import {name}\n\n\ndef shell(command: str):\n{BODY}\n\nTOOL = {made}\n"
    found = [(f.rule, f.symbol) for f in scan_source(source, "tools.py").findings]
    assert found == [("GK201", "shell")]


BASES = [
    ("agency_swarm.tools", "BaseTool", "run", "self"),
    ("google.adk.tools", "BaseTool", "run_async", "self, *, args, tool_context"),
    ("autogen_core.tools", "BaseTool", "run", "self, args, cancellation_token"),
    ("llama_index.core.tools", "BaseTool", "__call__", "self, command"),
    ("crewai.tools.base_tool", "BaseTool", "_run", "self, command"),
]


@pytest.mark.parametrize(("module", "base", "method", "params"), BASES)
def test_a_subclass_of_a_framework_tool_base_is_a_tool(
    module: str, base: str, method: str, params: str
) -> None:
    source = (
        f"from {module} import {base}\n\n\nclass Shell({base}):\n"
        f"    def {method}({params}):\n"
        "        import os\n        return os.system('make')\n\n"
        "    def describe(self):\n        return 'runs make'\n"
    )
    found = [(f.rule, f.symbol) for f in scan_source(source, "tools.py").findings]
    assert found == [("GK201", f"Shell.{method}")]


@pytest.mark.parametrize(
    "module", ["drawing.tools", "drawing.tools.base", "crewai_like.tools.base"]
)
def test_a_class_of_another_base_with_the_same_name_is_no_tool(module: str) -> None:
    source = (
        f"from {module} import BaseTool\n\n\nclass Pen(BaseTool):\n"
        "    def run(self):\n        return 'line'\n"
    )
    assert scan_source(source, "tools.py").findings == ()


def test_a_method_a_toolkit_hands_to_a_tool_constructor_is_a_tool() -> None:
    source = (
        "from camel.toolkits import FunctionTool\n\n\nclass Files:\n"
        "    def remove(self, path: str) -> None:\n        import os\n        os.remove(path)\n\n"
        "    def _root(self) -> str:\n        return '/'\n\n"
        "    def get_tools(self) -> list:\n        return [FunctionTool(self.remove)]\n"
    )
    found = [(f.rule, f.symbol) for f in scan_source(source, "files.py").findings]
    assert found == [("GK201", "Files.remove")]


AUTOGEN = """\
import autogen

assistant = autogen.AssistantAgent("helper", llm_config={})
runner = autogen.UserProxyAgent("runner")


@runner.register_for_execution()
@assistant.register_for_llm(description="Delete a file")
def delete_file(path: str) -> str:
    return path


def send_mail(to: str) -> str:
    return to


def quiet(text: str) -> str:
    return text


assistant.register_for_llm(description="Send a mail")(send_mail)
runner.register_for_execution()(send_mail)
runner.register_for_execution()(quiet)
"""


def test_autogen_tools_registered_for_the_model_by_decorator_or_by_hand() -> None:
    found = [(f.rule, f.symbol) for f in scan_source(AUTOGEN, "agents.py").findings]
    assert sorted(found) == [("GK201", "delete_file"), ("GK201", "send_mail")]


MODULE_TOOL = """\
import subprocess

from strands.types.tools import ToolUse

TOOL_SPEC = {"name": "run_cmd", "description": "Run a command", "inputSchema": {"json": {}}}


def run_cmd(tool: ToolUse, **kwargs):
    return subprocess.run(tool["input"]["cmd"], shell=True).returncode


def helper(text):
    return text.strip()
"""


def test_a_strands_module_tool_is_the_function_its_spec_names() -> None:
    found = [(f.rule, f.symbol) for f in scan_source(MODULE_TOOL, "run_cmd.py").findings]
    assert found == [("GK201", "run_cmd")]
    # the same spec without the framework is a dict like any other
    plain = MODULE_TOOL.replace("from strands.types.tools import ToolUse", "ToolUse = dict")
    assert scan_source(plain, "run_cmd.py").findings == ()

"""AddToolGuard before/after pairs; assert_codemod adds the idempotency and re-scan checks."""

from __future__ import annotations

import pytest
from guardkit.codemods.testing import assert_codemod
from guardkit.codemods.transforms import AddToolGuard


def test_langchain_tool_gets_guard_below_framework_decorator() -> None:
    assert_codemod(
        AddToolGuard,
        """
        from langchain_core.tools import tool


        @tool
        def search(query: str) -> str:
            \"\"\"Search the web.\"\"\"  # keep this comment
            return query
        """,
        """
        from langchain_core.tools import tool
        import guardkit


        @tool
        @guardkit.tool()
        def search(query: str) -> str:
            \"\"\"Search the web.\"\"\"  # keep this comment
            return query
        """,
    )


def test_async_function_tool_and_mcp_tool_with_arguments() -> None:
    assert_codemod(
        AddToolGuard,
        """
        import guardkit
        from agents import function_tool
        from mcp.server.fastmcp import FastMCP

        mcp = FastMCP("files")

        @function_tool(name_override="fetch")
        async def fetch(url: str) -> str:
            return url

        @mcp.tool(description="Delete a file")
        def delete(path: str) -> None:
            # dangerous
            pass
        """,
        """
        import guardkit
        from agents import function_tool
        from mcp.server.fastmcp import FastMCP

        mcp = FastMCP("files")

        @function_tool(name_override="fetch")
        @guardkit.tool()
        async def fetch(url: str) -> str:
            return url

        @mcp.tool(description="Delete a file")
        @guardkit.tool()
        def delete(path: str) -> None:
            # dangerous
            pass
        """,
    )


def test_tool_class_method_and_dispatch_table_functions() -> None:
    assert_codemod(
        AddToolGuard,
        """
        import anthropic
        from langchain_core.tools import BaseTool

        class Weather(BaseTool):
            name = "weather"

            def _run(self, city: str) -> str:
                return city

        def add(a: int, b: int) -> int:
            return a + b

        TOOLS = {"add": add}

        def run(block):
            return TOOLS[block.name](**block.input)
        """,
        """
        import anthropic
        from langchain_core.tools import BaseTool
        import guardkit

        class Weather(BaseTool):
            name = "weather"

            @guardkit.tool(name="weather")
            def _run(self, city: str) -> str:
                return city

        @guardkit.tool()
        def add(a: int, b: int) -> int:
            return a + b

        TOOLS = {"add": add}

        def run(block):
            return TOOLS[block.name](**block.input)
        """,
    )


def test_tools_run_in_the_namespace_of_the_models_code_are_decorated() -> None:
    assert_codemod(
        AddToolGuard,
        """
        from langchain_core.tools import tool

        @tool
        def add(a: int, b: int) -> int:
            \"\"\"Add.\"\"\"
            return a + b

        def sandbox(code: str) -> dict:
            namespace = {"add": add.func}
            exec(code, namespace)
            return namespace
        """,
        """
        from langchain_core.tools import tool
        import guardkit

        @tool
        @guardkit.tool()
        def add(a: int, b: int) -> int:
            \"\"\"Add.\"\"\"
            return a + b

        def sandbox(code: str) -> dict:
            namespace = {"add": add.func}
            exec(code, namespace)
            return namespace
        """,
    )


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            """
            from smolagents import tool
            @tool
            def wipe(path: str) -> str:
                \"\"\"Wipe.

                Args:
                    path: what to wipe.
                \"\"\"
                return path
            """,
            id="smolagents-validates-the-source-so-no-decorator",
        ),
        pytest.param(
            """
            import inspect
            from langchain_core.tools import tool
            @tool
            def search(q: str) -> str:
                return q
            STORED = {"search": inspect.getsource(search)}
            """,
            id="a-module-that-reads-tool-source-gets-no-decorator",
        ),
        pytest.param(
            """
            import guardkit
            from langchain_core.tools import tool
            @tool
            @guardkit.tool()
            def search(q: str) -> str:
                return q
            """,
            id="already-guarded",
        ),
        pytest.param(
            """
            from langchain_core.tools import tool
            def helper(q: str) -> str:
                return q
            """,
            id="no-tools",
        ),
        pytest.param(
            """
            import guardkit
            from langchain_core.tools import tool
            @guardkit.tool()
            @tool
            def search(q: str) -> str:
                return q
            """,
            id="guard-above-framework-is-reported-not-rewritten",
        ),
        pytest.param(
            """
            from langchain_core.tools import tool
            @tool
            def search(q: str) -> str:  # guardkit: ignore[GK201]
                return q
            """,
            id="suppressed",
        ),
    ],
)
def test_nothing_to_do(code: str) -> None:
    assert_codemod(AddToolGuard, code, None)

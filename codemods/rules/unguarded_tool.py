"""GK201: a function exposed to a model as a tool and not wrapped by a guard."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..analysis.facts import ModuleFacts
from ..findings import Finding
from . import _unguarded_tool_examples as examples
from .base import Rule, header_end


class UnguardedTool(Rule):
    ID = "GK201"
    MESSAGE = "tool {symbol} is exposed to the model ({how}) but not guarded{note}"
    EXPLANATION = (
        "A tool is code the model chooses to run, with arguments the model wrote. guardkit can "
        "only allow, deny, budget or hold a tool call for approval if the call passes through "
        "the guard. "
        "A tool counts as gated when it is wrapped by `guardkit.tool`/`agent.tool` (as a decorator "
        "below the framework's, or as `guardkit.tool()(fn)`), or when every dispatch path to it is "
        "preceded by a guard `request`/`authorize`. A guard decorator placed above a framework "
        "decorator wraps the framework's tool object, which the framework never calls through."
    )
    FIX = (
        "Add `@guardkit.tool()` directly above the `def` (below `@tool`, `@function_tool`, "
        "`@mcp.tool()`), or call `guard.authorize(name, args, cost)` before dispatching. "
        "`guardkit fix` inserts the decorator (AddToolGuard)."
    )
    USE_INSTEAD = examples.USE_INSTEAD
    LIMITS = (
        "A tool is found by how it reaches a model: a framework decorator or constructor, a "
        "`tools=`/`functions=` list, a name->function registry or a registered tool class. A "
        "tool registered through code the analysis cannot follow (`getattr`, string imports, "
        "plugin entry points) is missed; a framework integration (middleware, hooks, toolsets) "
        "gates every tool of the agent it is attached to."
    )
    FIXED_BY = "AddToolGuard"
    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        for tool in facts.tools:
            if not tool.gated:
                end = header_end(tool.node) if isinstance(tool.node, ast.stmt) else None
                yield cls.finding(
                    path,
                    tool.node,
                    symbol=tool.name,
                    fixable=tool.fixable,
                    end=end,
                    how=tool.how,
                    note=tool.note,
                )

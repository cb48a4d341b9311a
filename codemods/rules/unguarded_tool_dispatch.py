"""GK202: code that runs a model-chosen tool without asking the guard first."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from ..analysis.facts import ModuleFacts
from ..analysis.tree import dotted
from ..findings import Finding
from . import _unguarded_tool_dispatch_examples as examples
from .base import Rule


class UnguardedToolDispatch(Rule):
    ID = "GK202"
    MESSAGE = "tool dispatch {symbol} runs a model-chosen tool without a guard request"
    EXPLANATION = (
        "Hand-written agent loops send `tools=[...]` schemas to the model and then run whatever "
        "it picked through a name->function table (`TOOLS[name](**args)`), an `if name == "
        '"search":` chain or an MCP `@server.call_tool()` handler. If neither the dispatch site '
        "is preceded by a guard `request`/`authorize` nor every reachable function is wrapped by "
        "`guardkit.tool`, the model can run any listed tool with any arguments, unchecked."
    )
    FIX = (
        "Run the call through `guardkit.call_tool(name, args, fn)` (`await "
        "guardkit.acall_tool(...)` in async code): it asks the guard, runs the tool only if "
        "allowed, and returns the denial's sentence as the tool result; or wrap every function "
        "in the table with `@guardkit.tool()`. `guardkit fix` rewrites `F(**args)` dispatch "
        "sites so (GuardDispatch) and decorates the functions defined in the module."
    )
    USE_INSTEAD = examples.USE_INSTEAD
    LIMITS = (
        "A dispatch is a call whose callee is picked by a model-chosen name (a registry "
        "lookup, an `if name == ...` chain on a tool call's name). A guard request anywhere "
        "earlier in the same function counts for the dispatch; tables that are not keyed by "
        "tool names (config, event types) are not dispatch."
    )
    FIXED_BY = "AddToolGuard"
    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        imports = facts.summary["imports"]
        for site in facts.dispatches:
            if not site.guarded and not _handed_to_guardkit(site.node, imports):
                yield cls.finding(path, site.node, symbol=site.symbol, fixable=site.fixable)


#: guardkit's dispatch-site calls: what they are handed runs only if the guard allows it
_DISPATCH_CALLS = frozenset({"guardkit.call_tool", "guardkit.acall_tool"})


def _handed_to_guardkit(node: ast.AST, imports: Mapping[str, str]) -> bool:
    """A site that is a ``guardkit.call_tool(...)`` call, or a handler that returns one."""
    calls: list[ast.AST] = [node]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        calls = [n for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Return)]
        calls = [r.value for r in calls if isinstance(r, ast.Return) and r.value is not None]
        if not calls:
            return False
    for found in calls:
        call = found.value if isinstance(found, ast.Await) else found
        if not isinstance(call, ast.Call):
            return False
        name = dotted(call.func) or ""
        head, _, tail = name.partition(".")
        if ".".join(p for p in (imports.get(head, head), tail) if p) not in _DISPATCH_CALLS:
            return False
    return True

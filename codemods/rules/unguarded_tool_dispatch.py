"""GK202: code that runs a model-chosen tool without asking the guard first."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.facts import ModuleFacts
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
        "Call `guard.authorize(name, args, cost)` before dispatching (catch `ActionDenied` and "
        "return the denial to the model as the tool result), or wrap every function in the table "
        "with `@guardkit.tool()`. `guardkit fix` decorates the functions defined in the module."
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
        for site in facts.dispatches:
            if not site.guarded:
                yield cls.finding(path, site.node, symbol=site.symbol, fixable=site.fixable)

"""GK302: a guard denial that raises out of the agent loop."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..analysis.facts import ModuleFacts
from ..findings import Finding
from . import _denial_escapes_loop_examples as examples
from .base import Rule


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
        'result such as `{"type": "tool_result", "is_error": True, "content": str(denied)}`; '
        "at a dispatch site, `guardkit.call_tool(name, args, fn)` returns the denial as the "
        "result. `guardkit fix` rewrites dispatch sites of the form `F(**args)` so "
        "(GuardDispatch); other calls are left to you."
    )
    USE_INSTEAD = examples.USE_INSTEAD
    LIMITS = (
        "Checked inside loops that call a model in the same function; a denial raised in a "
        "helper the loop calls is not followed."
    )
    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        for node in facts.escapes:
            symbol = "raise" if isinstance(node, ast.Raise) else ast.unparse(node).split("(")[0]
            yield cls.finding(path, node, symbol=symbol, fixable=False)

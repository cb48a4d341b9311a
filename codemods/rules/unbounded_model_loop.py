"""GK101: a model call repeated by a loop that nothing bounds."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..analysis.facts import ModuleFacts
from ..findings import Finding
from . import _unbounded_model_loop_examples as examples
from .base import Rule, header_end


class UnboundedModelLoop(Rule):
    ID = "GK101"
    MESSAGE = (
        "unbounded model loop: {symbol} runs in a loop with no turn limit and no llm_turn gate"
    )
    EXPLANATION = (
        "An agent loop that calls a model until the model says it is done (`while True`, "
        '`while response.stop_reason == "tool_use"`) can run forever: a confused or manipulated '
        "model keeps asking for tools, and every turn costs tokens and may act on the world. "
        "A loop is bounded when it iterates a finite iterable (`for _ in range(n)`), compares a "
        "counter it "
        "updates against a limit, stops on a `max_turns`/`max_iterations` value, or asks the guard "
        "for an `llm_turn` on every iteration (the policy's turn budget then bounds it)."
    )
    FIX = (
        "Count turns and stop at a limit, or gate each model call with "
        "`with guardkit.model_turn():` (the policy's `llm_turn` budget then bounds the loop). "
        "`guardkit fix` turns `while True:` into `for _gk_turns in range(max_turns):` and gives "
        "other `while` loops a `_gk_turns` counter; where the function returns a value, "
        "running out of turns raises `RuntimeError` instead of returning `None` "
        "(BoundModelLoops)."
    )
    USE_INSTEAD = examples.USE_INSTEAD
    LIMITS = (
        "A bound is recognised by its shape (a `range`, a counter compared against a limit, a "
        "`max_*`/`*_limit` value, a method that raises on a limit); a bound hidden in a value "
        "the analysis cannot follow (a limit read from a config object's `__getattr__`) is "
        'missed and the loop reported. A limit that is infinite (`float("inf")`, '
        "`math.inf`, `sys.maxsize`) is no bound."
    )
    FIXED_BY = "BoundModelLoops"
    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        for loop, calls in facts.unbounded_loops:
            yield cls.finding(
                path,
                loop,
                symbol=calls[0].symbol,
                fixable=isinstance(loop, ast.While),
                end=header_end(loop),
            )
        for func, calls in facts.recursions:
            # reported at the ``def``; bounding a recursion takes a depth parameter its
            # callers must agree to, which is the maintainer's call, not a codemod's
            end = header_end(func)
            yield cls.finding(path, func, symbol=calls[0].symbol, fixable=False, end=end)

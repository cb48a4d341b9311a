"""GK102: a model call that is not preceded by an ``llm_turn`` guard request."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.facts import ModuleFacts
from ..findings import Finding
from . import _ungated_model_call_examples as examples
from .base import Rule


class UngatedModelCall(Rule):
    ID = "GK102"
    MESSAGE = "model call {symbol} is not gated by an llm_turn request"
    EXPLANATION = (
        "Every model turn spends budget and may start a chain of tool calls. guardkit's policy "
        "counts and limits turns through `llm_turn` requests; a model call that is not preceded by "
        "one (in the same loop body or function, with no other model call in between) is invisible "
        "to the turn budget, the rate limits and the ledger. Bounded loops are included: a counter "
        "limits one loop, the guard limits the whole agent."
    )
    FIX = (
        "Run the call inside `with guardkit.model_turn():` (`async with` in a coroutine), which "
        "asks the current agent's guard for an `llm_turn` and raises `guardkit.TurnDenied` "
        "when it is denied. `guardkit fix` inserts it around the statement (GateModelCalls): "
        "around a hand-written retry loop as a whole, and at the callers of a provider helper "
        "that a retry decorator (tenacity, backoff) wraps, so an attempt is never charged twice "
        "and a denial is never retried. A framework agent's whole run (`Runner.run`, "
        "`agent.invoke` on `create_agent`) is not one turn: attach the framework's guardkit "
        "integration instead (reported, not rewritten)."
    )
    USE_INSTEAD = examples.USE_INSTEAD
    LIMITS = (
        "Model calls are recognised by where the client came from and by the catalog; a "
        "client built by code the analysis cannot follow (a factory returning `Any` from "
        "another package) is not recognised. A gate counts for the next model call in the "
        "same function only."
    )
    FIXED_BY = "GateModelCalls"
    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        for call in facts.model_calls:
            if not call.gated:
                yield cls.finding(path, call.node, symbol=call.symbol, fixable=call.fixable)

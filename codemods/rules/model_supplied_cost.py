"""GK301: a guard cost read from the arguments the model wrote."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..analysis.facts import ModuleFacts
from ..findings import Finding
from . import _model_supplied_cost_examples as examples
from .base import Rule


class ModelSuppliedCost(Rule):
    ID = "GK301"
    MESSAGE = "cost {symbol} is taken from model-supplied arguments"
    EXPLANATION = (
        "Budgets only hold if the cost charged for an action is computed by trusted code. A cost "
        'read from the tool arguments (`cost=args["cost"]`, a tool parameter, the parsed '
        "`tool_call.function.arguments`) is chosen by the model, so a model (or a prompt "
        "injection) can declare every action free and spend without limit."
    )
    FIX = (
        "Compute the cost from trusted data: a price table keyed by tool name, the validated "
        "amount after checking it against the request, or a `cost=` function in the policy. No "
        "automatic fix."
    )
    USE_INSTEAD = examples.USE_INSTEAD
    LIMITS = (
        "Only the `cost` of guard calls is checked, and only reads of the arguments in the same "
        "function; a cost computed by a helper from the arguments is not followed."
    )
    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        for cost in facts.costs:
            yield cls.finding(path, cost, symbol=ast.unparse(cost), fixable=False)

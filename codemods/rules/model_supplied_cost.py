"""GK301: a guard cost read from the arguments the model wrote."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..analysis.facts import ModuleFacts
from ..findings import Finding
from .base import Invalid, Rule, Valid


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
    USE_INSTEAD = """
        import guardkit
        PRICES = {"search": 1}
        def run(guard, name, args):
            guard.authorize(name, args, PRICES[name])
        """
    LIMITS = (
        "Only the `cost` of guard calls is checked, and only reads of the arguments in the same "
        "function; a cost computed by a helper from the arguments is not followed."
    )
    VALID = (
        Valid(
            code="""
            import guardkit
            PRICES = {"search": 1}
            def run(guard, name, args):
                guard.authorize(name, args, PRICES[name])
            """
        ),
        Valid(
            code="""
            import guardkit
            @guardkit.tool(cost=2)
            def search(q: str) -> str:
                return q
            """
        ),
        Valid(
            code="""
            import guardkit
            def pay(agent, amount_cents: int):
                agent.authorize("pay", {"amount": amount_cents}, cost=price_of("pay"))
            """
        ),
    )
    INVALID = (
        Invalid(
            code="""
            import guardkit
            def run(guard, name, args):
                guard.authorize(name, args, args["cost"])
            """,
            line=3,
            column=32,
        ),
        Invalid(
            code="""
            import json
            import guardkit
            def step(agent, tool_call):
                args = json.loads(tool_call.function.arguments)
                agent.request(tool_call.function.name, args, cost=args.get("cost", 0))
            """,
            line=5,
            column=54,
        ),
        Invalid(
            code="""
            import guardkit
            def transfer(guard, amount: int, to: str) -> None:
                guard.authorize("transfer", {"to": to}, cost=amount)
            """,
            line=3,
            column=49,
            note="a parameter of the tool itself",
        ),
        Invalid(
            code="""
            import guardkit
            def step(guard, tool_call):
                guard.request("pay", {}, cost=tool_call.input["amount"])
            """,
            line=3,
            column=34,
            note="Anthropic tool_use input",
        ),
    )

    @classmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        for cost in facts.costs:
            yield cls.finding(path, cost, symbol=ast.unparse(cost), fixable=False)

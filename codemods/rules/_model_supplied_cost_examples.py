"""The examples of ModelSuppliedCost: flagged and accepted code, and the fixed form of what
`guardkit fix` fixes (checked by tests/static/test_rules.py, shown in docs/rules.md)."""

from __future__ import annotations

from .base import Invalid, Valid

__all__ = ["INVALID", "USE_INSTEAD", "VALID"]

USE_INSTEAD = """
    import guardkit
    PRICES = {"search": 1}
    def run(guard, name, args):
        guard.authorize(name, args, PRICES[name])
    """

VALID: tuple[Valid, ...] = (
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

INVALID: tuple[Invalid, ...] = (
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

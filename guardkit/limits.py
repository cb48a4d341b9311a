"""Pure functions of the guard's arithmetic: charges, cost validation and the deny checks."""

from __future__ import annotations

import math
from typing import Any

from guardkit.decisions import Denial, DenyCode, Severity
from guardkit.errors import InvalidInput
from guardkit.policy import MAX_INT, Policy, ToolRule

__all__ = [
    "allowed_in_window",
    "budget_check",
    "cap_and_rate_check",
    "charge",
    "check_cost",
]


def check_cost(cost: Any) -> int | None:
    """Validate a declared cost: None, or a finite whole number >= 0 (``3.0`` counts as 3)."""
    if cost is None:
        return None
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        raise InvalidInput(f"cost must be a number, got {type(cost).__name__}")
    if isinstance(cost, float):
        if not math.isfinite(cost):
            raise InvalidInput(f"cost must be finite, got {cost}")
        if not cost.is_integer():
            raise InvalidInput(
                f"cost must be a whole number of budget units, got {cost} "
                "(price in the smallest unit, e.g. cents)"
            )
        cost = int(cost)
    if cost < 0:
        raise InvalidInput(f"cost must be >= 0, got {cost}")
    if cost > MAX_INT:
        raise InvalidInput(f"cost must be at most {MAX_INT}, got {cost}")
    return int(cost)


def charge(rule: ToolRule | None, declared: int | None) -> int:
    """A request can raise the charge above the rule's cost, never lower it."""
    base = declared or 0
    return base if rule is None else max(base, rule.cost)


def cap_and_rate_check(
    policy: Policy, tool: str, rule: ToolRule, tool_count: int, allowed_in_window: int | None
) -> Denial | None:
    """The call-cap then rate-limit checks; ``allowed_in_window`` is None without a rate limit."""
    if rule.max_calls is not None and tool_count >= rule.max_calls:
        return Denial(
            reason={
                "code": DenyCode.TOOL_CALL_LIMIT.value,
                "tool": tool,
                "max_calls": rule.max_calls,
            },
            severity=Severity.MINOR,
        )
    limit = policy.rate_limit
    if (
        limit is not None
        and allowed_in_window is not None
        and (allowed_in_window >= limit.max_actions)
    ):
        window: int | float = (
            int(limit.window_secs) if float(limit.window_secs).is_integer() else limit.window_secs
        )
        return Denial(
            reason={
                "code": DenyCode.RATE_LIMITED.value,
                "max_actions": limit.max_actions,
                "window_secs": window,
            },
            severity=Severity.MINOR,
        )
    return None


def budget_check(cost: int, remaining: int) -> Denial | None:
    """Running low is not misbehaviour: no scar."""
    if cost > remaining:
        return Denial(
            reason={
                "code": DenyCode.INSUFFICIENT_BUDGET.value,
                "cost": cost,
                "remaining": remaining,
            },
            severity=None,
        )
    return None


def allowed_in_window(recent: list[float], now: float, window_secs: float) -> int:
    """Allowed actions newer than ``now - window_secs``; entries at or before it are dropped."""
    cutoff = now - window_secs
    return sum(1 for stamp in recent if stamp > cutoff)

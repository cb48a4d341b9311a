"""Hypothesis strategies shared by the guard's property and stateful tests.

Import it as ``import strategies`` (``tests/conftest.py`` registers it). Everything here is a
plain strategy or helper: policies in Lineage's JSON shape, tool names (listed and unlisted),
declared costs and whole action sequences, plus a clock the tests move by hand.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from guardkit.decisions import SCAR_CAP, Severity

__all__ = [
    "LISTED_TOOLS",
    "UNLISTED_TOOLS",
    "FakeClock",
    "actions",
    "declared_costs",
    "inputs",
    "policies",
    "rules",
    "scar_weight",
    "severities",
    "tool_names",
]

#: Names a generated policy may list, and names it never lists (tripwires).
LISTED_TOOLS = ("llm_turn", "search", "pay", "deploy")
UNLISTED_TOOLS = ("rm_rf", "exfiltrate")

severities = st.sampled_from([s.value for s in Severity])


def scar_weight(severity: str) -> int:
    return Severity(severity).weight


def add_scar(score: int, severity: str) -> int:
    """The saturating scar arithmetic of LINEAGE §7."""
    return min(SCAR_CAP, score + scar_weight(severity))


def rules(*, approval: bool | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A tool rule: a small cost, maybe an approval gate, maybe a lifetime call cap."""
    return st.fixed_dictionaries(
        {
            "cost": st.integers(0, 5),
            "requires_approval": (
                st.sampled_from([False, False, True]) if approval is None else st.just(approval)
            ),
            "max_calls": st.none() | st.none() | st.integers(0, 6),
        }
    )


def _mostly(usual: st.SearchStrategy[int], edge: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    """``usual`` four times in five, else ``edge`` (tiny budgets and scar limits end runs early)."""
    # Hypothesis favours 0 when it draws, so 0 picks the usual branch.
    return st.integers(0, 4).flatmap(lambda k: edge if k == 4 else usual)


@st.composite
def policies(draw: st.DrawFn, *, budget: st.SearchStrategy[int] | None = None) -> dict[str, Any]:
    """A valid Lineage policy over ``LISTED_TOOLS`` (at least one tool listed)."""
    names = draw(st.lists(st.sampled_from(LISTED_TOOLS), min_size=1, unique=True))
    rate = draw(
        st.none()
        | st.fixed_dictionaries(
            {"max_actions": st.integers(1, 3), "window_secs": st.integers(1, 10)}
        )
    )
    return {
        "budget": draw(
            budget if budget is not None else _mostly(st.integers(8, 30), st.integers(0, 3))
        ),
        "scar_limit": draw(_mostly(st.integers(8, 60), st.integers(1, 3))),
        "tools": {name: draw(rules()) for name in names},
        "rate_limit": rate,
    }


tool_names = st.sampled_from(LISTED_TOOLS + UNLISTED_TOOLS)
declared_costs = st.none() | st.integers(0, 8)
#: Small inputs: stateful runs draw many, and hypothesis caps the bytes one run may draw.
inputs = st.none() | st.dictionaries(
    st.sampled_from(["q", "path", "amount", "ü"]),
    st.integers(-5, 5) | st.sampled_from(["", "x", "héllo", "✓"]),
    max_size=2,
)

#: One step of an agent's run: ``(tool, input, declared cost, outcome to report if allowed)``.
actions = st.lists(
    st.tuples(tool_names, inputs, declared_costs, st.sampled_from(["success", "failure", None])),
    max_size=25,
)


class FakeClock:
    """A clock the test moves by hand (``Guard(..., clock=clock)``)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

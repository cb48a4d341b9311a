"""mypy-only: ``guardkit.tool`` keeps parameter and return types (never collected by pytest)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Literal, assert_type

import guardkit
from guardkit import Idempotency, PathRule, ToolDenied
from guardkit.decisions import ActionStatusName, Reason

agent = guardkit.Guard(":memory:").agent("bot")


@guardkit.tool(guard=agent, cost=lambda a: a["amount"], idempotency=Idempotency(key=["inv"]))
def pay(inv: str, amount: int) -> dict[str, int]:
    return {inv: amount}


as_callable: Callable[[str, int], dict[str, int]] = pay
assert_type(pay("INV-1", 3), dict[str, int])


@guardkit.tool
def bare(x: float) -> float:
    return x


assert_type(bare(1.0), float)


@agent.tool("search")
async def search(query: str, limit: int = 3) -> list[str]:
    return [query] * limit


pending: Coroutine[Any, Any, list[str]] = search("q")
pending.close()


async def use_search() -> None:
    assert_type(await search("q", limit=2), list[str])


@guardkit.tool(paths={"path": PathRule(allow=["/srv"])})
def lines(path: str) -> Iterator[str]:
    yield path


assert_type(lines("/srv/x"), Iterator[str])


@guardkit.tool()
async def stream(n: int) -> AsyncIterator[int]:
    yield n


assert_type(stream(1), AsyncIterator[int])


class Files:
    @guardkit.tool()
    def read(self, name: str) -> bytes:
        return name.encode()


assert_type(Files().read("a"), bytes)

try:
    pay("INV-1", 3)
except ToolDenied as denied:
    assert_type(denied.message, str)
    assert_type(denied.action_id, str | None)
    assert_type(denied.reason, Reason)

# The wire shapes are TypedDicts: every key read is checked, a typo is an error.
decision = agent.request("search", {"q": "x"})
assert_type(decision["decision"], Literal["allowed", "denied", "pending_approval"])
assert_type(decision["action_id"], str)
assert_type(agent.status()["remaining"], int)
assert_type(agent.action("act-1")["status"], ActionStatusName)
agent.status()["remainig"]  # type: ignore[typeddict-item]
decision["reason"]["cod"]  # type: ignore[typeddict-item]
assert_type(agent.wait_for_approval("act-1"), ActionStatusName)

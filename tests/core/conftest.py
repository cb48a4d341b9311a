"""Fixtures for the engine tests: an in-memory guard with a controllable clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from guardkit import Guard, LocalAgent


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def guard(clock: FakeClock) -> Iterator[Guard]:
    with Guard(":memory:", clock=clock) as g:
        yield g


@pytest.fixture
def make_agent(guard: Guard) -> Callable[..., LocalAgent]:
    counter = iter(range(1, 10_000))

    def make(policy: dict[str, Any], agent_id: str | None = None) -> LocalAgent:
        name = agent_id or f"agent-{next(counter)}"
        guard.create_agent(name, policy)
        return guard.agent(name)

    return make

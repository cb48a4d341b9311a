"""Property-based requests generated from the OpenAPI document: the server never answers 5xx.

Runs against a server on SQLite and one on PostgreSQL (whose text type cannot hold NUL and whose
integers are 64-bit: both were 500s before validation caught them). Schemathesis never draws lone
surrogates ("they cannot be encoded for the wire", yet JSON's ``\\ud800`` escape carries one) nor
integers beyond 64 bits, so a body hook swaps one leaf or key of many generated bodies for one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from guardkit.server.openapi import openapi_document
from tests.server.conftest import ADMIN, Server, start_server
from tests.server.pg import pg_schema_url

schemathesis = pytest.importorskip("schemathesis")

schema = schemathesis.openapi.from_dict(openapi_document())
FUZZ_POLICY = {
    "budget": 10**9,
    "scar_limit": 10**9,
    "tools": {"read": {"cost": 0}, "pay": {"cost": 1, "requires_approval": True}},
}


@pytest.fixture(scope="module")
def pg_server() -> Iterator[Server]:
    with pg_schema_url() as url:
        yield from start_server(url)


@pytest.fixture(params=["sqlite", "postgresql"], scope="module")
def target(request: pytest.FixtureRequest) -> Server:
    found: Server = request.getfixturevalue("server" if request.param == "sqlite" else "pg_server")
    with found.admin() as admin:
        if not any(a["agent_id"] == "fuzz" for a in admin.agents()):
            admin.create_agent("fuzz", FUZZ_POLICY)
    return found


#: What the generator leaves out: lone surrogates, integers past Lineage's -2**63..2**64-1.
NASTY = st.one_of(
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2),
    st.integers(min_value=2**64, max_value=10**400),
    st.integers(min_value=-(10**400), max_value=-(2**63) - 1),
)


def _slots(value: Any) -> int:
    """Leaves and keys of a JSON value, each a place a nasty value can go."""
    if isinstance(value, dict):
        return sum(1 + _slots(item) for item in value.values())
    if isinstance(value, list):
        return sum(_slots(item) for item in value)
    return 1


def _swap(value: Any, slot: int, nasty: Any) -> tuple[Any, int]:
    """``value`` with its ``slot``-th leaf (or key, for a string) swapped for ``nasty``."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if slot == 0 and isinstance(nasty, str):
                key = key + nasty
            slot -= 1
            out[key], slot = _swap(item, slot, nasty)
        return out, slot
    if isinstance(value, list):
        items = []
        for item in value:
            swapped, slot = _swap(item, slot, nasty)
            items.append(swapped)
        return items, slot
    return (nasty if slot == 0 else value), slot - 1


@schema.hook("flatmap_body")
def poison(ctx: Any, body: Any) -> Any:
    slots = _slots(body) if isinstance(body, (dict, list)) else 0
    if slots == 0:  # a scalar, or only empty containers (``[{}]``): no leaf to swap
        return st.just(body)
    swapped = st.builds(
        lambda slot, nasty: _swap(body, slot, nasty)[0], st.integers(0, slots - 1), NASTY
    )
    return st.one_of(st.just(body), swapped)


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any, target: Server) -> None:
    if "agent_id" in (case.path_parameters or {}):
        case.path_parameters["agent_id"] = "fuzz"  # reach past 404 into the real handlers
    response = case.call(base_url=target.url, headers={"Authorization": f"Bearer {ADMIN}"})
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)
    if response.status_code >= 400:
        assert set(response.json()) == {"error", "code"}

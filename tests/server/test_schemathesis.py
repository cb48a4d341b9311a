"""Property-based requests generated from the OpenAPI document: the server never answers 5xx.

Runs against a server on SQLite and one on PostgreSQL (whose text type cannot hold NUL and whose
integers are 64-bit: both were 500s before validation caught them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

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


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any, target: Server) -> None:
    if "agent_id" in (case.path_parameters or {}):
        case.path_parameters["agent_id"] = "fuzz"  # reach past 404 into the real handlers
    response = case.call(base_url=target.url, headers={"Authorization": f"Bearer {ADMIN}"})
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)
    if response.status_code >= 400:
        assert set(response.json()) == {"error", "code"}

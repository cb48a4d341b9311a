"""Property-based requests generated from the OpenAPI document: the server never answers 5xx."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from guardkit.server.openapi import openapi_document
from tests.server.conftest import ADMIN, Server

schemathesis = pytest.importorskip("schemathesis")

schema = schemathesis.openapi.from_dict(openapi_document())


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any, server: Server) -> None:
    if (
        case.path_parameters
        and "agent_id" in case.path_parameters
        and case.operation.path != ("/v1/agents")
    ):
        case.path_parameters["agent_id"] = "fuzz"
    response = case.call(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"})
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error", "code"}


@pytest.fixture(autouse=True, scope="module")
def _fuzz_agent(server: Server) -> None:
    with server.admin() as admin:
        if not any(a["agent_id"] == "fuzz" for a in admin.agents()):
            admin.create_agent(
                "fuzz",
                {
                    "budget": 10**9,
                    "scar_limit": 10**9,
                    "tools": {"read": {"cost": 0}, "pay": {"cost": 1, "requires_approval": True}},
                },
            )

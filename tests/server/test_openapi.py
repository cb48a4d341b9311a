"""The OpenAPI document describes exactly the API the app serves, with the bodies it validates."""

from __future__ import annotations

from starlette.routing import Route

from guardkit.server.bodies import BODIES
from guardkit.server.openapi import openapi_document
from guardkit.server.routes import api_routes
from tests.server.conftest import Server


def test_every_route_is_documented_and_nothing_else() -> None:
    served = {
        (method.lower(), route.path)
        for route in api_routes()
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }
    documented = {
        (method, path) for path, ops in openapi_document()["paths"].items() for method in ops
    }
    assert served == documented


def test_every_body_schema_matches_the_validator() -> None:
    schemas = openapi_document()["components"]["schemas"]
    for name, fields in BODIES.items():
        assert set(schemas[name]["properties"]) == set(fields)
        assert set(schemas[name]["required"]) == {k for k, f in fields.items() if f.required}
        assert schemas[name]["additionalProperties"] is False


def test_the_document_is_served(server: Server) -> None:
    with server.http() as http:
        document = http.get("/openapi.json").json()
    assert document == openapi_document()
    assert document["openapi"].startswith("3.")

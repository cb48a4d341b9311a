"""Rules over HTTP: a malformed rule is a 400 naming its path, and nothing is created."""

from __future__ import annotations

import pytest

from guardkit import GuardError
from tests.server.conftest import Server


def test_a_bad_rule_is_a_400_naming_its_path(server: Server) -> None:
    policy = {
        "budget": 5,
        "tools": {
            "pay": {
                "cost": 1,
                "rules": [
                    {"when": {}, "effect": "allow"},
                    {"when": {"properties": {"amount": {"minimum": "x"}}}, "effect": "allow"},
                ],
            }
        },
    }
    with server.admin() as admin:
        with pytest.raises(GuardError) as caught:
            admin.create_agent("bad-rules", policy)
        assert (caught.value.status, caught.value.code) == (400, "bad_request")
        assert "tools.pay.rules[1].when.properties.amount.minimum" in caught.value.message
        assert all(a["agent_id"] != "bad-rules" for a in admin.agents())

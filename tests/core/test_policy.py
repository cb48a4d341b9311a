"""Policy parsing and validation: Lineage's JSON shape, TOML, every problem named by its path."""

from __future__ import annotations

import json

import pytest

from guardkit import Policy, PolicyError, load_policy

LINEAGE_OPS = {
    "budget": 80,
    "scar_limit": 10,
    "rate_limit": {"max_actions": 30, "window_secs": 60},
    "tools": {
        "llm_turn": {"cost": 1},
        "read_logs": {"cost": 1},
        "open_ticket": {"cost": 2},
        "post_status_update": {"cost": 3, "requires_approval": True},
        "restart_service": {"cost": 5, "requires_approval": True, "max_calls": 2},
    },
}


def test_lineage_shape_round_trips() -> None:
    policy = Policy.from_dict(LINEAGE_OPS)
    assert policy.budget == 80
    assert policy.tools["restart_service"].max_calls == 2
    assert policy.rate_limit is not None
    assert policy.rate_limit.window_secs == 60
    again = Policy.from_dict(policy.to_dict())
    assert again == policy


def test_toml_has_the_same_fields() -> None:
    text = """
budget = 80
scar_limit = 10
rate_limit = { max_actions = 30, window_secs = 60 }
approval_ttl = 900

[tools.llm_turn]
cost = 1

[tools.restart_service]
cost = 5
requires_approval = true
max_calls = 2
"""
    policy = Policy.from_toml(text)
    assert policy.approval_ttl == 900
    assert policy.tools["restart_service"].requires_approval
    assert policy.tools["llm_turn"].requires_approval is False


def test_scar_limit_defaults_to_ten_and_default_rule_to_none() -> None:
    policy = Policy.from_dict({"budget": 1, "tools": {}})
    assert policy.scar_limit == 10
    assert policy.default_rule is None
    assert policy.rule_for("anything") is None


def test_every_problem_is_reported_with_its_path() -> None:
    bad = {
        "budget": -1,
        "scar_limit": "ten",
        "tools": {"x": {"cost": 1.5, "requires_approval": "yes", "colour": "red"}, "": {}},
        "rate_limit": {"max_actions": 3},
        "extra": 1,
    }
    with pytest.raises(PolicyError) as info:
        Policy.from_dict(bad)
    paths = {path for path, _ in info.value.problems}
    assert {
        "budget",
        "scar_limit",
        "tools.x.cost",
        "tools.x.requires_approval",
        "tools.x.colour",
        "tools.",
        "rate_limit.window_secs",
        "extra",
    } <= paths
    assert info.value.status == 400
    assert info.value.code == "bad_request"
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ({"tools": {}}, "budget"),
        ({"budget": 1}, "tools"),
        ({"budget": True, "tools": {}}, "budget"),
        ({"budget": 1, "tools": {"t": {}}}, "tools.t.cost"),
        ({"budget": 1, "tools": {"t": {"cost": -2}}}, "tools.t.cost"),
        ({"budget": 1, "tools": {"t": {"cost": 1, "max_calls": -1}}}, "tools.t.max_calls"),
        ({"budget": 1, "tools": {"t": "free"}}, "tools.t"),
        ({"budget": 1, "tools": {"t": {"cost": 1, "approval_ttl": 5}}}, "tools.t.approval_ttl"),
        ({"budget": 1, "tools": {"t": {"cost": 1, "output": "maybe"}}}, "tools.t.output"),
        ({"budget": 1, "tools": {"t": {"cost": 1, "paths": ["/"]}}}, "tools.t.paths"),
        (
            {"budget": 1, "tools": {}, "rate_limit": {"max_actions": 1, "window_secs": 0}},
            "rate_limit.window_secs",
        ),
        (
            {
                "budget": 1,
                "tools": {},
                "rate_limit": {"max_actions": 1, "window_secs": float("nan")},
            },
            "rate_limit.window_secs",
        ),
        ({"budget": 1, "tools": {}, "approval_ttl": -3}, "approval_ttl"),
        ({"budget": 1, "tools": {}, "default_rule": {"cost": "x"}}, "default_rule.cost"),
        ({"budget": 1, "tools": {"t" * 129: {"cost": 1}}}, "tools." + "t" * 129),
    ],
)
def test_malformed_policies_are_refused(policy: dict, path: str) -> None:
    with pytest.raises(PolicyError) as info:
        Policy.from_dict(policy)
    assert path in {p for p, _ in info.value.problems}


def test_not_a_table() -> None:
    with pytest.raises(PolicyError):
        Policy.from_dict([1, 2])  # type: ignore[arg-type]
    with pytest.raises(PolicyError):
        Policy.from_json("{not json")
    with pytest.raises(PolicyError):
        Policy.from_toml("budget = = 1")


def test_check_sections_are_kept_for_the_tool_layer() -> None:
    policy = Policy.from_dict(
        {"budget": 1, "tools": {"read": {"cost": 0, "output": "untrusted", "paths": {"allow": []}}}}
    )
    assert policy.tools["read"].checks == {"output": "untrusted", "paths": {"allow": []}}
    assert policy.to_dict()["tools"]["read"]["output"] == "untrusted"


def test_load_policy_from_files(tmp_path) -> None:
    json_file = tmp_path / "p.json"
    json_file.write_text(json.dumps(LINEAGE_OPS))
    toml_file = tmp_path / "p.toml"
    toml_file.write_text("budget = 3\n[tools.a]\ncost = 1\n")
    assert load_policy(json_file).budget == 80
    assert load_policy(str(toml_file)).budget == 3
    assert load_policy(json.dumps(LINEAGE_OPS)).budget == 80
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "missing.json")


def test_narrowing() -> None:
    parent = Policy.from_dict(LINEAGE_OPS)
    child_ok = Policy.from_dict(
        {
            "budget": 10,
            "scar_limit": 5,
            "rate_limit": {"max_actions": 10, "window_secs": 60},
            "tools": {
                "read_logs": {"cost": 1},
                "restart_service": {"cost": 6, "requires_approval": True, "max_calls": 1},
            },
        }
    )
    assert child_ok.narrowing_problems(parent) == []
    child_bad = Policy.from_dict(
        {
            "budget": 10,
            "scar_limit": 20,
            "tools": {
                "read_logs": {"cost": 0},
                "restart_service": {"cost": 5, "max_calls": 3},
                "drop_database": {"cost": 1},
            },
            "default_rule": {"cost": 1},
        }
    )
    paths = {p for p, _ in child_bad.narrowing_problems(parent)}
    assert paths == {
        "scar_limit",
        "tools.read_logs.cost",
        "tools.restart_service.requires_approval",
        "tools.restart_service.max_calls",
        "tools.drop_database",
        "default_rule",
        "rate_limit",
    }

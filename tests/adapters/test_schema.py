"""Tool schemas from signatures and docstrings, and the validator the adapters run first."""

from __future__ import annotations

from typing import Any, Literal

import jsonschema
import pytest
from guardkit.plugins._schema import tool_schema, validate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def restart_service(
    service: str,
    reason: str,
    mode: Literal["graceful", "hard"] = "graceful",
    replicas: list[int] | None = None,
    labels: dict[str, str] | None = None,
    wait: float = 1.0,
    force: bool = False,
) -> str:
    """Restart one service.

    Needs approval.

    Args:
        service: The service to restart,
            for example ``api``.
        reason: Why, for the ticket.
        mode: How.

    Returns:
        What happened.
    """
    return service


def sphinx_style(path: str, count: int) -> None:
    """Read a file.

    :param path: Where the file is.
    :param count: How many lines.
    """


SCHEMA = tool_schema(restart_service)["input_schema"]


def test_signature_and_google_docstring_become_the_schema():
    schema = tool_schema(restart_service)
    assert schema["name"] == "restart_service"
    assert schema["description"] == "Restart one service. Needs approval."
    assert schema["input_schema"] == {
        "type": "object",
        "properties": {
            "service": {
                "type": "string",
                "description": "The service to restart, for example ``api``.",
            },
            "reason": {"type": "string", "description": "Why, for the ticket."},
            "mode": {"enum": ["graceful", "hard"], "description": "How."},
            "replicas": {
                "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]
            },
            "labels": {
                "anyOf": [
                    {"type": "object", "additionalProperties": {"type": "string"}},
                    {"type": "null"},
                ]
            },
            "wait": {"type": "number"},
            "force": {"type": "boolean"},
        },
        "required": ["service", "reason"],
        "additionalProperties": False,
    }
    jsonschema.Draft202012Validator.check_schema(schema["input_schema"])


def test_sphinx_params_are_read_too():
    schema = tool_schema(sphinx_style)
    assert schema["description"] == "Read a file."
    assert schema["input_schema"]["properties"]["count"] == {
        "type": "integer",
        "description": "How many lines.",
    }


def test_var_args_cannot_be_a_tool():
    def anything(*args: Any) -> None:
        """No."""

    with pytest.raises(TypeError, match="cannot be described"):
        tool_schema(anything)


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        ({"service": "api", "reason": "oom"}, []),
        ({"service": "api"}, ["reason: required field is missing"]),
        ({"service": "api", "reason": "x", "wait": True}, ["wait: expected number, got boolean"]),
        ({"service": "api", "reason": "x", "wait": 2}, []),
        ({"service": "api", "reason": "x", "force": 1}, ["force: expected boolean, got integer"]),
        (
            {"service": "api", "reason": "x", "mode": "soft"},
            ["mode: 'soft' is not one of ['graceful', 'hard']"],
        ),
        (
            {"service": "api", "reason": "x", "replicas": [1, "2"]},
            ["replicas: [1, '2'] matches none of the allowed types"],
        ),
        ({"service": "api", "reason": "x", "sudo": True}, ["sudo: unexpected field"]),
    ],
)
def test_validation_names_every_problem(args, problems):
    assert validate(SCHEMA, args) == problems


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


_KEYS = ["service", "reason", "mode", "replicas", "labels", "wait", "force", "x"]
_LIKELY = {
    "service": st.text(max_size=3),
    "reason": st.text(max_size=3),
    "mode": st.sampled_from(["graceful", "hard", "soft"]),
    "replicas": st.none() | st.lists(st.integers() | st.booleans(), max_size=2),
    "labels": st.none() | st.dictionaries(st.text(max_size=2), st.text(max_size=2) | st.integers()),
    "wait": st.integers() | st.floats(allow_nan=False),
    "force": st.booleans(),
}
arguments = st.fixed_dictionaries(
    {}, optional={key: json_values | _LIKELY.get(key, json_values) for key in _KEYS}
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments)
def test_validation_agrees_with_jsonschema(args):
    expected = jsonschema.Draft202012Validator(SCHEMA).is_valid(args)
    assert (validate(SCHEMA, args) == []) == expected


def test_the_adapters_validate_with_the_guards_json_schema_library():
    """Formats and every other draft 2020-12 keyword mean what they mean to the guard."""
    schema = {
        "type": "object",
        "properties": {
            "to": {"type": "string", "format": "email"},
            "amount": {"type": "number", "exclusiveMinimum": 0},
            "items": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
        },
        "required": ["to"],
    }
    assert validate(schema, {"to": "a@b.example", "amount": 3}) == []
    assert validate(schema, {"to": "nobody", "amount": 0, "items": [{"sku": 1}, {}]}) == [
        "to: 'nobody' is not a 'email'",
        "amount: 0 is less than or equal to the minimum of 0",
        "items[1].sku: required field is missing",
    ]

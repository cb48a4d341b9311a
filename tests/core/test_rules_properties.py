"""A rule's decision is the schema's verdict: the compiled predicates agree with jsonschema."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from guardkit import Guard
from guardkit.rules.fast import compile_predicate
from guardkit.rules.schema import check_schema, validator
from guardkit.rules.shell import CannotJudge

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from([0.0, 1.0, 2.5, -1.5, 100.0])
    | st.sampled_from(["", "a", "ab", "abc", "DE89", "x@y.example", "2024-01-31", "é"])
)
values = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "amount", "to"]), inner, max_size=3)
    ),
    max_leaves=6,
)
_TYPES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(
            lambda t: {"type": t}, _TYPES | st.lists(_TYPES, min_size=1, max_size=2, unique=True)
        ),
        st.builds(lambda v: {"const": v}, values),
        st.builds(lambda v: {"enum": v}, st.lists(values, min_size=1, max_size=3)),
        st.builds(
            lambda k, n: {k: n},
            st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
            st.integers(-3, 3) | st.sampled_from([0.5, 2.0]),
        ),
        st.builds(
            lambda k, n: {k: n},
            st.sampled_from(["minLength", "maxLength", "minItems", "maxItems"]),
            st.integers(0, 3),
        ),
        st.builds(
            lambda p: {"pattern": p}, st.sampled_from(["^a", "b$", "[0-9]", "^DE[0-9]+$", "é"])
        ),
        st.builds(lambda f: {"format": f}, st.sampled_from(["email", "date", "ipv4", "uuid"])),
        st.builds(
            lambda r: {"required": r},
            st.lists(st.sampled_from(["a", "b", "amount"]), max_size=2, unique=True),
        ),
        st.just({}),
    )


schemas = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(lambda s: {"not": s}, inner),
        st.builds(
            lambda k, s: {k: s},
            st.sampled_from(["anyOf", "allOf", "oneOf"]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        st.builds(
            lambda p: {"properties": p},
            st.dictionaries(st.sampled_from(["a", "b", "amount", "to"]), inner, max_size=2),
        ),
        st.builds(lambda s: {"items": s}, inner),
        st.builds(lambda s: {"additionalProperties": s}, inner | st.booleans()),
        st.builds(lambda a, b: {**a, **b}, inner, inner),
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(schemas, values)
def test_compiled_predicate_is_jsonschemas_verdict(schema: dict[str, Any], value: Any) -> None:
    assert check_schema(schema, "when") == []
    predicate = compile_predicate(schema)
    assert predicate is not None
    expected = Draft202012Validator(
        schema, format_checker=Draft202012Validator.FORMAT_CHECKER
    ).is_valid(value)
    assert predicate(value) is expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    schemas,
    st.sampled_from(["deny", "requires_approval", "allow"]),
    st.lists(values, min_size=1, max_size=4),
)
def test_a_rules_decision_is_the_schemas_verdict(
    schema: dict[str, Any], effect: str, inputs: list[Any]
) -> None:
    policy = {
        "budget": 10**6,
        "scar_limit": 10**6,
        "tools": {"t": {"cost": 0, "rules": [{"when": schema, "effect": effect, "reason": "r"}]}},
    }
    matches = Draft202012Validator(
        schema, format_checker=Draft202012Validator.FORMAT_CHECKER
    ).is_valid
    expected = {"deny": "denied", "requires_approval": "pending_approval", "allow": "allowed"}[
        effect
    ]
    with Guard(":memory:") as guard:
        guard.create_agent("a", policy)
        agent = guard.agent("a")
        for value in inputs:
            decision = agent.request("t", value)
            # The engine records ``{}`` for a missing input: that is what the rule judges.
            judged = {} if value is None else value
            assert decision["decision"] == (expected if matches(judged) else "allowed")
        assert guard.verify("a")["ok"] is True


TRICKY = [
    *(None, True, False, 0, 1, 2, 0.0, 1.0, 2.5, -1, "", "1", "a", "ab"),
    *([], [1], [True], [1.0, 1], {}, {"a": 1}, {"a": True}, {"a": None, "b": "x"}),
    *("x@y.example", "2024-02-30", "10.0.0.1"),
]
LEAVES = [
    {"type": t} for t in ("null", "boolean", "integer", "number", "string", "array", "object")
] + [
    {"type": ["integer", "string"]},
    *({"const": v} for v in (True, 1, 1.0, 0, False, None, [1], {"a": 1}, "1")),
    {"enum": [1, "a", None]},
    {"enum": [True, [True]]},
    *({k: 1} for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")),
    *({k: 1} for k in ("minLength", "maxLength", "minItems", "maxItems")),
    {"pattern": "^a"},
    {"required": ["a"]},
    *({"format": f} for f in ("email", "date", "ipv4")),
    {"properties": {"a": {"type": "integer"}}},
    {"properties": {"a": {"const": 1}}, "additionalProperties": False},
    {"items": {"type": "integer"}},
    {"not": {"type": "number"}},
    {"anyOf": [{"type": "string"}, {"minimum": 2}]},
    {"oneOf": [{"type": "integer"}, {"type": "number"}]},
]


def test_every_keyword_on_every_tricky_value() -> None:
    for schema in LEAVES:
        predicate = compile_predicate(schema)
        assert predicate is not None, schema
        valid = Draft202012Validator(
            schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        ).is_valid
        for value in TRICKY:
            assert predicate(value) is valid(value), (schema, value)


HELPER_SCHEMAS = [
    {"x-path-under": ["/etc"]},
    {"not": {"x-path-under": ["/srv"], "x-path-base": "/srv"}},
    {"x-url-host": ["*.example.com", "10.0.0.1"]},
    {"allOf": [{"type": "string"}, {"not": {"x-url-host": ["example.com"]}}]},
    {"x-shell": {"prefixItems": [{"const": "git"}]}},
    {"x-shell": False, "x-shell-compound": True},
    {"type": "string", "x-shell": {"maxItems": 2}},
]
HELPER_VALUES = [
    "/etc/passwd", "/srv/../etc", "rel/path", "~/x", "/srv/a", "https://a.example.com/x",
    "https://user@a.example.com/", "http://10.0.0.1/", "http://167772161/", "git status",
    "git status; ls", "env git log", "ls", 5, None, ["git", "status"], ["sh", "-c", "a;b"],
]  # fmt: skip


def _outcome(predicate: Any, value: Any) -> object:
    try:
        return predicate(value)
    except CannotJudge:
        return "cannot judge"


def test_helper_keywords_mean_the_same_compiled_and_in_jsonschema() -> None:
    for schema in HELPER_SCHEMAS:
        assert check_schema(schema, "when") == []
        fast = compile_predicate(schema)
        assert fast is not None, schema
        slow = validator(schema).is_valid
        for value in HELPER_VALUES:
            assert _outcome(fast, value) == _outcome(slow, value), (schema, value)

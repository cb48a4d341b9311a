"""The common JSON Schema keywords compiled to plain Python predicates, for the request path.

The ``jsonschema`` package defines what a rule's condition means, but its validator costs several
microseconds per schema, and a policy may hold ten rules per tool. A schema made only of the
keywords below is compiled once into nested closures that answer ``is_valid`` with the same
semantics (draft 2020-12: ``1 == 1.0``, ``true != 1``, ``1.0`` is an integer, type-specific
keywords ignore other types, keywords checked in the schema's order until one fails); any other
schema returns None and is validated by ``jsonschema`` itself. tests/core/test_rules_properties.py
checks the two agree on random schemas and inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from guardkit.rules.keywords import argv_of, path_under, url_matches
from guardkit.rules.schema import format_checker

__all__ = ["Predicate", "compile_predicate", "equal"]

Predicate = Callable[[Any], bool]
_ANNOTATIONS = frozenset(
    {"title", "description", "$comment", "default", "examples", "deprecated", "readOnly",
     "writeOnly", "$schema", "x-path-base", "x-shell-compound"}
)  # fmt: skip
_GUARDKIT = frozenset({"x-path-under", "x-url-host", "x-shell"})


class _Unsupported(Exception):
    """A keyword (or placement) this compiler leaves to jsonschema."""


def equal(one: Any, two: Any) -> bool:
    """JSON equality as JSON Schema's ``const``/``enum`` define it (``true`` is not ``1``)."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(map(equal, one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(equal(one[k], two[k]) for k in one)
    if isinstance(one, (list, dict)) or isinstance(two, (list, dict)):
        return False
    return bool(one == two)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


_TYPES: dict[str, Predicate] = {
    "null": lambda x: x is None,
    "boolean": lambda x: isinstance(x, bool),
    "string": lambda x: isinstance(x, str),
    "array": lambda x: isinstance(x, list),
    "object": lambda x: isinstance(x, dict),
    "number": _is_number,
    "integer": lambda x: (
        (isinstance(x, int) and not isinstance(x, bool))
        or (isinstance(x, float) and x.is_integer())
    ),
}


def _type(value: Any) -> Predicate:
    names = [value] if isinstance(value, str) else list(value)
    checks = tuple(_TYPES[name] for name in names)
    if len(checks) == 1:
        return checks[0]
    return lambda x: any(check(x) for check in checks)


def _bound(op: str, limit: Any) -> Predicate:
    tests: dict[str, Callable[[Any], bool]] = {
        "minimum": lambda x: x >= limit,
        "maximum": lambda x: x <= limit,
        "exclusiveMinimum": lambda x: x > limit,
        "exclusiveMaximum": lambda x: x < limit,
    }
    test = tests[op]
    return lambda x: not _is_number(x) or test(x)


def _properties(value: Mapping[str, Any], in_choice: bool) -> Predicate:
    subs = tuple((name, _compile(schema, in_choice)) for name, schema in value.items())

    def check(x: Any) -> bool:
        if not isinstance(x, dict):
            return True
        return all(name not in x or sub(x[name]) for name, sub in subs)

    return check


def _additional(schema: Mapping[str, Any], value: Any, in_choice: bool) -> Predicate:
    if "patternProperties" in schema:
        raise _Unsupported
    known = frozenset(schema.get("properties", ()))
    sub = _compile(value, in_choice)
    return lambda x: not isinstance(x, dict) or all(sub(x[k]) for k in x if k not in known)


def _items(schema: Mapping[str, Any], value: Any, in_choice: bool) -> Predicate:
    if "prefixItems" in schema:
        raise _Unsupported
    sub = _compile(value, in_choice)
    return lambda x: not isinstance(x, list) or all(map(sub, x))


def _pattern(value: str) -> Predicate:
    search = re.compile(value).search
    return lambda x: not isinstance(x, str) or search(x) is not None


def _format(value: str) -> Predicate:
    conforms = format_checker().conforms
    return lambda x: bool(conforms(x, value))


def _path(schema: Mapping[str, Any], roots: list[str]) -> Predicate:
    base, allowed = schema.get("x-path-base"), tuple(roots)
    return lambda x: not isinstance(x, str) or path_under(x, allowed, base)


def _url(hosts: list[str]) -> Predicate:
    from guardkit.checks.hosts import allow_entry

    entries = tuple(allow_entry(entry) for entry in hosts)
    return lambda x: not isinstance(x, str) or url_matches(x, entries)


def _shell(schema: Mapping[str, Any], value: Any, in_choice: bool) -> Predicate:
    sub = _compile(value, in_choice)
    compound = schema.get("x-shell-compound") is True

    def check(x: Any) -> bool:
        if not isinstance(x, (str, list)):
            return True
        argv = argv_of(x, compound)
        return argv is None or sub(argv)

    return check


def _choice(value: list[Any], kind: str, in_choice: bool) -> Predicate:
    subs = tuple(_compile(item, in_choice) for item in value)
    if kind == "allOf":
        return lambda x: all(sub(x) for sub in subs)
    if kind == "anyOf":
        return lambda x: any(sub(x) for sub in subs)
    return lambda x: sum(1 for sub in subs if sub(x)) == 1


def _keyword(schema: Mapping[str, Any], key: str, value: Any, in_choice: bool) -> Predicate | None:
    if key in _ANNOTATIONS:
        return None
    if key in _GUARDKIT and in_choice:
        # Inside anyOf/oneOf jsonschema evaluates a branch whole: which helper keywords get to
        # refuse a value follows its order, so it decides there.
        raise _Unsupported
    simple: dict[str, Callable[[], Predicate]] = {
        "type": lambda: _type(value),
        "const": lambda: lambda x: equal(x, value),
        "enum": lambda: lambda x: any(equal(x, item) for item in value),
        "minLength": lambda: lambda x: not isinstance(x, str) or len(x) >= value,
        "maxLength": lambda: lambda x: not isinstance(x, str) or len(x) <= value,
        "minItems": lambda: lambda x: not isinstance(x, list) or len(x) >= value,
        "maxItems": lambda: lambda x: not isinstance(x, list) or len(x) <= value,
        "required": lambda: lambda x: not isinstance(x, dict) or all(k in x for k in value),
        "pattern": lambda: _pattern(value),
        "format": lambda: _format(value),
        "properties": lambda: _properties(value, in_choice),
        "additionalProperties": lambda: _additional(schema, value, in_choice),
        "items": lambda: _items(schema, value, in_choice),
        "not": lambda: _negation(value, in_choice),
        "allOf": lambda: _choice(value, "allOf", in_choice),
        "anyOf": lambda: _choice(value, "anyOf", True),
        "oneOf": lambda: _choice(value, "oneOf", True),
        "x-path-under": lambda: _path(schema, value),
        "x-url-host": lambda: _url(value),
        "x-shell": lambda: _shell(schema, value, in_choice),
    }
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _bound(key, value)
    build = simple.get(key)
    if build is None:
        raise _Unsupported
    return build()


def _negation(value: Any, in_choice: bool) -> Predicate:
    sub = _compile(value, in_choice)
    return lambda x: not sub(x)


def _compile(schema: Any, in_choice: bool) -> Predicate:
    if schema is True or schema == {}:
        return lambda x: True
    if schema is False:
        return lambda x: False
    checks = tuple(
        check
        for key, value in schema.items()
        if (check := _keyword(schema, key, value, in_choice)) is not None
    )
    if len(checks) == 1:
        return checks[0]
    return lambda x: all(check(x) for check in checks)


def compile_predicate(schema: Any) -> Predicate | None:
    """``is_valid`` of a checked ``schema`` as one function, or None to use jsonschema."""
    try:
        return _compile(schema, False)
    except _Unsupported:
        return None

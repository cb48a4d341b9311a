"""The common JSON Schema keywords compiled to one Python function, for the request path.

The ``jsonschema`` package defines what a rule's condition means, but its validator costs several
microseconds per schema, and a policy may hold ten rules per tool. A schema made only of the
keywords below is compiled once into one Python expression (a generated function) that answers
``is_valid`` with the same semantics (draft 2020-12: ``1 == 1.0``, ``true != 1``, ``1.0`` is an
integer, type-specific keywords ignore other types, keywords checked in the schema's order until
one fails); any other schema returns None and is validated by ``jsonschema`` itself.
tests/core/test_rules_properties.py checks the two agree on random schemas and inputs.
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


class _Builder:
    """Writes one schema as one Python expression over ``x``; constants go in ``names``."""

    def __init__(self) -> None:
        self.names: dict[str, Any] = {"equal": equal, "conforms": format_checker().conforms}
        self.loops = 0

    def name(self, value: Any) -> str:
        key = f"_c{len(self.names)}"
        self.names[key] = value
        return key

    def schema(self, schema: Any, v: str, in_choice: bool) -> str:
        if schema is True or schema == {}:
            return "True"
        if schema is False:
            return "False"
        parts = [
            part
            for key, value in schema.items()
            if (part := self.keyword(schema, key, value, v, in_choice)) is not None
        ]
        return f"({' and '.join(parts)})" if parts else "True"

    def keyword(  # noqa: C901, PLR0912 - one branch per keyword reads best
        self, schema: Mapping[str, Any], key: str, value: Any, v: str, in_choice: bool
    ) -> str | None:
        if key in _ANNOTATIONS:
            return None
        if key in _GUARDKIT:
            if in_choice:
                # Inside anyOf/oneOf jsonschema evaluates a branch whole: which helper keywords
                # get to refuse a value follows its order, so it decides there.
                raise _Unsupported
            return f"{self.name(self.helper(schema, key, value))}({v})"
        if key == "type":
            return self.type(value, v)
        if key == "const":
            return self.const(value, v)
        if key == "enum":
            if all(isinstance(item, str) for item in value):
                return f"({v}.__class__ is str and {v} in {self.name(frozenset(value))})"
            return f"any(equal({v}, _e) for _e in {self.name(tuple(value))})"
        if key in _BOUNDS:
            limit = self.name(value)
            number = f"(isinstance({v}, _NUM) and not isinstance({v}, bool))"
            return f"(not {number} or {v} {_BOUNDS[key]} {limit})"
        if key in _LENGTHS:
            kind, op = _LENGTHS[key]
            return f"(not isinstance({v}, {kind}) or len({v}) {op} {int(value)})"
        if key == "pattern":
            search = self.name(re.compile(value).search)
            return f"(not isinstance({v}, str) or {search}({v}) is not None)"
        if key == "format":
            return f"conforms({v}, {value!r})"
        if key == "required":
            present = " and ".join(f"{name!r} in {v}" for name in value) or "True"
            return f"(not isinstance({v}, dict) or ({present}))"
        if key == "properties":
            tests = [
                f"({name!r} not in {v} or {self.schema(sub, f'{v}[{name!r}]', in_choice)})"
                for name, sub in value.items()
            ]
            return f"(not isinstance({v}, dict) or ({' and '.join(tests) or 'True'}))"
        if key == "additionalProperties":
            if "patternProperties" in schema:
                raise _Unsupported
            known = self.name(frozenset(schema.get("properties", ())))
            k = self.loop()
            sub = self.schema(value, f"{v}[{k}]", in_choice)
            return f"(not isinstance({v}, dict) or all({sub} for {k} in {v} if {k} not in {known}))"
        if key == "items":
            if "prefixItems" in schema:
                raise _Unsupported
            i = self.loop()
            sub = self.schema(value, i, in_choice)
            return f"(not isinstance({v}, list) or all({sub} for {i} in {v}))"
        if key == "not":
            return f"(not {self.schema(value, v, in_choice)})"
        if key in ("allOf", "anyOf", "oneOf"):
            inner = in_choice or key != "allOf"
            subs = [self.schema(item, v, inner) for item in value]
            if key == "oneOf":
                return f"(({') + ('.join(subs)}) == 1)"
            return f"({(' and ' if key == 'allOf' else ' or ').join(subs)})"
        raise _Unsupported

    def loop(self) -> str:
        self.loops += 1
        return f"_i{self.loops}"

    def type(self, value: Any, v: str) -> str:
        names = [value] if isinstance(value, str) else list(value)
        tests = {
            "null": f"{v} is None",
            "boolean": f"isinstance({v}, bool)",
            "string": f"isinstance({v}, str)",
            "array": f"isinstance({v}, list)",
            "object": f"isinstance({v}, dict)",
            "number": f"(isinstance({v}, _NUM) and not isinstance({v}, bool))",
            "integer": (
                f"((isinstance({v}, int) and not isinstance({v}, bool)) "
                f"or (isinstance({v}, float) and {v}.is_integer()))"
            ),
        }
        return f"({' or '.join(tests[name] for name in names)})"

    def const(self, value: Any, v: str) -> str:
        if value is None or isinstance(value, bool):
            return f"({v} is {value!r})"
        if isinstance(value, str):
            return f"({v} == {self.name(value)})"
        if isinstance(value, (int, float)):
            number = f"isinstance({v}, _NUM) and not isinstance({v}, bool)"
            return f"({number} and {v} == {self.name(value)})"
        return f"equal({v}, {self.name(value)})"

    def helper(self, schema: Mapping[str, Any], key: str, value: Any) -> Predicate:
        if key == "x-path-under":
            base, roots = schema.get("x-path-base"), tuple(value)
            return lambda x: not isinstance(x, str) or path_under(x, roots, base)
        if key == "x-url-host":
            from guardkit.checks.hosts import allow_entry

            entries = tuple(allow_entry(entry) for entry in value)
            return lambda x: not isinstance(x, str) or url_matches(x, entries)
        sub = compile_predicate(value) or _jsonschema(value)
        compound = schema.get("x-shell-compound") is True

        def shell(x: Any) -> bool:
            if not isinstance(x, (str, list)):
                return True
            argv = argv_of(x, compound)
            return argv is None or sub(argv)

        return shell


_NUM = (int, float)
_BOUNDS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
_LENGTHS = {
    "minLength": ("str", ">="),
    "maxLength": ("str", "<="),
    "minItems": ("list", ">="),
    "maxItems": ("list", "<="),
}


def _jsonschema(schema: Any) -> Predicate:
    from guardkit.rules.schema import validator

    is_valid: Predicate = validator(schema).is_valid
    return is_valid


def compile_predicate(schema: Any) -> Predicate | None:
    """``is_valid`` of a checked ``schema`` as one function, or None to use jsonschema."""
    builder = _Builder()
    try:
        expression = builder.schema(schema, "x", False)
    except (_Unsupported, RecursionError):
        return None
    namespace = {**builder.names, "_NUM": _NUM}
    exec(f"def predicate(x):\n    return {expression}\n", namespace)  # noqa: S102 - our own text
    predicate: Predicate = namespace["predicate"]
    return predicate

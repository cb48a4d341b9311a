"""JSON Schemas in a policy: checked with every problem named, compiled once.

A schema is checked against the draft 2020-12 meta-schema (the ``jsonschema`` package), then
walked for what the meta-schema lets through but a policy must not: unknown keywords (JSON
Schema ignores them, so a typo such as ``maximun`` would silently match everything), formats this
installation does not check (ignored the same way), patterns that do not compile, references
outside the schema, and bad values of guardkit's keywords (``guardkit.rules.keywords``).

``validator`` builds the jsonschema validator (format checking on, guardkit's keywords added)
once per distinct schema text; ``guardkit.rules.fast`` compiles the common keywords to plain
functions and falls back to it for the rest.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

from guardkit.checks.hosts import allow_entry
from guardkit.decisions import JSONObject
from guardkit.rules.keywords import KEYWORDS, SIBLINGS

__all__ = ["Problems", "check_schema", "explain", "format_checker", "validator"]

Problems = list[tuple[str, str]]

_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Keywords whose value is one schema, a list of schemas, or an object of schemas.
_ONE = frozenset(
    {
        "not", "if", "then", "else", "items", "contains", "additionalProperties",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "x-shell",
    }
)  # fmt: skip
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
#: The rest of draft 2020-12's vocabularies a policy may use (values are data, not schemas).
_DATA = frozenset(
    {
        "$schema", "$ref", "$comment", "type", "const", "enum", "multipleOf", "maximum",
        "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
        "maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties",
        "minProperties", "required", "dependentRequired", "format", "title", "description",
        "default", "deprecated", "readOnly", "writeOnly", "examples", "contentEncoding",
        "contentMediaType", "contentSchema",
    }
)  # fmt: skip
_UNSUPPORTED = {
    "$id": "schemas in a policy are anonymous (no $id)",
    "$anchor": "use $defs and a '#/$defs/...' $ref instead",
    "$dynamicRef": "dynamic references are not supported in policies",
    "$dynamicAnchor": "dynamic references are not supported in policies",
    "$vocabulary": "policies use draft 2020-12's vocabularies as they are",
    "dependencies": "draft 2020-12 splits it into dependentRequired and dependentSchemas",
    "definitions": "draft 2020-12 calls it $defs",
}


def _join(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


@functools.cache
def format_checker() -> Any:
    """Draft 2020-12's format checker, with what this installation can check."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator.FORMAT_CHECKER


@functools.cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, KEYWORDS)  # type: ignore[no-untyped-call]


def check_schema(schema: Any, path: str) -> Problems:
    """Every problem of ``schema`` (at ``path`` in the policy); empty when it can be used."""
    if not isinstance(schema, (dict, bool)):
        return [(path, f"must be a JSON Schema (an object or true/false), got {schema!r}")]
    if _deeper_than(schema, MAX_DEPTH):
        return [(path, f"is nested more than {MAX_DEPTH} levels deep")]
    from jsonschema import Draft202012Validator

    meta = Draft202012Validator(Draft202012Validator.META_SCHEMA)
    problems = [
        (functools.reduce(_join, error.absolute_path, path), error.message)
        for error in meta.iter_errors(schema)
    ]
    return problems or list(_walk(schema, path, schema))


#: How deep a schema may nest (validators recurse per level).
MAX_DEPTH = 32


def _deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def _walk(schema: Any, path: str, root: Any) -> Iterator[tuple[str, str]]:
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        yield path, f"must be a JSON Schema (an object or true/false), got {schema!r}"
        return
    for key, value in schema.items():
        where = _join(path, key)
        if key in _ONE:
            yield from _walk(value, where, root)
        elif key in _LIST:
            for i, item in enumerate(value):
                yield from _walk(item, _join(where, i), root)
        elif key in _MAP:
            for name, item in value.items():
                yield from _walk(item, _join(where, name), root)
        elif key in _UNSUPPORTED:
            yield where, _UNSUPPORTED[key]
        elif key in KEYWORDS or key in SIBLINGS:
            yield from _check_guardkit(key, value, schema, where)
        elif key not in _DATA:
            yield (
                where,
                (
                    "unknown keyword (JSON Schema ignores unknown keywords, so a misspelt one "
                    "would silently match everything)"
                ),
            )
        else:
            yield from _check_data(key, value, where, root)


def _check_data(key: str, value: Any, where: str, root: Any) -> Iterator[tuple[str, str]]:
    if key == "$schema" and value != _DIALECT:
        yield where, f"policies use draft 2020-12 ({_DIALECT})"
    elif key == "$ref" and not _local_ref(value, root):
        yield where, f"{value!r} is not a reference to this schema's own $defs"
    elif key == "format" and value not in format_checker().checkers:
        known = ", ".join(sorted(format_checker().checkers))
        yield (
            where,
            (
                f"format {value!r} is not checked by this installation (JSON Schema would ignore "
                f"it); checked formats: {known}"
            ),
        )
    elif key == "pattern":
        try:
            re.compile(value)
        except re.error as exc:
            yield where, f"not a regular expression: {exc}"


def _local_ref(ref: str, root: Any) -> bool:
    if ref == "#":
        return True
    if not ref.startswith("#/"):
        return False
    node = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _check_sibling(key: str, value: Any, schema: JSONObject, where: str) -> Problems:
    problems: Problems = []
    if SIBLINGS[key] not in schema:
        problems.append((where, f"qualifies {SIBLINGS[key]}, which is not beside it"))
    if key == "x-path-base" and not (isinstance(value, str) and value.startswith("/")):
        problems.append((where, "must be an absolute path"))
    if key == "x-shell-compound" and not isinstance(value, bool):
        problems.append((where, "must be true or false"))
    return problems


def _check_guardkit(key: str, value: Any, schema: JSONObject, where: str) -> Problems:
    if key in SIBLINGS:
        return _check_sibling(key, value, schema, where)
    if key == "x-shell":
        if isinstance(value, (dict, bool)):
            return check_schema(value, where)
        return [(where, "must be a JSON Schema over the command's argv")]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return [(where, "must be a non-empty list of strings")]
    problems: Problems = []
    for i, entry in enumerate(value):
        if key == "x-path-under" and not entry.startswith("/"):
            problems.append((_join(where, i), "roots are absolute paths"))
        elif key == "x-url-host":
            try:
                allow_entry(entry)
            except ValueError as exc:
                problems.append((_join(where, i), str(exc)))
    return problems


@functools.lru_cache(maxsize=1024)
def _compiled(text: str) -> Any:
    schema = json.loads(text)
    return _validator_class()(_normalised(schema), format_checker=format_checker())


def _normalised(schema: Any) -> Any:
    """``x-url-host`` entries in the form hosts are compared in (``allow_entry``)."""
    if isinstance(schema, dict):
        out = {key: _normalised(value) for key, value in schema.items()}
        hosts = schema.get("x-url-host")
        if isinstance(hosts, list):
            out["x-url-host"] = [allow_entry(entry) for entry in hosts]
        for key in ("const", "enum", "default", "examples"):
            if key in schema:
                out[key] = schema[key]
        return out
    if isinstance(schema, list):
        return [_normalised(item) for item in schema]
    return schema


def validator(schema: Any) -> Any:
    """The jsonschema validator of a checked ``schema``, built once per distinct schema."""
    return _compiled(json.dumps(schema, sort_keys=True, separators=(",", ":")))


def explain(schema: Any, instance: Any) -> tuple[str, str | None]:
    """Why ``instance`` fails ``schema``: the message and the argument (first path element)."""
    from jsonschema.exceptions import best_match

    error = best_match(validator(schema).iter_errors(instance))
    if error is None:  # pragma: no cover - only called for an instance that fails
        return "does not satisfy the tool's input_schema", None
    where = error.json_path
    first = error.absolute_path[0] if error.absolute_path else None
    argument = first if isinstance(first, str) else None
    return (f"{where}: {error.message}" if where != "$" else error.message), argument

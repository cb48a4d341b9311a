"""Tool JSON schemas from Python signatures and docstrings, and validation of model arguments.

Example::

    def pay_invoice(invoice_id: str, amount: float, note: str = "") -> str:
        '''Pay one invoice.

        Args:
            invoice_id: The invoice to pay, e.g. ``INV-7``.
            amount: The amount in EUR.
        '''

    schema = tool_schema(pay_invoice)    # {"name", "description", "input_schema"}
    problems = validate(schema["input_schema"], {"invoice_id": "INV-7", "amount": "12"})
    # -> ["amount: expected number, got string"]

Schemas use the provider-neutral shape ``{"name", "description", "input_schema"}`` (Anthropic's);
the OpenAI-compatible adapter rewraps them as ``{"type": "function", "function": {...}}``.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

__all__ = ["tool_schema", "tool_schemas", "validate"]

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SECTION = re.compile(r"^(Returns|Raises|Yields|Examples?|Notes?|See Also):$")
_PARAM_LINE = re.compile(r"^\s*(?::param\s+)?(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


def tool_schemas(*funcs: Callable[..., Any]) -> list[dict[str, Any]]:
    """``tool_schema`` for each function, in order."""
    return [tool_schema(func) for func in funcs]


def tool_schema(func: Callable[..., Any], name: str | None = None) -> dict[str, Any]:
    """The tool schema of ``func``: every parameter typed, required unless it has a default.

    Parameter descriptions come from a Google-style ``Args:`` section or ``:param x:`` lines; the
    rest of the docstring is the tool's description. Extra properties are never allowed.
    """
    hints = typing.get_type_hints(func)
    summary, described = _parse_doc(inspect.getdoc(func) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{func.__name__}: *args/**kwargs cannot be described as a tool")
        prop = _type_schema(hints.get(param.name, Any))
        if param.name in described:
            prop["description"] = described[param.name]
        properties[param.name] = prop
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    return {
        "name": name or func.__name__,
        "description": summary or func.__name__,
        "input_schema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }


def _parse_doc(doc: str) -> tuple[str, dict[str, str]]:
    summary: list[str] = []
    params: dict[str, str] = {}
    in_args, in_other, indent, last = False, False, 0, ""
    for line in doc.splitlines():
        stripped, depth = line.strip(), len(line) - len(line.lstrip())
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args, in_other, indent = True, False, -1
            continue
        if depth == 0 and _SECTION.match(stripped):
            in_args, in_other = False, True
        if in_other:
            continue
        if in_args and stripped and depth == 0:
            in_args = False
        match = _PARAM_LINE.match(stripped)
        if in_args and last and indent >= 0 and depth > indent:
            params[last] += " " + stripped
        elif (in_args or stripped.startswith(":param")) and match:
            last, indent = match.group(1), depth if in_args else -1
            params[last] = match.group(2).strip()
        elif not in_args and stripped and not stripped.startswith(":"):
            summary.append(stripped)
    return " ".join(summary), params


def _type_schema(hint: Any) -> dict[str, Any]:
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        options = [_type_schema(arg) for arg in args if arg is not type(None)]
        schema = options[0] if len(options) == 1 else {"anyOf": options}
        return {"anyOf": [schema, {"type": "null"}]} if type(None) in args else schema
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        return {"type": "array", "items": _type_schema(args[0]) if args else {}}
    if origin is dict or hint is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1]) if args else {}}
    return {}


def validate(schema: Mapping[str, Any], value: Any, path: str = "") -> list[str]:
    """Every way ``value`` breaks ``schema`` (the subset ``tool_schema`` writes); ``[]`` if none."""
    where = path or "arguments"
    if "anyOf" in schema:
        if any(not validate(option, value, path) for option in schema["anyOf"]):
            return []
        return [f"{where}: {value!r} matches none of the allowed types"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']!r}"]
    kind = schema.get("type")
    if kind is not None and not _is_type(value, kind):
        return [f"{where}: expected {kind}, got {_json_type(value)}"]
    if kind == "array":
        items = schema.get("items", {})
        return [p for i, item in enumerate(value) for p in validate(items, item, f"{where}[{i}]")]
    if kind == "object":
        return _validate_object(schema, value, path)
    return []


def _validate_object(schema: Mapping[str, Any], value: Mapping[str, Any], path: str) -> list[str]:
    prefix = f"{path}." if path else ""
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    problems = [
        f"{prefix}{name}: required field is missing"
        for name in schema.get("required", ())
        if name not in value
    ]
    for key, item in value.items():
        if key in properties:
            problems += validate(properties[key], item, f"{prefix}{key}")
        elif extra is False:
            problems.append(f"{prefix}{key}: unexpected field")
        elif isinstance(extra, Mapping):
            problems += validate(extra, item, f"{prefix}{key}")
    return problems


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":  # JSON Schema counts 2.0 as an integer; JSON itself has one number type
        if isinstance(value, float):
            return value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return _json_type(value) == kind


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for py, name in ((str, "string"), (int, "integer"), (float, "number")):
        if isinstance(value, py):
            return name
    if isinstance(value, (list, tuple)):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__

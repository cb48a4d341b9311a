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
    """Every way ``value`` breaks ``schema``; ``[]`` if none.

    Judged by the ``jsonschema`` package (draft 2020-12, formats checked), the same validator
    the guard's ``input_schema`` uses, so a tool's schema means one thing to the model, the
    adapter and the guard; the problems are worded for the model (``amount: expected number,
    got string``).
    """
    from jsonschema import Draft202012Validator

    from guardkit.rules.schema import format_checker

    checker = Draft202012Validator(schema, format_checker=format_checker())
    problems: list[str] = []
    for error in checker.iter_errors(value):
        for problem in _words(error, path):
            if problem not in problems:
                problems.append(problem)
    return problems


def _where(path: str, parts: Any) -> str:
    where = path
    for part in parts:
        where = (
            f"{where}[{part}]" if isinstance(part, int) else f"{where}.{part}" if where else part
        )
    return where or "arguments"


def _words(error: Any, path: str) -> list[str]:
    """One jsonschema error in the words the adapters have always used."""
    parts, instance, keyword = list(error.absolute_path), error.instance, error.validator
    if keyword == "required":
        missing = [name for name in error.validator_value if name not in instance]
        return [f"{_where(path, [*parts, name])}: required field is missing" for name in missing]
    if keyword == "additionalProperties" and error.validator_value is False:
        known = set(error.schema.get("properties", {}))
        patterns = list(error.schema.get("patternProperties", {}))
        extra = [
            k for k in instance if k not in known and not any(re.search(p, k) for p in patterns)
        ]
        return [f"{_where(path, [*parts, key])}: unexpected field" for key in extra]
    where = _where(path, parts)
    if keyword == "type":
        kind = error.validator_value
        kinds = kind if isinstance(kind, str) else " or ".join(kind)
        return [f"{where}: expected {kinds}, got {_json_type(instance)}"]
    if keyword == "enum":
        return [f"{where}: {instance!r} is not one of {error.validator_value!r}"]
    if keyword == "anyOf":
        return [f"{where}: {instance!r} matches none of the allowed types"]
    return [f"{where}: {error.message}"]


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

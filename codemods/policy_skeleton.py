"""The policy skeleton ``guardkit fix --write`` leaves beside the project it fixed.

It lists every tool the fix gated, behind ``guardkit.tool()`` or a framework integration, and
``llm_turn`` with a ``max_calls``, in the TOML shape ``guardkit.load_policy`` reads. A tool whose
name looks destructive gets an approval *rule* (docs/policy.md) with the narrowing its kind
usually wants shown beside it (an amount threshold for ``pay*``, a path root for ``delete*``, a
domain for ``send*``, an allow-list for a shell), rather than ``requires_approval`` on every call
for good. A skeleton to review, not a
finished policy: costs are 1. A tool an integration gates is asked for by the name its
framework gives it (``framework_name``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable

__all__ = ["FILE_NAME", "framework_name", "input_schemas", "is_destructive", "render_policy"]

FILE_NAME = "guardkit-policy.toml"
#: name parts of tools that change or spend something
DESTRUCTIVE = frozenset(
    {
        "delete", "remove", "rm", "unlink", "drop", "truncate", "wipe", "destroy", "kill",
        "terminate", "write", "overwrite", "edit", "update", "move", "rename", "upload",
        "send", "email", "post", "publish", "pay", "payment", "charge", "refund", "transfer",
        "purchase", "buy", "exec", "execute", "eval", "shell", "bash", "command",
        "subprocess", "deploy", "commit", "push", "merge", "install",
    }
)  # fmt: skip


def is_destructive(name: str) -> bool:
    """``delete_file``, ``sendEmail``, ``run_shell``: a part of the name is in DESTRUCTIVE."""
    parts = re.split(r"[_\W]+|(?<=[a-z0-9])(?=[A-Z])", name)
    return any(p.lower() in DESTRUCTIVE for p in parts if p)


def _given_name(node: ast.AST) -> str | None:
    """The name a tool decorator call gives (``@tool("web_search")``, ``@server.tool(name=
    "x")``, ``@function_tool(name_override="x")``), or a tool class's ``name = "x"``."""
    if isinstance(node, ast.ClassDef):
        for item in node.body:
            target = item.targets[0] if isinstance(item, ast.Assign) else None
            target = item.target if isinstance(item, ast.AnnAssign) else target
            value = getattr(item, "value", None)
            if isinstance(target, ast.Name) and target.id == "name" and _text(value):
                return _text(value)
        return None
    for decorator in getattr(node, "decorator_list", ()):
        if not isinstance(decorator, ast.Call):
            continue
        named = [k.value for k in decorator.keywords if k.arg in ("name", "name_override")]
        for value in (*decorator.args[:1], *named):
            if _text(value):
                return _text(value)
    return None


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def framework_name(module: ast.Module, symbol: str) -> str:
    """The name a framework calls the tool ``symbol`` (``func`` or ``Class.method``) of
    ``module`` by: the one its decorator or class gives, else the function's own."""
    owner, _, func = symbol.rpartition(".")
    kinds = ast.ClassDef if owner else (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(module):
        if isinstance(node, kinds) and node.name == (owner or func):
            return _given_name(node) or func
    return func


#: Annotations whose JSON Schema type is certain (the decorator records arguments as JSON).
_JSON_TYPES = {
    "str": "string", "int": "integer", "float": "number", "bool": "boolean",
    "list": "array", "dict": "object",
}  # fmt: skip


def input_schemas(module: ast.Module) -> dict[str, dict[str, object]]:
    """An ``input_schema`` per function of ``module``, from its signature: every parameter (the
    decorator records them all, defaults applied), typed where the annotation is a plain JSON
    type, and ``_guardkit`` (the checks' findings) beside them."""
    out: dict[str, dict[str, object]] = {}
    for node in ast.walk(module):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        if node.args.vararg or node.args.kwarg:
            continue
        names = [a.arg for a in args if a.arg not in ("self", "cls")]
        properties: dict[str, object] = {}
        for arg in args:
            kind = _JSON_TYPES.get(getattr(arg.annotation, "id", ""))
            if arg.arg in names:
                properties[arg.arg] = {"type": kind} if kind else {}
        properties["_guardkit"] = {}
        out[_given_name(node) or node.name] = {
            "type": "object",
            "required": names,
            "properties": properties,
            "additionalProperties": False,
        }
    return out


def _toml_inline(value: object) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_inline(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_inline(v) for v in value) + "]"
    return json.dumps(value)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def render_policy(
    tools: Iterable[str], max_turns: int, schemas: dict[str, dict[str, object]] | None = None
) -> str:
    lines = [
        "# guardkit policy skeleton written by `guardkit fix`: review every rule before use.",
        "# Give it to the agent guard with GUARDKIT_POLICY=guardkit-policy.toml. budget: lifetime",
        "# credits; per tool: cost (credits per call), max_calls, requires_approval (a human",
        "# approves each call). An unlisted tool is denied.",
        "budget = 1000",
        "",
        "[tools.llm_turn]",
        "cost = 1",
        f"max_calls = {max_turns}",
    ]
    for name in sorted(set(tools) - {"llm_turn"}):
        key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)
        lines += ["", f"[tools.{key}]", "cost = 1"]
        schema = (schemas or {}).get(name)
        if schema is not None:
            lines += [
                "# input_schema proposed from the signature (uncomment once it matches the calls):",
                f"# input_schema = {_toml_inline(schema)}",
            ]
        if is_destructive(name):
            lines += _approval_rule(name, key)
    return "\n".join(lines) + "\n"


#: A ``when`` that narrows an approval rule to the risky calls, by the kind of tool.
_NARROWING = (
    (
        {"pay", "payment", "charge", "refund", "transfer", "purchase", "buy"},
        "when = { properties = { amount = { exclusiveMinimum = 100 } } }",
    ),
    (
        {"delete", "remove", "rm", "unlink", "wipe", "write", "overwrite", "move", "rename"},
        'when = { properties = { path = { not = { x-path-under = ["/srv/data"] } } } }',
    ),
    (
        {"send", "email", "post", "publish", "upload"},
        'when = { properties = { to = { not = { pattern = "@example\\\\.com$" } } } }',
    ),
    (
        {"exec", "execute", "shell", "bash", "command", "subprocess"},
        'when = { properties = { command = { not = { x-shell = { prefixItems = [{ enum = ["ls", '
        '"git"] }] } } } } }',
    ),
)


def _approval_rule(name: str, key: str) -> list[str]:
    parts = {p.lower() for p in re.split(r"[_\W]+|(?<=[a-z0-9])(?=[A-Z])", name) if p}
    hint = next((when for kinds, when in _NARROWING if parts & kinds), None)
    lines = ["# A human approves every call until `when` is narrowed to the risky ones"]
    if hint is not None:
        lines.append(f"# (the argument names are guesses), e.g. {hint}")
    lines.append("# Check the file with: guardkit policy check guardkit-policy.toml")
    return [
        *lines,
        f"[[tools.{key}.rules]]",
        "when = {}",
        'effect = "requires_approval"',
        f"reason = {json.dumps(f'{name} looks destructive: a human approves it')}",
    ]

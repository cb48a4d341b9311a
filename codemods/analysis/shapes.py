"""Model calls recognised by what they return, whatever client made them.

Every tool-calling API hands back a tool choice in the same few shapes: ``r.tool_calls``,
``r.message.tool_calls`` (``r["message"]["tool_calls"]``), ``r.choices[0].message``,
``r.function_call``, and content blocks (``for block in r.content: if block.type ==
"tool_use"``). A value read in one of these shapes *from its top* is a model response, and the
call that produced it (``r = client.chat(...)``, ``r = await llm.generate(...)``, ``for r in
client.stream(...)``) is a model call: an ``ollama``, ``mistralai``, ``transformers`` or
in-house client the catalogue does not know. Deeper reads (``state["messages"][-1].tool_calls``)
and ``.name`` alone are not enough, nor are calls of the module's own functions (their own
model calls are found inside them) or parsers (``resp.json()`` is followed to ``resp``).
"""

from __future__ import annotations

import ast
from functools import lru_cache

from .tree import Tree, dotted

__all__ = ["returns_tool_choice"]

#: first fields of a tool-call-shaped read (the cheap test; the full shapes are below)
_HEADS = frozenset({"tool_calls", "message", "choices", "function_call", "content"})
#: calls that parse a response the call before them produced: followed to their receiver
_PARSERS = frozenset({"json", "model_dump", "dict", "to_dict"})
_INDEX = "[]"
#: builtins, parsers and copies whose result is never a new response
_NOT_PRODUCERS = frozenset(
    {
        *("json.loads", "dict", "list", "str", "getattr", "len", "next", "iter", "reversed"),
        *("cast", "typing.cast", "copy", "deepcopy", "copy.copy", "copy.deepcopy", "replace"),
        *("dataclasses.replace", "asyncio_run", "asyncio.run"),
    }
)
#: methods that copy, pick from or update a value already at hand
_NOT_PRODUCING_METHODS = frozenset(
    {"copy", "model_copy", "get", "pop", "setdefault", "model_validate", "parse_tool_calls"}
)
#: methods that add to a field: the code builds a message (``msg.tool_calls.append(call)``)
_BUILDERS = frozenset({"append", "extend", "insert"})


def _field(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
        return _INDEX
    return None


def _chain(tree: Tree, root: ast.Name) -> tuple[list[str], ast.AST]:
    """The fields read off ``root`` (``r.choices[0].message`` -> choices, [], message) and
    the outermost expression of the read."""
    fields: list[str] = []
    node: ast.AST = root
    parent = tree.parent(node)
    while isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
        fields.append(_field(parent) or "")
        node, parent = parent, tree.parent(parent)
    return fields, node


def _tool_use_compare(tree: Tree, expr: ast.AST) -> bool:
    parent = tree.parent(expr)
    return isinstance(parent, ast.Compare) and any(
        isinstance(c, ast.Constant) and c.value == "tool_use"
        for c in [parent.left, *parent.comparators]
    )


def _shaped(fields: list[str]) -> bool:
    """Whether a read starting at a response's top is tool-call-shaped."""
    head = fields[:3]
    return (
        head[:1] in (["tool_calls"], ["function_call"])
        or head[:2] == ["message", "tool_calls"]
        or head == ["choices", _INDEX, "message"]
        or head[:3] == ["content", _INDEX, "type"]
    )


def _bound(scope: ast.AST, name: str) -> list[ast.expr]:
    """What ``name`` is bound to in ``scope``: assigned values and loop iterables."""
    found: list[ast.expr] = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                found.append(node.value)
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            if isinstance(target, ast.Name) and target.id == name and node.value is not None:
                found.append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            loop_target = node.target
            if isinstance(loop_target, ast.Name) and loop_target.id == name:
                found.append(node.iter)
    return found


def _producer(tree: Tree, scope: ast.AST, name: str, depth: int = 0) -> list[ast.Call]:
    """The calls whose result ``name`` is bound to in ``scope``: ``name = call(...)``,
    ``name = await call(...)``, ``for name in call(...)``; parsers followed to their receiver."""
    found: list[ast.Call] = []
    for bound in _bound(scope, name):
        value = bound.value if isinstance(bound, ast.Await) else bound
        if not isinstance(value, ast.Call) or tree.function_of(value) is not scope:
            continue
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in _PARSERS:
            receiver = func.value
            if isinstance(receiver, ast.Name) and depth < 2:
                found += _producer(tree, scope, receiver.id, depth + 1)
            elif isinstance(receiver, ast.Call):
                found.append(receiver)
        elif _may_produce(func):
            found.append(value)
    return found


def _may_produce(func: ast.expr) -> bool:
    """Not a builtin, a copy, a constructor (``AgentOutput(...)`` builds a message), nor a
    method of the class itself (``cls.ensure_message(...)``)."""
    name = dotted(func) or ""
    last = name.rpartition(".")[2]
    if name in _NOT_PRODUCERS or last[:1].isupper() or not last:
        return False
    if isinstance(func, ast.Attribute):
        if func.attr in _NOT_PRODUCING_METHODS:
            return False
        receiver = func.value
        return not (isinstance(receiver, ast.Name) and receiver.id in {"self", "cls"})
    return True


@lru_cache(maxsize=1)
def _responses(tree: Tree) -> frozenset[ast.Call]:
    heads: list[ast.Attribute | ast.Subscript] = [
        a for a in tree.nodes(ast.Attribute) if a.attr in _HEADS
    ]
    heads += [
        s
        for s in tree.nodes(ast.Subscript)
        if isinstance(s.slice, ast.Constant) and s.slice.value in _HEADS
    ]
    found: set[ast.Call] = set()
    for head in heads:
        root = head.value
        if not isinstance(root, ast.Name) or not isinstance(root.ctx, ast.Load):
            continue
        fields, outer = _chain(tree, root)
        if not isinstance(getattr(outer, "ctx", None), ast.Load) or _BUILDERS & set(fields):
            continue  # ``message.tool_calls = [...]``, ``.append(...)``: builds a message
        scope = tree.function_of(root)
        if _shaped(fields):
            found.update(_producer(tree, scope, root.id))
        elif fields[:1] == ["content"] and len(fields) == 1:
            found.update(_block_loops(tree, scope, root.id, outer))
    return frozenset(found)


def _block_loops(tree: Tree, scope: ast.AST, name: str, content: ast.AST) -> list[ast.Call]:
    """``for block in r.content: if block.type == "tool_use"``: ``r``'s producers."""
    loop = tree.parent(content)
    if not (isinstance(loop, (ast.For, ast.AsyncFor)) and loop.iter is content):
        return []
    if not isinstance(loop.target, ast.Name):
        return []
    var = loop.target.id
    for node in (n for stmt in loop.body for n in ast.walk(stmt)):
        if isinstance(node, ast.Name) and node.id == var:
            fields, outer = _chain(tree, node)
            if fields[:1] == ["type"] and _tool_use_compare(tree, outer):
                return _producer(tree, scope, name)
    return []


def returns_tool_choice(call: ast.Call, tree: Tree) -> bool:
    """Whether the code reads a tool choice out of what ``call`` returned."""
    return call in _responses(tree)

"""Fields that tag a value's shape in a provider's protocol (``event.type``, a message's
``role``), told apart from what the model wrote inside a response item (its ``action``'s
``type``: a computer-use ``click`` is the model's choice)."""

from __future__ import annotations

import ast

from .tree import Tree

__all__ = ["type_tag"]

#: the fields that tag a value's shape in a provider's protocol (an event's, a block's)
_TAGS = frozenset({"type", "object", "event"})
#: a message's ``role``: the chat protocol's, however the app passes the message on
_ROLE = "role"
#: the fields of a response item that hold what the model wrote in it
_PAYLOADS = frozenset({"action", "arguments", "input", "args", "params", "parameters"})


def type_tag(expr: ast.expr, tree: Tree, written: bool = False) -> bool:
    """``x.type``, ``x["type"]``, ``getattr(x, "type")``, or a variable assigned one. Of what
    the model ``written`` (its text parsed, or what a project helper made of it), only a field
    of an object is a tag: a key of a mapping (``step["type"]`` of a plan the model wrote as
    JSON) is the model's own words."""
    if isinstance(expr, ast.Name):
        scope = tree.function_of(expr)
        return any(
            type_tag(a.value, tree, written)
            for a in tree.assignments()
            if tree.function_of(a) is scope
            and any(isinstance(t, ast.Name) and t.id == expr.id for t in a.targets)
            and not isinstance(a.value, ast.Name)
        )
    read = _field_read(expr)
    if read is None:
        return False
    base, field, keyed = read
    if field == _ROLE:
        return True
    return field in _TAGS and not (written and keyed) and not _payload(base, tree)


def _field_read(expr: ast.expr) -> tuple[ast.expr, object, bool] | None:
    """``(x, "f", keyed)`` for ``x.f``, ``getattr(x, "f"[, default])`` (``keyed`` false),
    ``x["f"]`` or ``x.get("f"[, default])`` (``keyed`` true)."""
    if isinstance(expr, ast.Attribute):
        return expr.value, expr.attr, False
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        return expr.value, expr.slice.value, True
    if not isinstance(expr, ast.Call):
        return None
    func, args = expr.func, expr.args
    if isinstance(func, ast.Name) and func.id == "getattr" and 2 <= len(args) <= 3:
        field = args[1]
        return (args[0], field.value, False) if isinstance(field, ast.Constant) else None
    if isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(args) <= 2:
        field = args[0]
        return (func.value, field.value, True) if isinstance(field, ast.Constant) else None
    return None


def _payload(expr: ast.expr, tree: Tree, depth: int = 0) -> bool:
    """``expr`` is what the model wrote inside a response item, its ``action`` or its
    ``arguments`` (``item.action``, ``action = item.get("action") or {}``): a type there is
    the model's choice (a computer-use action's ``click``), not the protocol's tag."""
    if isinstance(expr, ast.BoolOp):
        return any(_payload(v, tree, depth) for v in expr.values)
    if isinstance(expr, ast.Name) and depth < 3:
        scope = tree.function_of(expr)
        return any(
            _payload(a.value, tree, depth + 1)
            for a in tree.assignments()
            if tree.function_of(a) is scope
            and any(isinstance(t, ast.Name) and t.id == expr.id for t in a.targets)
        )
    read = _field_read(expr)
    return read is not None and read[1] in _PAYLOADS

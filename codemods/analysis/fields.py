"""Where a table held by an object gets its entries: the arguments its class was built with.

A project's own agent class takes its tools when it is built and dispatches them itself::

    class Agent:
        def __init__(self, name, helpers=None):
            self.table = {fn.__name__: fn for fn in helpers or []}

        def step(self, call):
            return self.table[call.function.name](**call.arguments)

    Agent("ops", helpers=[read_logs, restart])

The dispatch runs whatever callers pass as ``helpers``: the tools are the elements of that
argument at every construction, in any module. ``sources`` follows ``self.table`` back through
the methods' assignments (comprehensions over, ``or`` defaults of, copies of other attributes)
to the constructor's parameters, or to the class's annotated fields (a pydantic model or a
dataclass built with ``Agent(functions=[...])``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

__all__ = ["entries", "sources"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: calls that copy a collection (``list(helpers)``, ``dict(tools)``)
_COPIES = frozenset({"list", "tuple", "dict", "set", "sorted", "iter"})


def _self_attr(expr: ast.expr) -> str | None:
    if (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == "self"
    ):
        return expr.attr
    return None


def _origins(expr: ast.expr) -> Iterator[ast.expr]:
    """What a value is made of: itself, what a comprehension in it iterates, both sides of an
    ``or`` default, the argument of a copy."""
    todo = [expr]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            todo += [g.iter for g in node.generators]
        elif isinstance(node, ast.BoolOp):
            todo += node.values
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in _COPIES:
                todo.append(node.args[0])
        elif isinstance(node, ast.Starred):
            todo.append(node.value)


def _fields(cls: ast.ClassDef) -> set[str]:
    """Class-level annotated names: the fields of a pydantic model or a dataclass."""
    return {
        item.target.id
        for item in cls.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }


def sources(cls: ast.ClassDef, attr: str) -> set[str]:
    """The constructor parameters and fields whose argument fills ``self.<attr>``."""
    fields = _fields(cls)
    found: set[str] = set()
    seen: set[str] = set()
    todo = [attr]
    while todo and len(seen) < 8:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in fields:
            found.add(name)
        for method in (i for i in cls.body if isinstance(i, _DEFS)):
            params = {a.arg for a in (*method.args.posonlyargs, *method.args.args)} - {"self"}
            params |= {a.arg for a in method.args.kwonlyargs}
            for origin in _assigned(method, name):
                if isinstance(origin, ast.Name) and origin.id in params:
                    if method.name == "__init__":
                        found.add(origin.id)
                elif (other := _self_attr(origin)) is not None:
                    todo.append(other)
    return found


def _assigned(method: ast.FunctionDef | ast.AsyncFunctionDef, attr: str) -> Iterator[ast.expr]:
    """Where the values ``method`` assigns to ``self.<attr>`` come from."""
    for node in ast.walk(method):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(_self_attr(t) == attr for t in targets):
            yield from _origins(value)


def entries(cls: ast.ClassDef, attr: str) -> Iterator[ast.expr]:
    """The values a method writes into ``self.<attr>`` as a literal table or list
    (``self.handlers = {"search": self.search, "shell": run_shell}``), or adds to it with
    ``update`` (``self.handlers.update({f"Pad.{m}": getattr(self.pad, m) for m in ["write",
    "read"]})``: the named attributes, ``self.pad.write`` and ``self.pad.read``)."""
    for method in (i for i in cls.body if isinstance(i, _DEFS)):
        for origin in [*_assigned(method, attr), *_updates(method, attr)]:
            if isinstance(origin, ast.Dict):
                yield from (v for v in origin.values if v is not None)
            elif isinstance(origin, (ast.List, ast.Tuple, ast.Set)):
                yield from origin.elts
            elif isinstance(origin, ast.DictComp):
                yield from _named_attributes(origin)


def _updates(method: ast.FunctionDef | ast.AsyncFunctionDef, attr: str) -> Iterator[ast.expr]:
    """What ``method`` adds to ``self.<attr>`` with ``update(...)``."""
    for node in ast.walk(method):
        func = node.func if isinstance(node, ast.Call) else None
        if (
            isinstance(node, ast.Call)
            and isinstance(func, ast.Attribute)
            and func.attr == "update"
            and _self_attr(func.value) == attr
            and node.args
        ):
            yield node.args[0]


def _named_attributes(comp: ast.DictComp) -> Iterator[ast.expr]:
    """``{k: getattr(obj, m) for m in ["a", "b"]}``: ``obj.a`` and ``obj.b``."""
    value, loops = comp.value, comp.generators
    if not (
        len(loops) == 1
        and isinstance(loops[0].target, ast.Name)
        and isinstance(loops[0].iter, (ast.List, ast.Tuple, ast.Set))
        and isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "getattr"
        and len(value.args) >= 2
        and isinstance(value.args[1], ast.Name)
        and value.args[1].id == loops[0].target.id
    ):
        return
    for name in loops[0].iter.elts:
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            yield ast.Attribute(value=value.args[0], attr=name.value, ctx=ast.Load())

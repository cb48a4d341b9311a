"""Decorators that register what they decorate: a project's own ``@tool``.

Hand-written agents keep their tools in a table a decorator fills::

    TOOLS = {}

    def tool(description):
        def register(func):
            TOOLS[func.__name__] = func
            return func
        return register

    @tool("Read a file")
    def read_file(path): ...

The decorated functions are members of ``TOOLS`` as surely as if the table listed them, so a
dispatch through ``TOOLS[name]`` (or a ``getattr`` that checks ``name in TOOLS`` first) runs
them. A *registrar* is a function of the module (or of a class body, used there while the class
is built) with a nested function, or itself, whose parameter it stores into a module-level
collection: as a key (``T[func.__name__] = ...``), a value (``T[...] = func``, ``{"fn": func}``)
or an element (``T.append(func)``). The index joins the two halves across modules: the
registrars with the collections they fill, and every module's decorated functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .tree import Tree, dotted
from .values import Values

__all__ = ["registered", "registrars"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: methods that put an element into a collection
_ADDS = frozenset({"append", "add", "insert", "extend", "update", "setdefault", "register"})
#: decorators that never register (the language's own)
_PLAIN = frozenset({"property", "staticmethod", "classmethod", "abstractmethod", "cache"})


def _mentions(expr: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expr))


def _stores(func: Def) -> Iterator[str]:
    """The collections ``func`` stores its first parameter (or its name) into."""
    params = [*func.args.posonlyargs, *func.args.args]
    if not params:
        return
    param = params[0].arg
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
                    continue
                if _mentions(target.slice, param) or _mentions(node.value, param):
                    yield target.value.id
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if node.func.attr in _ADDS and isinstance(owner, ast.Name):
                arguments = [*node.args, *(k.value for k in node.keywords)]
                if any(_mentions(a, param) for a in arguments):
                    yield owner.id


def _module_names(tree: Tree) -> set[str]:
    names: set[str] = set()
    for node in tree.module.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _scoped_defs(tree: Tree) -> Iterator[tuple[str, Def]]:
    """The module's functions and its classes' methods, by the name they are reached with
    (``name`` or ``Class.name``)."""
    for node in tree.module.body:
        if isinstance(node, _DEFS):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, _DEFS):
                    yield f"{node.name}.{item.name}", item


def _writers(tree: Tree, collections: set[str]) -> set[ast.AST]:
    """The functions (and the functions around them) that write into one of ``collections``
    (``TOOLS[name] = f``, ``TOOLS.append(f)``): the only ones that can be registrars."""
    writes: list[ast.AST] = [
        node
        for node in tree.nodes(ast.Assign)
        if any(
            isinstance(t, ast.Subscript)
            and isinstance(t.value, ast.Name)
            and t.value.id in collections
            for t in node.targets
        )
    ]
    writes += [
        node
        for node in tree.nodes(ast.Call)
        if isinstance(node.func, ast.Attribute)
        and node.func.attr in _ADDS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in collections
    ]
    return {p for node in writes for p, _ in tree.ancestors(node) if isinstance(p, _DEFS)}


def registrars(tree: Tree, values: Values) -> dict[str, list[str]]:
    """Qualified name of each registrar of the module -> the collections it fills."""
    collections = _module_names(tree)
    writers = _writers(tree, collections) if collections else set()
    found: dict[str, list[str]] = {}
    if not writers:
        return found  # most modules: nothing writes into a module-level collection
    for name, func in _scoped_defs(tree):
        if func not in writers:
            continue
        inner = [n for n in ast.walk(func) if isinstance(n, _DEFS) and n in writers]
        filled = {c for f in inner for c in _stores(f) if c in collections}
        if filled:
            found[_qualified(values, name)] = sorted(_qualified(values, c) for c in filled)
    return found


def registered(tree: Tree, values: Values) -> dict[str, list[str]]:
    """Qualified name of each decorator the module's functions and methods use (project names:
    what a registrar could be) -> the functions it decorates."""
    found: dict[str, list[str]] = {}
    for name, func in _scoped_defs(tree):
        cls = name.rpartition(".")[0]
        for decorator in func.decorator_list:
            used = dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if not used or used.rpartition(".")[2] in _PLAIN:
                continue
            if cls and "." not in used and _in_class(tree, cls, used):
                qualname = _qualified(values, f"{cls}.{used}")  # defined in the class body
            else:
                qualname = values.qualify(used) or ""
            if qualname:
                found.setdefault(qualname, []).append(_qualified(values, name))
    return found


def _in_class(tree: Tree, cls: str, name: str) -> bool:
    return any(
        isinstance(node, ast.ClassDef)
        and node.name == cls
        and any(isinstance(i, _DEFS) and i.name == name for i in node.body)
        for node in tree.module.body
    )


def _qualified(values: Values, name: str) -> str:
    return f"{values.module}.{name}" if values.module else name

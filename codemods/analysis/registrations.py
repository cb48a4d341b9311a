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
or an element (``T.append(func)``); a method that stores its parameter into its instance's
own table (``self.actions[func.__name__] = func``) fills ``Class.actions``, and what its
decorator decorates or its callers hand it (``@registry.action(...)``,
``registry.add("ls", ls)`` on an instance of the class) is registered there. The index joins
the two halves across modules: the registrars with the collections they fill, and every
module's decorated or handed functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .tree import Tree, dotted
from .values import CLASS, Values

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
    """The collections ``func`` stores a parameter (or its name) into: module-level names, or
    ``self.<attr>`` for an instance's own table."""
    params = [*func.args.posonlyargs, *func.args.args]
    names = [p.arg for p in params if p.arg not in {"self", "cls"}]
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                table = _collection(target.value) if isinstance(target, ast.Subscript) else None
                if table is None or not isinstance(target, ast.Subscript):
                    continue
                if any(_mentions(target.slice, p) or _mentions(node.value, p) for p in names):
                    yield table
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            table = _collection(node.func.value)
            if node.func.attr in _ADDS and table is not None:
                arguments = [*node.args, *(k.value for k in node.keywords)]
                if any(_mentions(a, p) for a in arguments for p in names):
                    yield table


def _collection(expr: ast.expr) -> str | None:
    """``TOOLS`` (a module-level name), or ``self.tools`` and a class method's ``cls.tools``
    (``"self.tools"``: the class's own table)."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute) and dotted(expr.value) in {"self", "cls"}:
        return f"self.{expr.attr}"
    return None


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

    def written(table: ast.expr) -> bool:
        name = _collection(table)
        return name is not None and (name in collections or name.startswith("self."))

    writes: list[ast.AST] = [
        node
        for node in tree.nodes(ast.Assign)
        if any(isinstance(t, ast.Subscript) and written(t.value) for t in node.targets)
    ]
    writes += [
        node
        for node in tree.nodes(ast.Call)
        if isinstance(node.func, ast.Attribute)
        and node.func.attr in _ADDS
        and written(node.func.value)
    ]
    return {p for node in writes for p, _ in tree.ancestors(node) if isinstance(p, _DEFS)}


def registrars(tree: Tree, values: Values) -> dict[str, list[str]]:
    """Qualified name of each registrar of the module -> the collections it fills."""
    collections = _module_names(tree)
    writers = _writers(tree, collections)
    found: dict[str, list[str]] = {}
    if not writers:
        return found  # most modules: nothing writes into a collection
    for name, func in _scoped_defs(tree):
        if func not in writers:
            continue
        cls = name.rpartition(".")[0]
        inner = [n for n in ast.walk(func) if isinstance(n, _DEFS) and n in writers]
        filled = set()
        for table in (c for f in inner for c in _stores(f)):
            if table in collections:
                filled.add(table)
            elif table.startswith("self.") and cls:  # ``self.actions[f.__name__] = f``
                filled.add(f"{cls}.{table[len('self.') :]}")
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
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if cls and "." not in used and _in_class(tree, cls, used):
                qualname = _qualified(values, f"{cls}.{used}")  # defined in the class body
            else:
                qualname = _method_of_instance(target, func, values) or values.qualify(used) or ""
            if qualname:
                found.setdefault(qualname, []).append(_qualified(values, name))
    for call in tree.nodes(ast.Call):
        # ``registry.register("read_file", read_file)`` on an instance of a project class
        if not (isinstance(call.func, ast.Attribute) and call.args):
            continue
        named = [a.id for a in call.args if isinstance(a, ast.Name)]
        functions = [q for n in named if n in values.functions and (q := values.qualify(n))]
        functions += [q for n in named if n not in values.functions and (q := _imported(n, values))]
        method = _method_of_instance(call.func, call, values) if functions else None
        if method is not None:
            found.setdefault(method, []).extend(functions)
    return found


def _imported(name: str, values: Values) -> str | None:
    """The qualified name an imported function would have (``from tools import read_file``)."""
    qualname = values.imports.resolve(name)
    return qualname if qualname and not qualname.rpartition(".")[2][:1].isupper() else None


def _method_of_instance(func: ast.expr, at: ast.AST, values: Values) -> str | None:
    """``registry.action`` with ``registry`` an instance of a project class, or the class
    itself: the method's qualified name (``pkg.registry.Registry.action``)."""
    if not isinstance(func, ast.Attribute):
        return None
    kind = values.kind(func.value, at)
    if kind is None and isinstance(func.value, ast.Name):
        # ``Runner.register("press", do_press)``: a class method of the class itself
        kind = values.qualname_kind(values.qualify(func.value.id))
    if kind is None or not kind.startswith(CLASS):
        return None
    return f"{kind[len(CLASS) :]}.{func.attr}"


def _in_class(tree: Tree, cls: str, name: str) -> bool:
    return any(
        isinstance(node, ast.ClassDef)
        and node.name == cls
        and any(isinstance(i, _DEFS) and i.name == name for i in node.body)
        for node in tree.module.body
    )


def _qualified(values: Values, name: str) -> str:
    return f"{values.module}.{name}" if values.module else name

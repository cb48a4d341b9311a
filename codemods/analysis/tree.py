"""Navigation helpers over a stdlib ``ast`` tree: parents, enclosing statements, loops, names."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["FUNCTION_NODES", "LOOP_NODES", "LoopContext", "Tree", "dotted", "scope_nodes"]

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPE_NODES = (*FUNCTION_NODES, ast.ClassDef)
LOOP_NODES = (ast.For, ast.AsyncFor, ast.While)
_DEFERRED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
Loop = ast.For | ast.AsyncFor | ast.While
#: statements after which nothing of their block runs
_JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
T = TypeVar("T", bound=ast.AST)
#: fields that never hold a node to walk: identifiers, numbers, flags, ``ctx`` markers
_LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "name", "arg", "asname", "module", "level", "kind", "conversion"}
    | {"is_async", "type_comment"}
)
_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _child_fields(kind: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a node type that may hold nodes (testing the others cost a third of
    the walk)."""
    if kind in (ast.Global, ast.Nonlocal, ast.Constant):
        return ()  # names (strings) and a Python value
    return tuple(f for f in kind._fields if f not in _LEAF_FIELDS)


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else ``None``."""
    if isinstance(node, ast.Name):
        return node.id  # the most common case, without building a list
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _scope_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """``body``'s statements and those of its ``if``/``try``/``with`` blocks, which share its
    scope (not those of loops: a definition there is remade each turn)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _scope_statements([*stmt.body, *stmt.orelse])
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _scope_statements(stmt.body)
        elif isinstance(stmt, ast.Try):
            handlers = [s for h in stmt.handlers for s in h.body]
            yield from _scope_statements([*stmt.body, *handlers, *stmt.orelse, *stmt.finalbody])


def scope_nodes(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``nodes`` that is not inside a nested function or class."""
    stack: list[ast.AST] = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPE_NODES):
            stack.extend(ast.iter_child_nodes(node))


@dataclass(frozen=True, slots=True)
class LoopContext:
    """A loop that repeats a node: ``in_body`` is False when the node sits in a ``while`` test."""

    loop: Loop
    in_body: bool


class Tree:
    """A parsed module with a parent map."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self._parents: dict[ast.AST, ast.AST] = {}
        #: node -> the innermost function containing it (filled by ``function_of``)
        self._functions: dict[ast.AST, ast.AST] = {}
        self._by_type: dict[type[ast.AST], list[ast.AST]] = defaultdict(list)
        #: ``if isinstance(x, C):`` -> ``("x", C)`` (filled by ``narrowed``)
        self._narrowing: dict[ast.AST, tuple[str, ast.expr]] | None = None
        self._narrowed_names: set[str] = set()
        self._narrowed_tails: set[str] = set()
        self._top_level: list[ast.stmt] | None = None
        self._definitions: dict[ast.AST, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self._assignments: list[ast.Assign] | None = None
        # One hand-rolled pass instead of many ast.walk() calls: ast.walk dominates the profile.
        stack: list[ast.AST] = [module]
        parents = self._parents
        by_type = self._by_type
        while stack:
            node = stack.pop()
            kind = type(node)
            by_type[kind].append(node)
            fields = _CHILD_FIELDS.get(kind)
            if fields is None:
                fields = _CHILD_FIELDS[kind] = _child_fields(kind)
            for name in fields:
                value = getattr(node, name, None)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, ast.AST):
                            parents[item] = node
                            stack.append(item)
                elif isinstance(value, ast.AST):
                    parents[value] = node
                    stack.append(value)

    @property
    def top_level(self) -> list[ast.stmt]:
        """The statements at module scope: the module's body and, through ``if``, ``try`` and
        ``with`` blocks, theirs (a function defined under ``if __name__ == "__main__":`` is a
        module-level function)."""
        if self._top_level is None:
            self._top_level = list(_scope_statements(self.module.body))
        return self._top_level

    def definitions(self, scope: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        """The functions ``scope`` (the module or a function) defines in its own scope, by name
        (through ``if``, ``try`` and ``with`` blocks; the last definition wins)."""
        found = self._definitions.get(scope)
        if found is None:
            if scope is self.module:
                body = self.top_level
            elif isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = list(_scope_statements(scope.body))
            else:
                body = []
            found = {
                s.name: s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            self._definitions[scope] = found
        return found

    def nodes(self, *types: type[T]) -> list[T]:
        """Every node of the given types, in a stable (depth-first) order."""
        found: list[T] = []
        for kind in types:
            found.extend(self._by_type.get(kind, ()))  # type: ignore[arg-type]
        return found

    def assignments(self) -> list[ast.Assign]:
        """Every ``x = v``, and every ``x: T = v`` as one (an ``Assign`` made at its place, with
        its target and value): where a value flows, an annotation changes nothing."""
        if self._assignments is None:
            found = self.nodes(ast.Assign)
            for node in self.nodes(ast.AnnAssign):
                if node.value is not None:
                    plain = ast.copy_location(ast.Assign([node.target], node.value), node)
                    self._parents[plain] = self._parents[node]
                    found.append(plain)
            self._assignments = found
        return self._assignments

    def unreachable(self, node: ast.AST) -> bool:
        """Whether ``node`` sits after a ``return``, ``raise``, ``break`` or ``continue`` of its
        own block (or of a block around it, up to its function): code that never runs."""
        for parent, child in self.ancestors(node):
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(parent, field, None)
                if type(block) is not list or not any(s is child for s in block):
                    continue
                for stmt in block:
                    if stmt is child:
                        break
                    if isinstance(stmt, _JUMPS):
                        return True
            if isinstance(parent, SCOPE_NODES):
                return False
        return False

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self._parents.get(node)

    def ancestors(self, node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
        """Pairs ``(ancestor, child on the path)`` from the node upwards."""
        child = node
        parent = self._parents.get(child)
        while parent is not None:
            yield parent, child
            child, parent = parent, self._parents.get(parent)

    def function_of(self, node: ast.AST) -> ast.AST:
        """The innermost function (or lambda) containing ``node``, else the module."""
        # memoised along the path: the analysis asks this for most nodes, often repeatedly
        known = self._functions
        path: list[ast.AST] = []
        current: ast.AST | None = self._parents.get(node)
        found: ast.AST = self.module
        while current is not None:
            if current in known:
                found = known[current]
                break
            if isinstance(current, FUNCTION_NODES):
                found = current
                break
            path.append(current)
            current = self._parents.get(current)
        for item in path:
            known[item] = found
        return found

    def class_of(self, node: ast.AST) -> ast.ClassDef | None:
        """The class a method's body belongs to (skipping the method itself)."""
        func = self.function_of(node)
        if func is self.module:
            return None
        parent = self._parents.get(func)
        return parent if isinstance(parent, ast.ClassDef) else None

    def statement_of(self, node: ast.AST) -> ast.stmt:
        """The innermost statement containing (or being) ``node``."""
        if isinstance(node, ast.stmt):
            return node
        for parent, _ in self.ancestors(node):
            if isinstance(parent, ast.stmt):
                return parent
        raise ValueError("node outside any statement")

    def loops_of(self, node: ast.AST) -> list[LoopContext]:
        """Loops of the same function that repeat ``node``, innermost first."""
        found: list[LoopContext] = []
        for parent, child in self.ancestors(node):
            if isinstance(parent, SCOPE_NODES):
                break
            if isinstance(parent, LOOP_NODES):
                if any(child is stmt for stmt in parent.body):
                    found.append(LoopContext(parent, in_body=True))
                elif isinstance(parent, ast.While) and child is parent.test:
                    found.append(LoopContext(parent, in_body=False))
        return found

    def narrowed(self, expr: ast.expr, at: ast.AST) -> ast.expr | None:
        """The class ``expr`` is narrowed to at ``at`` by an enclosing ``if isinstance(expr,
        C):`` of the same function (``C``), if any."""
        if self._narrowing is None:
            self._narrowing = {}
            for call in self.nodes(ast.Call):
                parent = self._parents.get(call)
                if (
                    isinstance(parent, ast.If)
                    and parent.test is call
                    and dotted(call.func) == "isinstance"
                    and len(call.args) == 2
                    and not isinstance(call.args[1], ast.Tuple)
                ):
                    name = dotted(call.args[0])
                    if name:
                        self._narrowing[parent] = (name, call.args[1])
            self._narrowed_names = {name for name, _ in self._narrowing.values()}
            self._narrowed_tails = {n.rpartition(".")[2] for n in self._narrowed_names}
        if not self._narrowing:
            return None
        tail = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", None)
        if tail not in self._narrowed_tails:
            return None
        name = dotted(expr)
        if name not in self._narrowed_names:
            return None
        for parent, child in self.ancestors(at):
            if isinstance(parent, SCOPE_NODES):
                break
            if not isinstance(parent, ast.If) or parent not in self._narrowing:
                continue
            tested, cls = self._narrowing[parent]
            if tested == name and any(child is s for s in parent.body):
                return cls
        return None

    def in_comprehension_or_lambda(self, node: ast.AST) -> bool:
        for parent, _ in self.ancestors(node):
            if isinstance(parent, ast.stmt):
                return False
            if isinstance(parent, _DEFERRED):
                return True
        return False

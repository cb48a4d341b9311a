"""The analysis tree indexes every node of a module (it walks only the fields that can hold one)."""

from __future__ import annotations

import ast
import inspect
import textwrap

from guardkit.codemods import runner
from guardkit.codemods.analysis import tree as tree_module
from guardkit.codemods.analysis.tree import Tree

#: shared instances in CPython's trees: their parent is whichever node came last
_SHARED = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)

SOURCE = textwrap.dedent(
    """
    import os.path as p, sys
    from . import a as b
    x: int = 1
    def f(a, /, b=2, *c, d: "str" = None, **e) -> list[int]:  # type: ignore
        global g
        nonlocal_ = lambda y: y
        return [i async for i in a if i] + [f"{b!r:>{c}}"] + {k: v for k, v in e.items()}
    async def h():
        async with a as b, c:
            await b
        async for i in c:
            yield i
    class C(B, metaclass=M):
        @dec
        def m(self): return (yield from self.n) or not -1 < 2 <= 3
    try:
        raise E from x
    except (E, F) as err:
        del err
    finally:
        assert x, "msg"
    while x:
        x -= 1
    else:
        pass
    match cmd:
        case [Point(x=0, y=yy), *rest] if yy: pass
        case {"k": 1, **kw}: pass
        case str() | bytes() as s: pass
    with open(p) as (fa, fb):
        t = fa[1:2, ::3], *fb
    """
)


def _expected(module: ast.Module) -> list[ast.AST]:
    return [n for n in ast.walk(module) if not isinstance(n, ast.expr_context)]


def _check(module: ast.Module) -> None:
    tree = Tree(module)
    indexed = [n for nodes in tree._by_type.values() for n in nodes]
    assert sorted(map(id, indexed)) == sorted(map(id, _expected(module)))
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _SHARED):
                assert tree.parent(child) is node


def test_every_node_is_indexed_with_its_parent() -> None:
    _check(ast.parse(SOURCE))


def test_real_modules_are_indexed_whole() -> None:
    for module in (runner, tree_module, ast):
        _check(ast.parse(inspect.getsource(module)))

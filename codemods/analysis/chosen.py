"""Is a value a tool name the model chose? The test that tells dispatch from other lookups.

A model-chosen name is read from a tool call (``call.function.name``, ``block.name``,
``tool_call["function"]["name"]``), or is a variable assigned from one (also respelled by
string methods, or by a function of the module that returns its parameter so:
``self._normalize(call.name)``), or the ``name``/``tool_name`` parameter of a dispatch helper.
Not chosen by the model: constants, the names of types (``type(exc).__name__``), event kinds,
keys read from configuration or typed by a user.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from functools import lru_cache

from .tree import Tree, dotted

__all__ = [
    "INPUT_FIELDS",
    "affixes",
    "NAME_FIELDS",
    "local_function",
    "may_choose",
    "model_chosen",
    "reads_tool_name",
    "takes_tool_input",
]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)

#: fields and parameters that hold the name of the tool the model picked
NAME_FIELDS = frozenset({"name", "tool_name", "function_name", "fn_name", "tool"})
#: fields and variables that hold the arguments the model wrote for a tool call
INPUT_FIELDS = frozenset(
    {"args", "arguments", "kwargs", "tool_args", "tool_input", "input", "inputs", "params"}
    | {"parameters"}  # Llama's JSON tool calls: ``{"name": ..., "parameters": {...}}``
)


def reads_tool_name(expr: ast.expr) -> bool:
    """``x.name``, ``x["name"]``, ``x.get("name")``, ``x.function.name``... on something that
    is not a type."""
    field: object
    if isinstance(expr, ast.Subscript):
        field = expr.slice.value if isinstance(expr.slice, ast.Constant) else None
        base = expr.value
    elif isinstance(expr, ast.Attribute):
        field, base = expr.attr, expr.value
    elif (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and expr.args
        and isinstance(expr.args[0], ast.Constant)
    ):
        field, base = expr.args[0].value, expr.func.value
    else:
        return False
    if field not in NAME_FIELDS:
        return False
    if isinstance(base, ast.Call) and dotted(base.func) == "type":
        return False
    return not (isinstance(base, ast.Attribute) and base.attr == "__class__")


@lru_cache(maxsize=1)
def may_choose(tree: Tree) -> bool:
    """Whether the module reads a tool name anywhere (``x.name``, ``x["name"]``,
    ``x.get("name")``, a ``name`` parameter): without one, no lookup in it can be model-chosen
    (a cheap test first)."""
    if any(a.attr in NAME_FIELDS for a in tree.nodes(ast.Attribute)):
        return True
    if any(a.arg in NAME_FIELDS for a in tree.nodes(ast.arg)):
        return True
    if any(
        isinstance(s.slice, ast.Constant) and s.slice.value in NAME_FIELDS
        for s in tree.nodes(ast.Subscript)
    ):
        return True
    return any(reads_tool_name(c) for c in tree.nodes(ast.Call) if c.args)


#: string methods that keep a name the model chose (a normalised spelling of it)
_SPELLINGS = frozenset(
    {"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "replace", "removeprefix"}
    | {"removesuffix", "title"}
)


def _spelled(expr: ast.expr, tree: Tree, params: frozenset[str] = frozenset()) -> bool:
    """``expr`` is a tool name read (or one of ``params``), as it is or respelled by string
    methods (``name.lower().replace("_", "")``) or by a function of the module whose return
    respells its parameter (``self._normalize_name(tool_call.name)``)."""
    if reads_tool_name(expr) or (isinstance(expr, ast.Name) and expr.id in params):
        return True
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr in _SPELLINGS:
        return _spelled(func.value, tree, params)
    if params or len(expr.args) != 1 or expr.keywords or not reads_tool_name(expr.args[0]):
        return False
    helper = local_function(func, tree, expr)
    return helper is not None and _respells(helper, tree)


def local_function(func: ast.expr, tree: Tree, at: ast.AST) -> ast.AST | None:
    """The function ``f`` defined in an enclosing function or at module level (the nearest,
    as Python resolves the name; under an ``if __name__ == "__main__":`` too), or the method
    ``self.f`` of the enclosing class."""
    if isinstance(func, ast.Name):
        scope = tree.function_of(at)
        while isinstance(scope, _DEFS):
            nested = tree.definitions(scope).get(func.id)
            if nested is not None:
                return nested
            scope = tree.function_of(scope)
        return tree.definitions(tree.module).get(func.id)
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and (cls := tree.class_of(at)) is not None
    ):
        return next((d for d in cls.body if isinstance(d, _DEFS) and d.name == func.attr), None)
    return None


def overrides(
    func: ast.expr, tree: Tree, at: ast.AST
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """For ``self.f(...)``: the ``f`` of the module's subclasses of the enclosing class (a
    template method's hook, run on an instance of a subclass)."""
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        return []
    below = _subclasses(tree)
    cls = tree.class_of(at) if below else None
    if cls is None:
        return []
    return [
        d
        for sub in below.get(cls.name, ())
        for d in sub.body
        if isinstance(d, _DEFS) and d.name == func.attr
    ]


@lru_cache(maxsize=1)
def _subclasses(tree: Tree) -> dict[str, list[ast.ClassDef]]:
    """Class name -> the module's classes below it, a few levels down."""
    classes = tree.nodes(ast.ClassDef)
    direct: dict[str, list[ast.ClassDef]] = {}
    for cls in classes:
        for base in cls.bases:
            name = dotted(base)
            if name and name != cls.name:
                direct.setdefault(name, []).append(cls)
    found: dict[str, list[ast.ClassDef]] = {}
    for name, subs in direct.items():
        seen: list[ast.ClassDef] = []
        todo = list(subs)
        while todo and len(seen) < 64:
            sub = todo.pop()
            if sub not in seen:
                seen.append(sub)
                todo += direct.get(sub.name, [])
        found[name] = seen
    return found


def _respells(func: ast.AST, tree: Tree) -> bool:
    """A function whose body returns its (first non-``self``) parameter respelled."""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    params = params[1:] if params[:1] in (["self"], ["cls"]) else params
    body = [b for b in func.body if not isinstance(b, ast.Expr)]  # docstrings
    if len(params) != 1 or len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    value = body[0].value
    return value is not None and _spelled(value, tree, frozenset(params))


@lru_cache(maxsize=1)
def _assigned_names(tree: Tree) -> frozenset[tuple[ast.AST, str]]:
    """``(function, variable)`` pairs assigned a tool name: ``name = call.function.name``,
    ``key = call.name.lower()``, ``key = self._normalize_name(call.name)``."""
    found: set[tuple[ast.AST, str]] = set()
    for assign in tree.assignments():
        if _spelled(assign.value, tree):
            func = tree.function_of(assign)
            found.update((func, t.id) for t in assign.targets if isinstance(t, ast.Name))
    return frozenset(found)


def model_chosen(expr: ast.expr, tree: Tree, chosen: Collection[tuple[ast.AST, str]] = ()) -> bool:
    """Whether ``expr`` is (or holds) a tool name the model chose; ``chosen`` adds
    ``(function, parameter)`` pairs known to hold one (an MCP ``call_tool`` handler's name, a
    tool's own parameters)."""
    if reads_tool_name(expr):
        return True
    affixed = affixes(expr)
    if affixed is not None:  # ``f"tool_{name}"``, ``"do_" + name``: the choice, spelled in
        return model_chosen(affixed[1], tree, chosen)
    if (  # ``name.lower()``: the same choice respelled
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in _SPELLINGS
    ):
        return model_chosen(expr.func.value, tree, chosen)
    if not isinstance(expr, ast.Name):
        return False
    func = tree.function_of(expr)
    if (func, expr.id) in chosen:
        return True
    if expr.id in NAME_FIELDS and isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        params = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
        if any(p.arg == expr.id for p in params):
            return True
    return (func, expr.id) in _assigned_names(tree)


def affixes(expr: ast.expr) -> tuple[str, ast.expr, str] | None:
    """``(prefix, name, suffix)`` for ``f"tool_{name}"``, ``"do_" + name`` or ``name + "_tool"``:
    a name spelled into a longer one between constant strings."""
    if isinstance(expr, ast.JoinedStr):
        parts = expr.values
        held = [p for p in parts if isinstance(p, ast.FormattedValue)]
        if len(held) != 1 or held[0].format_spec is not None or held[0].conversion != -1:
            return None
        at = parts.index(held[0])
        text = [str(p.value) if isinstance(p, ast.Constant) else "" for p in parts]
        return "".join(text[:at]), held[0].value, "".join(text[at + 1 :])
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = expr.left, expr.right
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return left.value, right, ""
        if isinstance(right, ast.Constant) and isinstance(right.value, str):
            return "", left, right.value
    return None


def takes_tool_input(
    call: ast.Call, tree: Tree, chosen: Collection[tuple[ast.AST, str]] = ()
) -> bool:
    """The call is handed the tool call's input (``**args``, ``block.input``,
    ``json.loads(call.function.arguments)``, ``args["path"]``, a tool's own parameter), not the
    whole object a parser or an event printer would take."""
    if any(k.arg is None for k in call.keywords):
        return True  # ``**arguments``
    return any(
        is_tool_input(a, tree, chosen) for a in [*call.args, *(k.value for k in call.keywords)]
    )


def is_tool_input(expr: ast.expr, tree: Tree, chosen: Collection[tuple[ast.AST, str]] = ()) -> bool:
    """``expr`` reads the tool call's input (``block.input``, ``args["path"]``), or is a
    variable of ``chosen``."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            field = node.slice.value
        elif isinstance(node, (ast.Name, ast.Attribute)):
            field = (dotted(node) or "").rpartition(".")[2]
            if isinstance(node, ast.Name) and (tree.function_of(node), node.id) in chosen:
                return True
        else:
            continue
        if field in INPUT_FIELDS:
            return True
    return False

"""Calls that act and functions that only build a value.

A call acts when it does something with what it is given (``shutil.move(src, dst)``,
``subprocess.run(cmd)``); a builtin, a constructor, a parser or a logger makes or shows a value.
A function *builds* when its body only makes a value from its parameters and returns it (a
provider's item as a dict literal, an escaped pattern): handed part of what the model wrote, it
runs nothing the model chose, it formats it.
"""

from __future__ import annotations

import ast
import builtins

from .catalog import LOGGER_NAMES
from .imports import ImportMap
from .tree import dotted

__all__ = ["acts", "builds"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
#: calls that make or show a value from their arguments, they act on nothing
_PURE = frozenset(dir(builtins)) | {"json.dumps", "json.loads", "print"}
#: builtins that make a value (no ``open``, ``print``, ``exec``, ``input``...)
_MAKING = frozenset(
    {"abs", "bool", "bytes", "chr", "dict", "divmod", "enumerate", "filter", "float", "format"}
    | {"frozenset", "getattr", "hasattr", "hex", "int", "isinstance", "len", "list", "map"}
    | {"max", "min", "ord", "range", "repr", "reversed", "round", "set", "sorted", "str", "sum"}
    | {"tuple", "type", "zip"}
)
#: modules whose functions parse or format what they are given
_FORMATTING = frozenset({"json", "re", "textwrap", "string", "math", "base64", "html", "shlex"})
#: methods of strings and mappings that read or reshape a value
_READING = frozenset(
    {"format", "join", "strip", "lstrip", "rstrip", "lower", "upper", "title", "split"}
    | {"rsplit", "splitlines", "replace", "startswith", "endswith", "get", "items", "keys"}
    | {"values", "copy", "encode", "decode", "count", "find"}
)
#: what a builder returns: a value made in the return itself
_MADE = (ast.Dict, ast.JoinedStr, ast.DictComp, ast.ListComp, ast.Call)


def acts(call: ast.Call, imports: ImportMap) -> bool:
    """A library call that does something with what it is given (``shutil.move(src, dst)``,
    ``client.containers.get(id).stop()``), not a constructor, a builtin or a logger."""
    name = dotted(call.func) or ""
    if name.rpartition(".")[2][:1].isupper() or name in _PURE:
        return False
    qualified = imports.resolve(name) or name
    if qualified in _PURE or qualified.partition(".")[0] in {"logging", "json", "typing"}:
        return False
    root = name.partition(".")[0]
    return root not in LOGGER_NAMES and not (
        isinstance(call.func, ast.Attribute) and call.func.attr in {"format", "join", "get"}
    )


def builds(func: Def, imports: ImportMap) -> bool:
    """``func`` only makes a value from its parameters: its statements assign names, test and
    return; its calls make values (builtins, parsing and formatting modules, a string's or a
    mapping's reading methods); and it returns a value it made (a dict or f-string literal,
    or such a call), not its parameters handed back (a stand-in's ``return url``)."""
    body = [
        s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    if not body or not all(_plain(s) for s in body):  # most functions stop here
        return False
    nodes = list(ast.walk(func))
    made = [n.value for n in nodes if isinstance(n, ast.Return) and n.value is not None]
    if not made or not all(_made(v) for v in made):
        return False
    if any(isinstance(n, (ast.Await, ast.Yield, ast.YieldFrom)) for n in nodes):
        return False
    return all(_making(n, imports) for n in nodes if isinstance(n, ast.Call))


def _made(value: ast.expr) -> bool:
    """A mapping, a formatted string or a call's value, or a sequence with more in it than
    the names it was handed (``return (x, y)`` hands its parameters back)."""
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return any(not isinstance(e, ast.Name) for e in value.elts)
    return isinstance(value, _MADE)


def _plain(stmt: ast.stmt) -> bool:
    """An assignment to a name, a ``return``, or an ``if`` of those."""
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, (ast.Name, ast.Tuple)) for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return isinstance(stmt.target, ast.Name)
    if isinstance(stmt, ast.If):
        return all(_plain(s) for s in (*stmt.body, *stmt.orelse))
    return isinstance(stmt, ast.Return)


def _making(call: ast.Call, imports: ImportMap) -> bool:
    """A call that makes a value: a builtin's, a parsing or formatting module's, or a reading
    method of a value that is no import and no attribute of ``self`` (a client's ``get``)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in _MAKING and imports.resolve(func.id) is None
    qualified = imports.resolve(dotted(func))
    if qualified is not None:
        return qualified.partition(".")[0] in _FORMATTING
    if not isinstance(func, ast.Attribute) or func.attr not in _READING:
        return False
    root = func.value
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    return not (isinstance(root, ast.Name) and root.id in {"self", "cls"})

"""Classify the calls of a module: model calls, ``llm_turn`` gates, guard requests.

A model call is recognised from where its receiver came from (see ``values``), from its
qualified name (``litellm.completion``), from what it returns (a tool choice read out of it,
see ``shapes``) or from what it is handed (``model=`` and ``messages=`` on an instance of an
imported class), never from the method name alone.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from .catalog import AGENT_RUN_KINDS, AGENT_RUNS, HTTP_POSTS, MODEL_ENDPOINTS, TURN_GATES
from .imports import ImportMap
from .retries import retried, retry_loop
from .shapes import returns_tool_choice
from .tree import FUNCTION_NODES, LoopContext, Tree, dotted
from .values import CLASS, GUARDKIT, MODEL_FUNCTION, Values

__all__ = ["ModelCall", "classify_calls", "is_guard_receiver"]

_GUARD_FUNCTIONS = frozenset({"guardkit.authorize", "guardkit.request"})
_GUARD_METHODS = frozenset({"request", "authorize", "arequest", "aauthorize"})
_HTTP_METHODS = frozenset({"post", "request", "stream"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """A call that sends a turn to a model."""

    node: ast.Call
    symbol: str
    stmt: ast.stmt
    function: ast.AST
    loops: tuple[LoopContext, ...]
    gated: bool
    fixable: bool
    #: the statement a gate wraps: the call's statement, or the retry loop around it
    wrap: ast.stmt | None = None
    #: inside a function a retry decorator runs again on errors (its callers are the turn)
    retried: bool = False


@dataclass(slots=True)
class CallIndex:
    """The interesting calls of a module, in source order."""

    model: list[ModelCall]
    gates: list[ast.Call]
    guard_requests: list[ast.Call]


def is_guard_receiver(expr: ast.expr, values: Values, at: ast.AST) -> bool:
    """Whether ``expr`` is a guardkit agent/guard (by dataflow, or by a guard-ish name)."""
    if values.kind(expr, at) == GUARDKIT:
        return True
    name = dotted(expr)
    last = name.rpartition(".")[2].lower() if name else ""
    return "guard" in last or "agent" in last


def _method_call(call: ast.Call, values: Values) -> tuple[str, bool] | None:
    """``(first string argument, is guard)`` for ``<guard>.request(...)``/``.authorize(...)``."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _GUARD_METHODS or not call.args:
        return None
    if not is_guard_receiver(func.value, values, call):
        return None
    first = call.args[0]
    return (first.value if isinstance(first, ast.Constant) else "", True)  # type: ignore[return-value]


def _strings(expr: ast.expr | None, values: Values) -> list[str]:
    """String constants an expression is built from, following names to their assignments
    and ``self.<field>`` to the class's own (``api_url: str = ".../chat/completions"``)."""
    if expr is None:
        return []
    found = _constants(expr)
    tree = values.tree
    for name in (n for n in ast.walk(expr) if isinstance(n, ast.Name)):
        for assign in tree.nodes(ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name.id for t in assign.targets):
                found += _constants(assign.value)
    cls = tree.class_of(expr)
    fields = {
        n.attr
        for n in ast.walk(expr)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }
    for stmt in cls.body if cls is not None and fields else ():
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets: list[ast.expr] = [stmt.target]
        elif isinstance(stmt, ast.Assign):
            targets = stmt.targets
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id in fields for t in targets):
            found += _constants(stmt.value)
    return found


def _constants(expr: ast.expr | None) -> list[str]:
    nodes = ast.walk(expr) if expr is not None else ()
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _posts_to_model(call: ast.Call, values: Values, qualname: str | None) -> bool:
    """``requests.post(".../chat/completions", ...)`` and the like: a model call over HTTP."""
    func = call.func
    if qualname not in HTTP_POSTS and not (
        isinstance(func, ast.Attribute)
        and func.attr in _HTTP_METHODS
        and values.kind(func.value, call) == "http"
    ):
        return False
    url = next((k.value for k in call.keywords if k.arg == "url"), None)
    if url is None and call.args:
        # ``session.request("POST", url)``, ``client.stream("POST", url)``: the method first
        method_first = isinstance(func, ast.Attribute) and func.attr in {"request", "stream"}
        url = call.args[1] if method_first and len(call.args) > 1 else call.args[0]
    if url is None:  # ``requests.post(**request)`` with ``request = {"url": ..., ...}``
        url = next((k.value for k in call.keywords if k.arg is None), None)
    return any(e in text for text in _strings(url, values) for e in MODEL_ENDPOINTS)


def _model_symbol(call: ast.Call, values: Values, imports: ImportMap) -> str | None:
    name = dotted(call.func)
    qualname = imports.resolve(name)
    if qualname in values.catalog.functions:
        return name
    if _posts_to_model(call, values, qualname):
        return name or ast.unparse(call.func)
    node: ast.expr = call.func
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
        kind = values.kind(node, call)
        if kind and ".".join(chain) in values.catalog.methods.get(kind, ()):
            return name or ast.unparse(call.func)
    if values.held_kind(call.func, call) == MODEL_FUNCTION:
        return name or ast.unparse(call.func)
    return None


def _shaped_symbol(call: ast.Call, values: Values, imports: ImportMap) -> str | None:
    """A call whose result the code reads a tool choice out of (see ``shapes``)."""
    if not returns_tool_choice(call, values.tree):
        return None
    name = dotted(call.func)
    if _own_function(call, values, imports.resolve(name)):
        return None
    return name or ast.unparse(call.func)


#: the keywords every chat API takes: a model's name and the conversation so far
_CHAT_KEYWORDS = frozenset({"model", "messages"})
#: words of methods that take a model and messages without calling it (counting, preparing)
_NOT_TURNS = ("count", "token", "prepare", "kwargs", "arguments", "params", "cost", "log")


def _library_instance(expr: ast.expr | None, imports: ImportMap) -> bool:
    """An instance of an imported class, or a resource of one (``Spice()``,
    ``OpenAI(...).chat.completions``)."""
    if isinstance(expr, ast.Await):
        expr = expr.value
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    if not isinstance(expr, ast.Call):
        return False
    name = dotted(expr.func)
    return bool(name and name.rpartition(".")[2][:1].isupper() and imports.resolve(name))


@lru_cache(maxsize=1)
def _built_clients(tree: Tree, imports: ImportMap) -> frozenset[str]:
    """Names and ``self`` attributes bound to an instance of an imported class
    (``self.spice = Spice()``, ``chat = acme.Chat(...)``), directly or through a factory of
    this module that returns one (``self.client = self.create_client()``, whichever subclass
    overrides it): clients of some library."""
    defs: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
        *tree.nodes(ast.FunctionDef),
        *tree.nodes(ast.AsyncFunctionDef),
    ]
    factories = {
        func.name
        for func in defs
        if any(
            _library_instance(node.value, imports)
            for node in ast.walk(func)
            if isinstance(node, ast.Return)
        )
    }
    found: set[str] = set()
    for node in tree.nodes(ast.Assign):
        value = node.value.value if isinstance(node.value, ast.Await) else node.value
        if not isinstance(value, ast.Call):
            continue
        factory = (dotted(value.func) or "").rpartition(".")[2] in factories
        if factory or _library_instance(value, imports):
            found.update(t for t in map(dotted, node.targets) if t)
    return frozenset(found)


def _chat_symbol(call: ast.Call, values: Values, imports: ImportMap) -> str | None:
    """A method call handed a model's name and the conversation (``model=..., messages=...``) on
    an instance of an imported class: a chat turn by a client the catalog does not know
    (``self.spice.get_response(...)`` with ``self.spice = Spice()``, or a resource of it:
    ``client.beta.messages.create(...)``), unless it is a private
    helper, a counter or preparer, or the project's own code."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr[:1] == "_" or func.attr[:1].isupper():
        return None
    if not {k.arg for k in call.keywords} >= _CHAT_KEYWORDS:
        return None
    if any(word in func.attr.lower() for word in _NOT_TURNS):
        return None
    receiver = (dotted(func.value) or "").split(".")
    built = _built_clients(values.tree, imports)
    if not any(".".join(receiver[:n]) in built for n in range(1, len(receiver) + 1)):
        return None  # a parameter or a value of unknown origin: never by the method alone
    name = dotted(func)
    if _own_function(call, values, imports.resolve(name)):
        return None
    return name or ast.unparse(func)


def _own_function(call: ast.Call, values: Values, qualname: str | None) -> bool:
    """A call of the project's own code (a function, a method of a project class): its model
    calls are found inside it."""
    if values.callee(call, call) is not None:
        return True
    func = call.func
    if isinstance(func, ast.Attribute) and (values.kind(func.value, call) or "").startswith(CLASS):
        return True  # ``agent.take_step(...)`` on an instance of a project class
    module = values.module.partition(".")[0]
    return bool(qualname and module and qualname.partition(".")[0] == module)


def agent_run(call: ast.Call, values: Values) -> bool:
    """A framework agent's whole run (``Runner.run``, ``agent.invoke`` on ``create_agent``):
    many turns, gated by the framework's integration rather than one ``model_turn()``."""
    if values.qualify(dotted(call.func)) in AGENT_RUNS:
        return True
    func = call.func
    return isinstance(func, ast.Attribute) and values.kind(func.value, call) in AGENT_RUN_KINDS


def classify_calls(
    tree: Tree,
    values: Values,
    imports: ImportMap,
    turns: Callable[[ast.Call], str | None] | None = None,
) -> CallIndex:
    """Find model calls, gates and guard requests, and decide which model calls are gated;
    ``turns`` names calls of project functions that are a model turn (retried helpers)."""
    index = CallIndex(model=[], gates=[], guard_requests=[])
    found: list[tuple[ast.Call, str]] = []
    for node in tree.nodes(ast.Call):
        qualname = imports.resolve(dotted(node.func))
        method = _method_call(node, values)
        if qualname in TURN_GATES or (method and method[0] == "llm_turn"):
            index.gates.append(node)
        elif qualname in _GUARD_FUNCTIONS or method:
            index.guard_requests.append(node)
        elif values.has_gate(node):
            continue
        else:
            symbol = (
                _model_symbol(node, values, imports)
                or (turns(node) if turns else None)
                or _shaped_symbol(node, values, imports)
                or _chat_symbol(node, values, imports)
            )
            if symbol:
                found.append((node, symbol))
    index.gates.sort(key=_pos)
    index.guard_requests.sort(key=_pos)
    found.sort(key=lambda item: _pos(item[0]))
    for node, symbol in found:
        run = agent_run(node, values)
        call = _model_call(tree, node, symbol, index.gates, found, imports, run)
        index.model.append(call)
    return index


def _pos(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _innermost(tree: Tree, node: ast.AST) -> ast.AST | None:
    loops = tree.loops_of(node)
    return loops[0].loop if loops else None


def _model_call(
    tree: Tree,
    node: ast.Call,
    symbol: str,
    gates: list[ast.Call],
    calls: list[tuple[ast.Call, str]],
    imports: ImportMap,
    run: bool,
) -> ModelCall:
    stmt = tree.statement_of(node)
    wrap = retry_loop(tree, node) or stmt
    function = tree.function_of(node)
    in_retried = retried(function, imports, tree)
    loops = tuple(tree.loops_of(node))
    region = _innermost(tree, wrap)
    before = [
        g
        for g in gates
        if _pos(g) < _pos(node)
        and tree.function_of(g) is function
        and _innermost(tree, g) is region
    ]
    gated = False
    if before:
        gate = before[-1]
        gated = not any(
            _pos(gate) < _pos(other) < _pos(node)
            and tree.function_of(other) is function
            and tree.statement_of(other) is not stmt
            and not _exclusive(tree, other, node)
            for other, _ in calls
        )
    return ModelCall(
        node=node,
        symbol=symbol,
        stmt=stmt,
        function=function,
        loops=loops,
        gated=gated,
        fixable=not in_retried
        and not run
        and _fixable(tree, node, stmt, loops if wrap is stmt else tuple(tree.loops_of(wrap))),
        wrap=wrap,
        retried=in_retried,
    )


def _branches(tree: Tree, node: ast.AST) -> dict[int, int]:
    """``id(if or match) -> which of its branches holds node`` for the choices around it."""
    found: dict[int, int] = {}
    for parent, child in tree.ancestors(node):
        if isinstance(parent, FUNCTION_NODES):
            break
        if isinstance(parent, ast.If):
            found[id(parent)] = 0 if any(child is s for s in parent.body) else 1
        elif isinstance(parent, ast.Match) and isinstance(child, ast.match_case):
            found[id(parent)] = parent.cases.index(child)
    return found


def _exclusive(tree: Tree, first: ast.AST, second: ast.AST) -> bool:
    """Whether two nodes sit in different branches of one ``if``/``elif``/``else`` or ``match``:
    one pass never runs both (a gate before both covers whichever runs)."""
    mine = _branches(tree, second)
    return any(mine.get(k, branch) != branch for k, branch in _branches(tree, first).items())


def _fixable(tree: Tree, node: ast.Call, stmt: ast.stmt, loops: tuple[LoopContext, ...]) -> bool:
    if tree.in_comprehension_or_lambda(node) or (loops and not loops[0].in_body):
        return False
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    parent = tree.parent(stmt)
    if isinstance(parent, ast.stmt) and parent.lineno == stmt.lineno:
        return False  # a one-line body (``while x: call()``) has no block to insert into
    return not (isinstance(parent, ast.If) and stmt in parent.orelse and len(parent.orelse) == 1)

"""``if``/``elif`` chains and ``match`` statements on what a model wrote: which of them select
what runs (a dispatch), and the project calls their branches make (its tools).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from .catalog import LOGGER_NAMES
from .chosen import local_function
from .reply import READERS, Reply
from .tags import type_tag
from .tree import Tree, dotted

__all__ = ["reply_branches"]

#: modules whose functions only parse, format or log what they are given (a branch calling
#: one of them runs nothing the model chose), and guardkit, whose ``call_tool`` is the gate
_OBSERVING = frozenset(
    {"json", "logging", "re", "pprint", "textwrap", "string", "typing", "guardkit"}
)
#: methods that keep, show or log a value: a branch calling one runs nothing the model chose
_KEEPING = frozenset(
    {"append", "extend", "add", "update", "insert", "setdefault", "put", "put_nowait"}
    | {"print", "log", "debug", "info", "warning", "warn", "error", "exception", "critical"}
    | {"write", "send", "emit", "format", "join", "get", "pop", "remove", "discard"}
)


def reply_branches(
    reply: Reply,
    helpers: list[ast.Call],
    ref_of: Callable[[ast.Call], str | None],
    builders: frozenset[str] = frozenset(),
) -> list[tuple[ast.If | ast.Match, list[ast.Call]]]:
    """``if``/``elif`` chains on a string the model wrote (``if op == "click": ... elif op ==
    "write": ...``) with, in two branches or more, a call of project code handed part of the
    reply: the reply selects what runs, a dispatch; the calls are its tools.

    The model writes text; a provider's response around it (``event.type``,
    ``block.type``, ``finish_reason``) is the API's. So the string compared must come out of a
    parse of the reply (``json.loads(message.content)``, ``parse_action(text)``) or from a
    project helper that asked the model (its return is the app's own value), not from fields
    of the response a model call returned (``helpers``: the reply's sources that are project
    helpers). A function that only builds a value from what it is given (``builders``: a
    provider's item as a dict literal) formats the reply, it runs nothing."""
    tree = reply.tree
    parsers = [
        c
        for c in tree.nodes(ast.Call)
        if not (isinstance(c.func, ast.Attribute) and reply.derived(c.func.value))
        and not (isinstance(c.func, ast.Name) and c.func.id in READERS)
        and not isinstance(tree.parent(c), ast.Expr)  # ``seen.add(item)``: no value made
        and any(reply.derived(a) for a in c.args)
    ]
    written = Reply(tree, [*helpers, *parsers], reply.seeds)
    inner = {id(n.orelse[0]) for n in tree.nodes(ast.If) if len(n.orelse) == 1}
    chains: list[tuple[ast.If | ast.Match, list[list[ast.stmt]]]] = [
        (head, _chain_bodies(head, written)) for head in tree.nodes(ast.If) if id(head) not in inner
    ]
    # ``match command: case "click": ...`` on what the model wrote: the same chain
    chains += [
        (m, [c.body for c in m.cases if _constant_pattern(c.pattern)])
        for m in tree.nodes(ast.Match)
        if written.derived(m.subject) and not type_tag(m.subject, tree, True)
    ]
    found: list[tuple[ast.If | ast.Match, list[ast.Call]]] = []
    for head, bodies in chains:
        if len(bodies) < 2 or tree.unreachable(head):
            continue
        calls: list[ast.Call] = []
        chosen: list[ast.Call] = []  # project code a branch runs with no part of the reply
        for body in bodies:
            call = next(_handed(body, reply, ref_of, builders), None)
            if call is not None:
                calls.append(call)
            else:
                chosen += _project_calls(body, tree, ref_of, builders)
        if len(calls) >= 2:
            found.append((head, calls + chosen))
    return [f for f in found if not _normalising(f, found, tree)]


def _project_calls(
    body: list[ast.stmt],
    tree: Tree,
    ref_of: Callable[[ast.Call], str | None],
    builders: frozenset[str],
) -> list[ast.Call]:
    """The project code a branch runs: its first project call, or, when the branch tests
    something again (``if pixels > 0: scroll_up() elif pixels < 0: scroll_down()``), that of
    each arm."""
    test = next((s for s in body if isinstance(s, ast.If)), None)
    if test is not None:
        arms = [
            c
            for arm in _arms(test)
            if (c := _project_call(arm, tree, ref_of, builders)) is not None
        ]
        if len(arms) > 1:
            return arms
    call = _project_call(body, tree, ref_of, builders)
    return [call] if call is not None else []


def _arms(head: ast.If) -> list[list[ast.stmt]]:
    """The bodies of an ``if``/``elif``/``else`` chain."""
    links = list(_links(head))
    rest = links[-1].orelse
    return [link.body for link in links] + ([rest] if rest else [])


def _links(head: ast.If) -> Iterator[ast.If]:
    """The ``if`` and each ``elif`` of a chain."""
    branch: ast.If | None = head
    while branch is not None:
        yield branch
        rest = branch.orelse
        branch = rest[0] if len(rest) == 1 and isinstance(rest[0], ast.If) else None


def _normalising(
    chain: tuple[ast.If | ast.Match, list[ast.Call]],
    found: list[tuple[ast.If | ast.Match, list[ast.Call]]],
    tree: Tree,
) -> bool:
    """A chain inside a branch of another one whose arms all run the same callee
    (``if url.startswith("http"): goto(url) else: goto("https://" + url)`` under ``if
    action == "visit"``): it shapes one tool's input, it chooses no tool."""
    head, calls = chain
    if len({ast.unparse(c.func) for c in calls}) > 1:
        return False
    return any(other is not head and _inside(head, other, tree) for other, _ in found)


def _inside(node: ast.AST, outer: ast.AST, tree: Tree) -> bool:
    return any(parent is outer for parent, _ in tree.ancestors(node))


def _chain_bodies(head: ast.If, written: Reply) -> list[list[ast.stmt]]:
    """The bodies of the branches of an ``if``/``elif`` chain whose test is on ``written``."""
    return [link.body for link in _links(head) if _on_reply(link.test, written)]


def _constant_pattern(pattern: ast.pattern) -> bool:
    """``case "click":`` or ``case "a" | "b":``."""
    if isinstance(pattern, ast.MatchOr):
        return all(_constant_pattern(p) for p in pattern.patterns)
    return (
        isinstance(pattern, ast.MatchValue)
        and isinstance(pattern.value, ast.Constant)
        and isinstance(pattern.value.value, str)
    )


def _project_call(
    body: list[ast.stmt],
    tree: Tree,
    ref_of: Callable[[ast.Call], str | None],
    builders: frozenset[str],
) -> ast.Call | None:
    """The first call in ``body`` of a method of a project object or of a function of the
    module (``page.scroll("up")`` in a branch the model's ``SCROLL UP`` picked), not of one
    that only builds a value."""
    for call in (c for stmt in body for c in ast.walk(stmt) if isinstance(c, ast.Call)):
        ref = ref_of(call)
        if ref in builders:
            continue
        if (ref and ref.startswith(("type:", "self:"))) or local_function(call.func, tree, call):
            return call
    return None


def _on_reply(test: ast.expr, reply: Reply) -> bool:
    """A test of a string the model wrote against constants: ``x == "name"``, ``x in ("a",
    "b")``, ``"CLICK" in x``, ``x.startswith("SCROLL")`` (or several joined by ``or``), with
    ``x`` not a type tag (``event.type``: the shape of a value, the protocol's, not a choice)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return all(_on_reply(v, reply) for v in test.values)
    tested = _tested_text(test)
    return tested is not None and reply.derived(tested) and not type_tag(tested, reply.tree, True)


def _constant_text(expr: ast.expr) -> bool:
    """A string constant, or a tuple/list/set of them."""
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return bool(expr.elts) and all(_constant_text(e) for e in expr.elts)
    return isinstance(expr, ast.Constant) and isinstance(expr.value, str)


def _tested_text(test: ast.expr) -> ast.expr | None:
    """The value a test compares with string constants, if it is such a test."""
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute):
        prefix = test.func.attr in {"startswith", "endswith"}
        if prefix and len(test.args) == 1 and _constant_text(test.args[0]):
            return test.func.value
        return None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.Eq) and isinstance(right, ast.Constant) and _constant_text(right):
        return left
    if isinstance(op, ast.In) and _constant_text(right) and not isinstance(right, ast.Constant):
        return left  # ``x in ("a", "b")``
    if isinstance(op, ast.In) and isinstance(left, ast.Constant) and _constant_text(left):
        return right  # ``"CLICK" in x``
    return None


def _handed(
    body: list[ast.stmt],
    reply: Reply,
    ref_of: Callable[[ast.Call], str | None],
    builders: frozenset[str],
) -> Iterator[ast.Call]:
    """Calls in ``body`` that act on part of the reply: of project code, or of a library that
    does something with it (``pyautogui.write(text)``, ``self.page.goto(url)`` on an object of
    no known type), not one that parses, shows, logs or collects it, nor project code that
    only builds a value of it (``builders``)."""
    for call in (c for stmt in body for c in ast.walk(stmt) if isinstance(c, ast.Call)):
        arguments = [*call.args, *(k.value for k in call.keywords)]
        ref = ref_of(call)
        if ref in builders:
            continue
        if ref is not None:
            acting = ref.rpartition(":")[2].partition(".")[0] not in _OBSERVING
        else:
            acting = _acts_on_object(call, reply)
        if acting and any(reply.derived(a) for a in arguments):
            yield call


def _acts_on_object(call: ast.Call, reply: Reply) -> bool:
    """A method of an object held in an attribute (``self.page.goto(url)``,
    ``self.page.keyboard.type(text)``), not of the reply itself, nor one that keeps, shows or
    logs a value."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr in _KEEPING:
        return False
    receiver = func.value
    root = receiver
    while isinstance(root, ast.Attribute):
        root = root.value
    held = isinstance(receiver, ast.Attribute) and isinstance(root, ast.Name)
    return (
        held
        and not reply.derived(receiver)
        and (dotted(receiver) or "").split(".")[-1] not in LOGGER_NAMES
    )

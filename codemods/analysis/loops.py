"""Decide whether a loop that calls a model is bounded.

Bounded: a loop whose every turn waits for a person (``input()``: a chat REPL); a ``for`` over
anything but ``itertools.count()``/``iter(f, sentinel)``; a ``while`` whose
condition compares a counter the loop updates on every turn that goes round (one that sets a
flag to a literal and then meets ``if flag: break`` or ``while not flag`` does not; a step
object's methods may step or compare it: ``Counted``, see ``counted``), or names a
``max_*``/limit; a ``while`` whose body
breaks/returns/raises when such a counter passes a limit, or calls a function that raises on a
limit (a counter some module steps, compared in an ``if ...: raise``; followed across the
project); any loop gated by ``llm_turn`` (the
guard's turn budget bounds it). Everything else (``while True``, ``while not done``, ``while
response.stop_reason == "tool_use"``) is unbounded, and so is a limit set to an infinite value
anywhere in the module (``max_turns = float("inf")``, ``math.inf``, ``sys.maxsize``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from .imports import ImportMap
from .tree import SCOPE_NODES, Tree, dotted, scope_nodes

__all__ = [
    "Counted",
    "compares_counter",
    "counters",
    "infinite_names",
    "is_bounded",
    "is_infinite",
    "raise_tests",
    "stepped",
]

_LIMIT_WORDS = ("max", "limit", "budget")
_EXITS = (ast.Break, ast.Return, ast.Raise)
_PROMPTS = frozenset(
    {
        "input",
        "sys.stdin.readline",
        "click.prompt",
        "typer.prompt",
        "prompt_toolkit.prompt",
        "rich.prompt.Prompt.ask",
        "getpass.getpass",
    }
)
#: no calls of a step object's methods (see ``counted``)
_NONE: Mapping[int, frozenset[str]] = MappingProxyType({})
_EMPTY: frozenset[str] = frozenset()


class Counted(NamedTuple):
    """Calls of a step object's methods (see ``counted``), by id: the counters each steps and
    each compares."""

    steps: Mapping[int, frozenset[str]] = _NONE
    checks: Mapping[int, frozenset[str]] = _NONE

    def stepped(self, body: list[ast.stmt]) -> set[str]:
        """The counters the calls in ``body`` step."""
        if not self.steps:
            return set()
        return {n for node in scope_nodes(body) for n in self.steps.get(id(node), _EMPTY)}


_UNCOUNTED = Counted()
_INFINITE_NAMES = frozenset({"math.inf", "numpy.inf", "np.inf", "sys.maxsize"})
_INFINITE_TEXT = frozenset({"inf", "+inf", "infinity", "+infinity"})


def is_infinite(expr: ast.expr | None) -> bool:
    """``float("inf")``, ``math.inf``, ``sys.maxsize``: a "limit" that never stops anything."""
    if expr is None:
        return False
    if dotted(expr) in _INFINITE_NAMES:
        return True
    return (
        isinstance(expr, ast.Call)
        and dotted(expr.func) == "float"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ast.Constant)
        and str(expr.args[0].value).strip().lower() in _INFINITE_TEXT
    )


def infinite_names(tree: Tree) -> frozenset[str]:
    """Last components of names given an infinite value anywhere in the module (assignments,
    class attributes, parameter defaults, keyword arguments)."""
    found: set[str] = set()
    for node in tree.nodes(ast.Assign, ast.AnnAssign, ast.keyword, ast.arguments):
        if isinstance(node, ast.keyword):
            if node.arg and is_infinite(node.value):
                found.add(node.arg)
        elif isinstance(node, ast.arguments):
            params = [*node.posonlyargs, *node.args]
            defaults = [None] * (len(params) - len(node.defaults)) + list(node.defaults)
            pairs = [
                *zip(params, defaults, strict=True),
                *zip(node.kwonlyargs, node.kw_defaults, strict=True),
            ]
            found.update(p.arg for p, d in pairs if is_infinite(d))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and is_infinite(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(n.rpartition(".")[2] for n in map(dotted, targets) if n)
    return frozenset(found)


def stepped(body: list[ast.stmt]) -> set[str]:
    """Names a body steps: ``n += 1``, ``n -= 1``, ``n = n + 1``."""
    found: set[str] = set()
    for node in scope_nodes(body):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            name = dotted(node.target) if isinstance(node.target, ast.expr) else None
            if name:
                found.add(name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            name = dotted(node.targets[0])
            value = node.value
            if name and isinstance(value, ast.BinOp) and dotted(value.left) == name:
                found.add(name)
    return found


class _Counter(NamedTuple):
    """A counter a loop may step: by name, and by the ids of the calls that step it (a step
    object's ``steps.increment()``: see ``counted``)."""

    name: str
    calls: frozenset[int] = frozenset()


def _steps(stmt: ast.stmt, counter: _Counter) -> bool:
    """``stmt`` itself steps the counter (``name += 1``, ``name = name + 1``, a call that
    steps it)."""
    name = counter.name
    if isinstance(stmt, ast.Expr) and counter.calls:
        call = stmt.value.value if isinstance(stmt.value, ast.Await) else stmt.value
        return id(call) in counter.calls
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, (ast.Add, ast.Sub)):
        return isinstance(stmt.target, ast.expr) and dotted(stmt.target) == name
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        value = stmt.value
        return (
            dotted(stmt.targets[0]) == name
            and isinstance(value, ast.BinOp)
            and dotted(value.left) == name
        )
    return False


#: where a path through a block stands: whether the counter was stepped on it, and what it
#: knows of flags it set (``(name, truthy)``: ``done = True``, ``result = f"clicked {x}"``)
_State = tuple[bool, frozenset[tuple[str, bool]]]
#: the states the paths through a block fall through with (none: every path leaves the loop,
#: by ``break``, ``return`` or ``raise``); kept apart, so that a flag set on one path decides
#: a later test on that path, up to a few, then merged
_Paths = frozenset[_State]
_KEPT = 16


def _through(
    block: Sequence[ast.stmt], counter: _Counter, paths: _Paths, turns: list[_State]
) -> _Paths:
    """Follow ``block`` from ``paths``: the states it falls through with, and in ``turns`` the
    state of each ``continue`` it takes."""
    for stmt in block:
        if not paths:
            break
        paths = _merged(frozenset().union(*(_statement(stmt, counter, p, turns) for p in paths)))
    return paths


def _merged(paths: _Paths) -> _Paths:
    if len(paths) <= _KEPT:
        return paths
    stepped = all(p[0] for p in paths)
    return frozenset({(stepped, frozenset.intersection(*(p[1] for p in paths)))})


def _statement(stmt: ast.stmt, counter: _Counter, state: _State, turns: list[_State]) -> _Paths:
    stepped, known = state
    if _steps(stmt, counter):
        return frozenset({(True, known)})
    if isinstance(stmt, ast.Continue):
        turns.append(state)
        return frozenset()
    if isinstance(stmt, (ast.Break, ast.Return, ast.Raise)):
        return frozenset()
    here = frozenset({state})
    if isinstance(stmt, ast.If):
        decided = _decide(stmt.test, known)  # a flag this path set picks the branch
        body = _through(stmt.body, counter, here, turns) if decided is not False else frozenset()
        rest = _through(stmt.orelse, counter, here, turns) if decided is not True else frozenset()
        return body | rest
    if isinstance(stmt, ast.Match):
        ends = frozenset().union(*(_through(c.body, counter, here, turns) for c in stmt.cases))
        last = stmt.cases[-1].pattern if stmt.cases else None
        catch_all = isinstance(last, ast.MatchAs) and last.pattern is None
        return ends if catch_all else ends | here  # or no case is taken
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return _through(stmt.body, counter, here, turns)
    if isinstance(stmt, ast.Try):
        return _try(stmt, counter, here, turns)
    # anything else (a nested loop may run no turn: what it steps is not stepped every turn)
    # forgets the flags it may set, and learns those a plain assignment sets
    stored = {
        n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    known = frozenset(k for k in known if k[0] not in stored)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        truth = _truth(stmt.value)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if truth is not None:
            known |= {(t.id, truth) for t in targets if isinstance(t, ast.Name)}
    return frozenset({(stepped, known)})


def _truth(value: ast.expr) -> bool | None:
    """Whether a value is truthy, when its form says so (``True``, ``"done"``, ``f"ok {x}"``,
    ``[]``, ``None``...)."""
    if isinstance(value, ast.Constant):
        return bool(value.value)
    if isinstance(value, ast.JoinedStr):
        text = any(isinstance(v, ast.Constant) and v.value for v in value.values)
        return True if text else None
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return bool(value.elts) if not any(isinstance(e, ast.Starred) for e in value.elts) else None
    if isinstance(value, ast.Dict):
        return True if value.keys and all(k is not None for k in value.keys) else None
    return None


def _decide(test: ast.expr | None, known: frozenset[tuple[str, bool]]) -> bool | None:
    """The value of a test of flags whose truth a path knows (``done``, ``not result``,
    ``ok and not failed``), or ``None``."""
    if isinstance(test, ast.Name):
        return True if (test.id, True) in known else False if (test.id, False) in known else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _decide(test.operand, known)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        parts = [_decide(v, known) for v in test.values]
        deciding = isinstance(test.op, ast.Or)  # ``or``: one true decides; ``and``: one false
        if deciding in parts:
            return deciding
        return (not deciding) if all(p is not None for p in parts) else None
    return None


def _try(stmt: ast.Try, counter: _Counter, paths: _Paths, turns: list[_State]) -> _Paths:
    """A ``try``: a handler may start before anything of the body ran; ``finally`` runs on
    every path, ``continue`` ones included."""
    inner: list[_State] = []
    body = _through([*stmt.body, *stmt.orelse], counter, paths, inner)
    ends = body.union(*(_through(h.body, counter, paths, inner) for h in stmt.handlers))
    if stmt.finalbody:
        closes = _through(stmt.finalbody, counter, frozenset({(False, frozenset())}), [])
        if closes and all(stepped for stepped, _ in closes):  # ``finally: n += 1``
            turns.extend((True, known) for _, known in inner)
            return frozenset((True, known) for _, known in ends)
    turns.extend(inner)
    return ends


def steps_every_turn(
    body: Sequence[ast.stmt],
    name: str,
    test: ast.expr | None = None,
    steps: Mapping[int, frozenset[str]] = _NONE,
) -> bool:
    """Whether every turn of a loop with ``body`` (and ``while`` ``test``) that goes round
    again (falls off its end or takes a ``continue``, and a flag it set does not end the
    ``while``) steps ``name``: a retry counter bumped in one handler while another handler
    goes round again bounds nothing; one bumped in the handler while the other path sets
    ``result = f"clicked {x}"`` before ``if result: break`` bounds the loop. ``steps``: the
    counters each call of a stepping method steps, by the call's id."""
    turns: list[_State] = []
    counter = _Counter(name, frozenset(i for i, names in steps.items() if name in names))
    ends = _through(body, counter, frozenset({(False, frozenset())}), turns)
    rounds = [s for s in (*turns, *ends) if _decide(test, s[1]) is not False]
    return all(stepped for stepped, _ in rounds)


def _optional(test: ast.expr) -> set[str]:
    """Names a test only compares when they are set: ``max_steps is not None and n >= max_steps``
    (a limit that is ``None`` by default is no limit by default)."""
    found: set[str] = set()
    for node in ast.walk(test):
        if not (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And)):
            continue
        for value in node.values:
            checked = value
            if (
                isinstance(value, ast.Compare)
                and isinstance(value.ops[0], ast.IsNot)
                and isinstance(value.comparators[0], ast.Constant)
                and value.comparators[0].value is None
            ):
                checked = value.left
            name = dotted(checked) if isinstance(checked, (ast.Name, ast.Attribute)) else None
            if name:
                found.add(name)
    return found


_ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


def compares_counter(
    test: ast.expr,
    counters: set[str],
    infinite: frozenset[str] = frozenset(),
    grown: frozenset[str] = frozenset(),
    checks: Mapping[int, frozenset[str]] = _NONE,
) -> bool:
    """Whether ``test`` compares a counter or a limit; ``grown``: collections the loop grows,
    whose length bounds no counter (``while i < len(events)`` with ``events.append(...)``;
    ``len(results) < max_results`` still bounds); ``checks``: the counters each call of a
    method that compares one compares (``steps.is_last()``), by the call's id."""
    optional = _optional(test)
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and not checks.get(id(node), _EMPTY).isdisjoint(counters):
            return True
        # a count is compared by order or equality; ``"DONE" not in history`` (``history +=
        # reply``) is a test of what the model wrote, not a count
        if isinstance(node, ast.Compare) and all(isinstance(op, _ORDERINGS) for op in node.ops):
            compared = (node.left, *node.comparators)
            if any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in compared):
                continue  # ``max_loops == "auto"``: a mode, not a count
            sides = [dotted(side) for side in compared]
            chased = any(_length_of(s) in grown for s in (node.left, *node.comparators))
            if chased and any(n in counters for n in sides):
                continue  # a counter chasing a length the loop grows never catches up
            if any(n and (n.rpartition(".")[2] in infinite or n in optional) for n in sides):
                continue
            if any(n in counters or (n and _is_limit(n)) for n in sides):
                return True
    return False


def _length_of(side: ast.expr) -> str | None:
    """``events`` of ``len(events)``."""
    if isinstance(side, ast.Call) and dotted(side.func) == "len" and len(side.args) == 1:
        return dotted(side.args[0])
    return None


def _grown(body: list[ast.stmt]) -> frozenset[str]:
    """Collections a loop body adds to (``events.append(...)``, ``queue += more``)."""
    found: set[str] = set()
    for node in scope_nodes(body):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"append", "extend", "insert", "appendleft"}:
                found.add(dotted(node.func.value) or "")
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            found.add(dotted(node.target) or "")
    return frozenset(found - {""})


def _is_limit(name: str) -> bool:
    last = name.rpartition(".")[2].lower()
    return any(word in last for word in _LIMIT_WORDS)


def _exits_on_counter(
    body: list[ast.stmt],
    counters: set[str],
    infinite: frozenset[str],
    exits: tuple[type, ...],
    grown: frozenset[str] = frozenset(),
    checks: Mapping[int, frozenset[str]] = _NONE,
) -> bool:
    for node in scope_nodes(body):
        if not isinstance(node, ast.If) or not compares_counter(
            node.test, counters, infinite, grown, checks
        ):
            continue
        # the test itself decides the exit: ``if turns >= limit: ...; break``, not an exit
        # further down under tests of their own (``if counter > 0: ... if cmd == "/exit":
        # break``: the person's command ends that loop, not the count)
        if any(isinstance(n, exits) for n in node.body):
            return True
    return False


def _not_a_number(side: ast.expr) -> bool:
    return isinstance(side, ast.Constant) and not isinstance(side.value, (int, float))


def raise_tests(node: ast.If) -> list[str]:
    """Last components of the attributes an ``if <comparison>: ... raise`` compares: the
    project index decides whether one of them is a counter. Only attributes count: a local
    counter starts again on every call (a retry limit), an attribute (``self.n_calls``,
    ``self.stats.api_calls``) carries over from turn to turn."""
    found: list[str] = []
    for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
        sides = (compare.left, *compare.comparators)
        if not isinstance(compare.ops[0], _ORDERINGS) or any(_not_a_number(s) for s in sides):
            continue  # ``x.function is None``, ``x.kind == "tool"``: no count passes a limit
        for side in sides:
            name = dotted(side)
            if name and "." in name:
                found.append(name.rpartition(".")[2])
    return found


def counters(tree: Tree) -> set[str]:
    """Last components of the attributes the module steps (``self.n += 1``, ``self.cost =
    self.cost + c``) one way: an attribute stepped up on entry and down on return
    (``self.depth += 1`` ... ``self.depth -= 1``) gauges a recursion's depth, it counts no
    turns (a loop that calls the function again and again never reaches its limit)."""
    up: set[str] = set()
    down: set[str] = set()
    for step in tree.nodes(ast.AugAssign):
        name = dotted(step.target) if isinstance(step.op, (ast.Add, ast.Sub)) else None
        if name and "." in name:
            steps = down if isinstance(step.op, ast.Sub) else up
            steps.add(name.rpartition(".")[2])
    found = (up | down) - (up & down)
    for assign in tree.nodes(ast.Assign):
        name = dotted(assign.targets[0]) if len(assign.targets) == 1 else None
        value = assign.value
        if name and "." in name and isinstance(value, ast.BinOp) and dotted(value.left) == name:
            found.add(name.rpartition(".")[2])
    return found


def _unbounded_iterable(loop: ast.For | ast.AsyncFor, imports: ImportMap) -> bool:
    it = loop.iter
    if not isinstance(it, ast.Call):
        return False
    name = imports.resolve(dotted(it.func))
    if name in {"itertools.count", "itertools.cycle", "itertools.repeat"}:
        return name != "itertools.repeat" or len(it.args) < 2
    return dotted(it.func) == "iter" and len(it.args) == 2


def _prompts(call: ast.Call, imports: ImportMap) -> bool:
    """``input()``, or a prompt handed to a thread (``asyncio.to_thread(input, "> ")``,
    ``loop.run_in_executor(None, input)``)."""
    for expr in (call.func, *call.args):
        name = dotted(expr)
        if name and (name in _PROMPTS or imports.resolve(name) in _PROMPTS):
            return True
    return False


def _unconditional_calls(body: Sequence[ast.AST]) -> Iterator[ast.Call]:
    """The calls made on every pass through ``body`` (not under an ``if`` or a nested scope)."""
    stack: list[ast.AST] = [*body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            yield node
        if not isinstance(node, (*SCOPE_NODES, ast.If, ast.IfExp, ast.Match)):
            stack.extend(ast.iter_child_nodes(node))


def _local_name(call: ast.Call) -> str | None:
    """``read_line()`` or ``self.read_line()``: a function or method of this module, by name."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.attr if func.value.id in {"self", "cls"} else None
    return None


@lru_cache(maxsize=1)
def _prompting(tree: Tree, imports: ImportMap) -> frozenset[str]:
    """Names of the module's functions and methods that wait for a person on every call
    (``def read_line(): return input("> ")``), followed through the module's own helpers."""
    defs: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
        *tree.nodes(ast.FunctionDef),
        *tree.nodes(ast.AsyncFunctionDef),
    ]
    calls = {id(d): list(_unconditional_calls(d.body)) for d in defs}
    found: set[str] = set()
    for _ in range(3):
        size = len(found)
        for func in defs:
            if func.name not in found and any(
                _prompts(c, imports) or _local_name(c) in found for c in calls[id(func)]
            ):
                found.add(func.name)
        if len(found) == size:
            break
    return frozenset(found)


def _waits_for_person(
    loop: ast.While | ast.For | ast.AsyncFor, tree: Tree, imports: ImportMap
) -> bool:
    """A read-eval-print loop: every turn waits for a person to type (``input()``, directly,
    handed to a thread, or in a helper of the module). A prompt under an ``if`` (a
    confirmation only some turns ask for) does not count."""
    body: list[ast.AST] = [*loop.body]
    if isinstance(loop, ast.While):
        body.append(loop.test)
    calls = list(_unconditional_calls(body))
    if any(_prompts(c, imports) for c in calls):
        return True
    names = {_local_name(c) for c in calls} - {None}
    return bool(names) and bool(names & _prompting(tree, imports))


def is_bounded(
    loop: ast.For | ast.AsyncFor | ast.While,
    tree: Tree,
    imports: ImportMap,
    gates: list[ast.Call],
    stoppers: list[ast.Call] = (),  # type: ignore[assignment]
    infinite: frozenset[str] = frozenset(),
    counted: Counted = _UNCOUNTED,
) -> bool:
    """Whether ``loop`` cannot repeat its model calls forever; ``stoppers`` are calls of
    functions that raise on a limit; ``counted``, calls of a step object's methods."""
    if any(ctx.loop is loop for gate in (*gates, *stoppers) for ctx in tree.loops_of(gate)):
        return True
    if _waits_for_person(loop, tree, imports):
        return True
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return not _unbounded_iterable(loop, imports)
    steps = counted.steps
    candidates = stepped(loop.body) | counted.stepped(loop.body)
    counters = {c for c in candidates if steps_every_turn(loop.body, c, loop.test, steps)}
    grown = _grown(loop.body)
    checks = counted.checks
    # a loop goes on while any side of an ``or`` holds: each must compare a count
    # (``while max_loops == "auto" or n < max_loops`` runs for ever in the "auto" mode)
    test = loop.test
    sides = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    bounded = all(compares_counter(t, counters, infinite, grown, checks) for t in sides)
    return bounded or _exits_on_counter(loop.body, counters, infinite, _EXITS, grown, checks)

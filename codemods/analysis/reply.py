"""What a model returned, followed through a module: assignments, ``for`` and ``with`` targets,
parsers, containers, records built from it, the parameters of the module's functions and the
parameters other modules hand it to; and the questions asked of it: the calls that pass it to
other modules, the project methods run on it, the table items and the elements it picks.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence

from .chosen import affixes, local_function, overrides, reads_tool_name
from .flow import MODEL_REPLY
from .project import TOOL_METHODS
from .tags import type_tag
from .tree import FUNCTION_NODES, Tree, dotted, scope_nodes

__all__ = [
    "READERS",
    "RUN_METHODS",
    "Reply",
    "output_runs",
    "reply_evaluated",
    "reply_matched",
    "reply_passed",
    "reply_selected",
]

#: methods through which a project object runs what it is given
RUN_METHODS = frozenset(TOOL_METHODS)
#: the attributes of a provider's tool call that hold its input
_CALL_INPUTS = frozenset({"arguments", "input"})
#: builtins that read a field or a property of a value: no parse of what the model wrote
READERS = frozenset({"getattr", "hasattr", "isinstance", "len", "type", "id", "vars", "dict"})
_ROUNDS = 4

Pair = tuple[ast.AST, str]


class Reply:
    """What a model returned (``sources``: the calls that return it), followed through
    assignments, ``for`` and ``with`` targets, parsers, containers and the parameters of the
    module's functions; built once per module and read by every question below."""

    def __init__(self, tree: Tree, sources: list[ast.Call], seeds: Iterable[Pair] = ()) -> None:
        self.tree = tree
        self.sources = sources
        self.ids = {id(c) for c in sources}
        self.scopes = {tree.function_of(c) for c in sources}
        #: parameters callers in other modules hand a reply (what it holds is the app's own)
        self.seeds = frozenset(seeds)
        self.held: set[Pair] = set(self.seeds)
        self._run()

    def derived(self, expr: ast.expr) -> bool:
        while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Await, ast.UnaryOp)):
            expr = expr.operand if isinstance(expr, ast.UnaryOp) else expr.value
        if isinstance(expr, ast.BinOp):  # ``int(reply) - 1``
            return self.derived(expr.left) or self.derived(expr.right)
        if isinstance(expr, ast.BoolOp):  # ``item.get("action") or {}``
            return any(self.derived(v) for v in expr.values)
        if isinstance(expr, ast.IfExp):
            return self.derived(expr.body) or self.derived(expr.orelse)
        if isinstance(expr, ast.Name):
            return (self.tree.function_of(expr), expr.id) in self.held
        if isinstance(expr, (ast.Tuple, ast.List, ast.Dict)):  # ``{"x": x, "y": y}``
            items = expr.values if isinstance(expr, ast.Dict) else expr.elts
            return any(self.derived(i) for i in items if not isinstance(i, ast.Starred))
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            # ``[ACTION.match(line) for line in reply.split("\n")]``: its elements
            return self.derived(expr.elt)
        if isinstance(expr, ast.DictComp):
            return self.derived(expr.key) or self.derived(expr.value)
        if not isinstance(expr, ast.Call):
            return False
        if id(expr) in self.ids:
            return True
        func = expr.func
        if isinstance(func, ast.Attribute) and self.derived(func.value):
            return True  # a method of the reply: ``operation.get("operation").lower()``
        # a parser or a runner given it: ``json.loads(text)``, ``asyncio.run(next_action())``;
        # an object built from it: ``FunctionCall(name=calls[0]["tool"], arguments=...)``
        return isinstance(func, (ast.Name, ast.Attribute)) and any(
            self.derived(a) for a in [*expr.args, *(k.value for k in expr.keywords)]
        )

    def bind(self, target: ast.expr | Pair) -> bool:
        if isinstance(target, (ast.Tuple, ast.List)):
            return any([self.bind(e) for e in target.elts])  # noqa: C419 (bind every element)
        if isinstance(target, tuple):  # a parameter: ``(function, name)``
            key = target
        elif isinstance(target, ast.Name):
            key = (self.tree.function_of(target), target.id)
        else:
            return False
        if key in self.held:
            return False
        self.held.add(key)
        return True

    def _run(self) -> None:
        tree = self.tree
        flows: list[tuple[Sequence[ast.expr | Pair], ast.expr]]
        flows = [(a.targets, a.value) for a in tree.assignments()]
        fors: list[ast.For | ast.AsyncFor] = [*tree.nodes(ast.For), *tree.nodes(ast.AsyncFor)]
        flows += [([n.target], n.iter) for n in fors]
        withs: list[ast.With | ast.AsyncWith] = [*tree.nodes(ast.With), *tree.nodes(ast.AsyncWith)]
        flows += [
            ([i.optional_vars], i.context_expr) for n in withs for i in n.items if i.optional_vars
        ]
        flows += [([g.target], g.iter) for g in tree.nodes(ast.comprehension)]
        # the parameters of the module's functions and methods the reply is passed to
        for call in tree.nodes(ast.Call):
            callees = [local_function(call.func, tree, call), *overrides(call.func, tree, call)]
            for callee in (c for c in callees if isinstance(c, FUNCTION_NODES)):
                params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
                params = params[1:] if isinstance(call.func, ast.Attribute) else params
                flows += [
                    ([(callee, p)], arg)
                    for p, arg in zip(params, call.args, strict=False)
                    if not isinstance(arg, ast.Starred)
                ]
        for _ in range(_ROUNDS):
            changed = False
            for targets, value in flows:
                if self.derived(value):
                    for target in targets:
                        changed |= self.bind(target)
            if not changed:
                break


def reply_passed(
    reply: Reply,
    ref_of: Callable[[ast.Call], str | None],
    qualify: Callable[[str | None], str | None],
) -> set[tuple[str, int, str]]:
    """``(ref, index, MODEL_REPLY)`` for each positional argument holding what the model
    returned in a call of another module's function or of a method of a project object
    (``self.executor(step)``: where it may select a tool by the name the reply holds). A tool
    call's input (``json.loads(call.function.arguments)``) goes with its name, which the
    name's path follows."""
    passed: set[tuple[str, int, str]] = set()
    for call in reply.tree.nodes(ast.Call):
        held = [
            i
            for i, a in enumerate(call.args)
            if not isinstance(a, ast.Starred) and reply.derived(a) and not _call_input(a)
        ]
        if not held or id(call) in reply.ids:
            continue
        ref = ref_of(call)
        if not ref or ref.startswith("self:"):
            ref = _built_ref(call, reply.tree, qualify) or ref
        if not ref or (":" in ref and not ref.startswith("type:")):
            continue
        if ref.rpartition(":")[2].partition(".")[0] not in sys.stdlib_module_names:
            passed |= {(ref, index, MODEL_REPLY) for index in held}
    return passed


def _built_ref(
    call: ast.Call, tree: Tree, qualify: Callable[[str | None], str | None]
) -> str | None:
    """``self.executor(step)``, ``runner.run(step)`` on an instance built from an imported
    class (``self.executor = Executor(...)``): that class's method, for the project index to
    find where it is defined (a class of a sibling module of a flat layout is known only
    once that module is analysed)."""
    func = call.func
    held: ast.expr = func
    method = "__call__"  # ``self.executor(step)``, ``executor(step)``
    if isinstance(func, ast.Attribute) and dotted(func.value) != "self":
        held, method = func.value, func.attr  # ``self.runner.run(step)``, ``runner.run(step)``
    if isinstance(held, ast.Attribute):
        if dotted(held.value) != "self":
            return None
        owner: ast.AST | None = tree.class_of(call)
        attr = held.attr
    elif isinstance(held, ast.Name):
        owner, attr = tree.function_of(call), held.id
    else:
        return None
    for assign in tree.assignments():
        if not isinstance(assign.value, ast.Call):
            continue
        if not any(_binds(t, owner, attr, tree) for t in assign.targets):
            continue
        qualname = qualify(dotted(assign.value.func))
        if qualname and qualname.rpartition(".")[2][:1].isupper():
            return f"type:{qualname}.{method}"
    return None


def _binds(target: ast.expr, owner: ast.AST | None, attr: str, tree: Tree) -> bool:
    """``target`` is ``self.<attr>`` in a method of ``owner`` (a class), or the variable
    ``attr`` of ``owner`` (a function) or of the module."""
    if isinstance(target, ast.Attribute):
        return (
            target.attr == attr
            and dotted(target.value) == "self"
            and tree.class_of(target) is owner
        )
    return (
        isinstance(target, ast.Name)
        and target.id == attr
        and tree.function_of(target) in (owner, tree.module)
    )


def output_runs(reply: Reply, ref_of: Callable[[ast.Call], str | None]) -> set[ast.Call]:
    """Calls of a project object's run method (``env.execute(action)``) handed what a model
    returned, in the loop that asked the model (the reply's sources: model calls, helpers
    reaching one). The reply is followed through assignments,
    ``for`` targets, fields and items, and plain functions given it (a parser:
    ``extract_action(text)``); only ``type:`` refs are kept (a method of a project class):
    that method runs what the model wrote, a tool. A call also given the name of the tool the
    model chose (``collection.run(name=block.name, ...)``) selects a tool, it is none; one
    given a tool call's input (``registry.execute("click", json.loads(call.function.arguments))``)
    runs what the tool-call path judges."""
    tree = reply.tree
    turns = {id(ctx.loop) for c in reply.sources for ctx in tree.loops_of(c)}
    found: set[ast.Call] = set()
    for call in tree.nodes(ast.Call):
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in RUN_METHODS):
            continue
        if tree.function_of(call) not in reply.scopes:
            continue
        if not any(id(ctx.loop) in turns for ctx in tree.loops_of(call)):
            continue
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if any(reads_tool_name(a) or _call_input(a) for a in arguments):
            continue
        if any(reply.derived(a) for a in arguments):
            ref = ref_of(call)
            if ref and ref.startswith("type:"):
                found.add(call)
    return found


def _call_input(expr: ast.expr) -> bool:
    """``expr`` reads a tool call's input off the provider's object (``call.function.arguments``,
    ``block.input``), not a key of what the model wrote as text."""
    return any(isinstance(n, ast.Attribute) and n.attr in _CALL_INPUTS for n in ast.walk(expr))


def _picked_by(expr: ast.expr, reply: Reply) -> bool:
    """``table[key]``, ``table.get(key)`` or ``getattr(obj, key)`` with the key taken from
    the reply (not its type tag) and the table not itself part of it (``action.get("args")``
    reads the reply)."""
    expr = expr.value if isinstance(expr, ast.Await) else expr
    if isinstance(expr, ast.Subscript):
        table, key = expr.value, expr.slice
    elif not (isinstance(expr, ast.Call) and expr.args):
        return False
    elif isinstance(expr.func, ast.Attribute) and expr.func.attr == "get":
        table, key = expr.func.value, expr.args[0]
    elif isinstance(expr.func, ast.Name) and expr.func.id == "getattr" and len(expr.args) >= 2:
        table, key = expr.args[0], expr.args[1]
    else:
        return False
    spelled = affixes(key)  # ``getattr(self, f"{kind}_executor")``: the choice, spelled in
    key = spelled[1] if spelled is not None else key
    # an event's or a block's type picks a handler by the protocol's shape, not a choice
    return reply.derived(key) and not reply.derived(table) and not type_tag(key, reply.tree)


def reply_selected(reply: Reply) -> list[tuple[ast.Call, ast.expr]]:
    """Calls of an item picked from a table by what a model returned (``tools[int(reply) -
    1](prompt)``, ``REGISTRY.get(action["action"])(arg)``, ``getattr(self, reply.command)()``,
    or the pick assigned first: ``chosen = tools[index]`` then ``chosen(prompt)``): the model
    selects the callee by position or key, a dispatch."""
    tree = reply.tree
    picked: dict[Pair, ast.expr] = {}
    for assign in tree.assignments():
        if _picked_by(assign.value, reply):
            for target in assign.targets:
                if isinstance(target, ast.Name):
                    picked[(tree.function_of(assign), target.id)] = assign.value
    found: list[tuple[ast.Call, ast.expr]] = []
    for call in tree.nodes(ast.Call):
        func = call.func
        if _picked_by(func, reply):
            found.append((call, func))
        elif isinstance(func, ast.Name) and (tree.function_of(call), func.id) in picked:
            found.append((call, picked[(tree.function_of(call), func.id)]))
    return found


def reply_matched(reply: Reply) -> list[tuple[ast.Call, ast.expr]]:
    """``for command in self.commands: if command.matches(reply): command.execute(...)``:
    among the elements of a collection, the one a test on what the model wrote picks (the test
    reads both the element and the reply, directly or through a variable the loop sets from
    them: ``blocks = tool.parse(reply)`` then ``if blocks:``) has a method run on what the
    model wrote, a dispatch (each call with the test that picks it)."""
    tree = reply.tree
    found: list[tuple[ast.Call, ast.expr]] = []
    reads: dict[int, set[str]] = {}
    for node in tree.nodes(ast.If):
        loop = _element_loop(tree, node)
        if loop is None or not any(reply.derived(e) for e in _parts_of(node.test)):
            continue
        element = loop.target
        if not isinstance(element, ast.Name) or reply.derived(loop.iter):
            continue
        if id(loop) not in reads:  # the element, and what the loop sets from it
            names = {element.id}
            for stmt in scope_nodes(loop.body):
                if isinstance(stmt, ast.Assign) and _mentions(stmt.value, names):
                    names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            reads[id(loop)] = names
        if not _mentions(node.test, reads[id(loop)]):
            continue
        scope = tree.function_of(node)
        for call in (c for s in node.body for c in ast.walk(s) if isinstance(c, ast.Call)):
            receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
            on_element = isinstance(receiver, ast.Name) and receiver.id == element.id
            given = [*call.args, *(k.value for k in call.keywords)]
            handed = any(reply.derived(a) for a in given if not isinstance(a, ast.Starred))
            if on_element and handed and tree.function_of(call) is scope:
                found.append((call, node.test))
    return found


def _element_loop(tree: Tree, node: ast.AST) -> ast.For | ast.AsyncFor | None:
    """The innermost ``for`` loop around ``node`` in its function."""
    for parent, _ in tree.ancestors(node):
        if isinstance(parent, (*FUNCTION_NODES, ast.ClassDef)):
            return None
        if isinstance(parent, (ast.For, ast.AsyncFor)):
            return parent
    return None


def _mentions(expr: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))


def _parts_of(test: ast.expr) -> Iterator[ast.expr]:
    """The expressions a test is made of (``tag in reply``: ``tag``, ``reply``)."""
    for node in ast.walk(test):
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            yield node


def reply_evaluated(reply: Reply) -> list[ast.Call]:
    """``eval(code, namespace)``/``exec(code, namespace)`` of what the model wrote: the
    model's code picks which of the namespace's functions run, a dispatch (with no namespace
    it runs whatever the code says: a code tool, not a choice among tools)."""
    found: list[ast.Call] = []
    for call in reply.tree.nodes(ast.Call):
        func = call.func
        if not (isinstance(func, ast.Name) and func.id in {"eval", "exec"} and call.args):
            continue
        namespace = len(call.args) > 1 or any(k.arg in {"globals", "locals"} for k in call.keywords)
        if namespace and reply.derived(call.args[0]):
            found.append(call)
    return found

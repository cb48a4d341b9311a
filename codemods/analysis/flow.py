"""Follow the tool names a model chose through a module: assignments, tuples, containers,
comprehensions, ``for`` loops and the parameters of the functions they are passed to.

A tool call's name (``block.name``, ``call.function.name``) is the source. It is followed into
the variables assigned from it (``picked = call.function.name``), the positions of the tuples
and lists that hold it (``pairs = [(c.function.name, c.function.arguments) for c in calls]``),
the targets of the ``for`` loops and comprehensions over those (``for fn_id, raw in pairs``),
and the parameters of the functions and methods it is passed to, of this module
(``call_one(fn_id, raw)``, ``self.run(picked)``, also inside ``asyncio.gather(...)``) and, through
the project index, of other modules (``run_one(self.by_name, block.name, block.input)``: the
call's argument positions are recorded in the summary as kind :data:`MODEL_NAME`).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence

from .catalog import LOGGER_NAMES
from .chosen import affixes, is_tool_input, local_function, overrides, reads_tool_name
from .project import TOOL_METHODS
from .tree import FUNCTION_NODES, Tree, dotted, scope_nodes
from .values import Values

__all__ = [
    "MODEL_NAME",
    "MODEL_REPLY",
    "Reply",
    "follow_names",
    "output_runs",
    "reply_branches",
    "reply_evaluated",
    "reply_matched",
    "reply_passed",
    "reply_selected",
    "seeds_from_env",
]

#: the kind of a parameter that receives a model-chosen tool name from a caller
MODEL_NAME = "model:name"
#: the kind of a parameter that receives what a model returned (or part of it) from a caller
MODEL_REPLY = "model:reply"
#: methods through which a project object runs what it is given
RUN_METHODS = frozenset(TOOL_METHODS)
#: a value that holds a chosen name itself (not in one of its positions)
_WHOLE = -1
#: the fields that tag a value's shape in a provider's protocol (an event's, a block's)
_TAGS = frozenset({"type", "object", "event"})
#: a message's ``role``: the chat protocol's, however the app passes the message on
_ROLE = "role"
#: the attributes of a provider's tool call that hold its input
_CALL_INPUTS = frozenset({"arguments", "input"})
#: the fields of a response item that hold what the model wrote in it
_PAYLOADS = frozenset({"action", "arguments", "input", "args", "params", "parameters"})
#: builtins that read a field or a property of a value: no parse of what the model wrote
_READERS = frozenset({"getattr", "hasattr", "isinstance", "len", "type", "id", "vars", "dict"})
#: modules whose functions only parse, format or log what they are given (a branch calling
#: one of them runs nothing the model chose), and guardkit, whose ``call_tool`` is the gate
_OBSERVING = frozenset(
    {"json", "logging", "re", "pprint", "textwrap", "string", "typing", "guardkit"}
)
_ROUNDS = 4
#: methods that cut a string into parts (``name.split(".")``), and the positions they fill
_SPLITS = frozenset({"split", "rsplit", "partition", "rpartition"})
_PARTS = frozenset({0, 1, 2})
#: methods that keep, show or log a value: a branch calling one runs nothing the model chose
_KEEPING = frozenset(
    {"append", "extend", "add", "update", "insert", "setdefault", "put", "put_nowait"}
    | {"print", "log", "debug", "info", "warning", "warn", "error", "exception", "critical"}
    | {"write", "send", "emit", "format", "join", "get", "pop", "remove", "discard"}
)

Pair = tuple[ast.AST, str]
Def = ast.FunctionDef | ast.AsyncFunctionDef


class _Flow:
    def __init__(self, tree: Tree, values: Values, seeds: Iterable[Pair]) -> None:
        self.tree = tree
        self.values = values
        #: ``(function, variable) -> positions holding a chosen name`` (``_WHOLE``: itself)
        self.held: dict[Pair, set[int]] = {}
        for pair in seeds:
            self.held.setdefault(pair, set()).add(_WHOLE)
        #: parameters handed the tool call's input beside a chosen name
        self.inputs: set[Pair] = set()
        self.calls: list[ast.Call] = []
        #: ids of the calls of the module's own functions
        self.local: set[int] = set()

    def positions(self, expr: ast.expr) -> set[int]:
        """Which positions of ``expr``'s value hold a chosen name (``_WHOLE``: the value)."""
        if reads_tool_name(expr):
            return {_WHOLE}
        if isinstance(expr, ast.Name):
            return self.held.get((self.tree.function_of(expr), expr.id), set())
        if isinstance(expr, ast.Tuple):
            return {i for i, e in enumerate(expr.elts) if _WHOLE in self.positions(e)}
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.positions(expr.elt)  # the positions of every element
        if isinstance(expr, (ast.List, ast.Set)):
            found: set[int] = set()
            for element in expr.elts:
                found |= self.positions(element)
            return found
        if isinstance(expr, ast.Await):
            return self.positions(expr.value)
        if isinstance(expr, ast.IfExp):  # ``n.split(".") if "." in n else (n, "run")``
            return self.positions(expr.body) | self.positions(expr.orelse)
        func = expr.func if isinstance(expr, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr in _SPLITS:
            # ``toolkit, api = name.split(".")``: each part is the choice, spelled in
            return set(_PARTS) if _WHOLE in self.positions(func.value) else set()
        return set()

    def bind(self, target: ast.expr, held: set[int]) -> bool:
        """Record that ``target`` receives a value holding ``held``; whether anything is new."""
        if not held:
            return False
        if isinstance(target, ast.Name):
            key = (self.tree.function_of(target), target.id)
            known = self.held.setdefault(key, set())
            if held <= known:
                return False
            known |= held
            return True
        if isinstance(target, (ast.Tuple, ast.List)):
            changed = False
            for index, element in enumerate(target.elts):
                if index in held:
                    changed |= self.bind(element, {_WHOLE})
            return changed
        return False

    def run(self) -> None:
        tree = self.tree
        assigns = tree.assignments()
        fors: list[ast.For | ast.AsyncFor] = [*tree.nodes(ast.For), *tree.nodes(ast.AsyncFor)]
        loops = [(n.target, n.iter) for n in fors]
        for comp in tree.nodes(ast.comprehension):
            loops.append((comp.target, comp.iter))
        self.calls = tree.nodes(ast.Call)
        local: list[tuple[ast.Call, Def, list[str]]] = []
        for call in self.calls:
            callee = self.values.callee(call, call)
            if callee is not None:
                func, skip = callee
                params = [p.arg for p in (*func.args.posonlyargs, *func.args.args)][skip:]
                local.append((call, func, params))
        self.local = {id(call) for call, _, _ in local}
        for _ in range(_ROUNDS):
            changed = False
            for assign in assigns:
                held = self.positions(assign.value)
                for target in assign.targets:
                    changed |= self.bind(target, held)
                changed |= self._carry_input(assign)
            for target, iterable in loops:
                # each element of what the loop runs over holds the positions the whole does
                changed |= self.bind(target, self.positions(iterable))
            for call, func, params in local:
                changed |= self._pass(call, func, params)
            if not changed:
                break

    def _pass(self, call: ast.Call, func: Def, params: list[str]) -> bool:
        """A chosen name passed to a function of the module reaches its parameter; the tool
        call's input passed beside it (``self._run_tool(call.function.name,
        json.loads(call.function.arguments))``) reaches its own, an input of the tool."""
        given = list(zip(params, call.args, strict=False))
        names = {*params, *(p.arg for p in func.args.kwonlyargs)}
        given += [(k.arg, k.value) for k in call.keywords if k.arg in names]
        chosen = {p for p, arg in given if _WHOLE in self.positions(arg)}
        changed = False
        for param in chosen:
            changed |= self._param(func, param)
        for param, arg in given if chosen else ():
            if param not in chosen and is_tool_input(arg, self.tree, self.inputs):
                changed |= (func, param) not in self.inputs
                self.inputs.add((func, param))
        return changed

    def _carry_input(self, assign: ast.Assign) -> bool:
        """A value made from the tool call's input (``parsed = self.clean_args(tool_args)``,
        ``params = {**tool_args, "user": uid}``) is that input still."""
        tree = self.tree
        if isinstance(assign.value, ast.Constant) or not is_tool_input(
            assign.value, tree, self.inputs
        ):
            return False
        targets = [t for t in assign.targets if isinstance(t, ast.Name)]
        new = {(tree.function_of(t), t.id) for t in targets} - self.inputs
        self.inputs |= new
        return bool(new)

    def _param(self, func: ast.AST, name: str) -> bool:
        known = self.held.setdefault((func, name), set())
        if _WHOLE in known:
            return False
        known.add(_WHOLE)
        return True


def follow_names(
    tree: Tree, values: Values, seeds: Iterable[Pair], ref_of: Callable[[ast.Call], str | None]
) -> tuple[set[Pair], set[Pair], set[tuple[str, int, str]]]:
    """``(function, variable)`` pairs that hold a model-chosen tool name (``seeds`` hold one
    already: an MCP handler's name parameter, parameters callers in other modules pass one),
    the parameters handed the tool call's input beside one, and ``(ref, index, MODEL_NAME)``
    for each positional argument holding one in a call of another module's function
    (``ref_of``: the ref a call runs)."""
    flow = _Flow(tree, values, seeds)
    flow.run()
    passed: set[tuple[str, int, str]] = set()
    for call in flow.calls:
        held = [i for i, a in enumerate(call.args) if _WHOLE in flow.positions(a)]
        if not held or id(call) in flow.local:
            continue
        ref = ref_of(call)
        # a function of another module, a method of an instance of a project class
        # (``manager.run_tool(use.name, ...)``) or of a parameter (``tools.call(item.name,
        # ...)``: resolved through what callers pass); ``self`` calls stay in the module
        if ref and (":" not in ref or ref.startswith(("type:", "param:"))):
            passed |= {(ref, index, MODEL_NAME) for index in held}
    named = {pair for pair, held in flow.held.items() if _WHOLE in held}
    return named, flow.inputs, passed


def seeds_from_env(
    tree: Tree, kinds: dict[str, dict[str, str]], qualify: dict[int, str], of: str = MODEL_NAME
) -> set[Pair]:
    """Parameters that callers elsewhere pass a value of kind ``of``, a chosen name or a reply
    (``kinds`` from the project)."""
    found: set[Pair] = set()
    for func in tree.nodes(*FUNCTION_NODES):
        owner = qualify.get(id(func))
        params = kinds.get(owner or "")
        if params:
            found |= {(func, name) for name, kind in params.items() if kind == of}
    return found


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
    if isinstance(func, ast.Attribute) and not _on_self(func):
        held, method = func.value, func.attr  # ``self.runner.run(step)``, ``runner.run(step)``
    if isinstance(held, ast.Attribute):
        if not _on_self(held):
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


def _on_self(expr: ast.Attribute) -> bool:
    return isinstance(expr.value, ast.Name) and expr.value.id == "self"


def _binds(target: ast.expr, owner: ast.AST | None, attr: str, tree: Tree) -> bool:
    """``target`` is ``self.<attr>`` in a method of ``owner`` (a class), or the variable
    ``attr`` of ``owner`` (a function) or of the module."""
    if isinstance(target, ast.Attribute):
        return target.attr == attr and _on_self(target) and tree.class_of(target) is owner
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
    return reply.derived(key) and not reply.derived(table) and not _type_tag(key, reply.tree)


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
        and not (isinstance(c.func, ast.Name) and c.func.id in _READERS)
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
        if written.derived(m.subject) and not _type_tag(m.subject, tree, True)
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
    return tested is not None and reply.derived(tested) and not _type_tag(tested, reply.tree, True)


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


def _type_tag(expr: ast.expr, tree: Tree, written: bool = False) -> bool:
    """``x.type``, ``x["type"]``, ``getattr(x, "type")``, or a variable assigned one. Of what
    the model ``written`` (its text parsed, or what a project helper made of it), only a field
    of an object is a tag: a key of a mapping (``step["type"]`` of a plan the model wrote as
    JSON) is the model's own words."""
    if isinstance(expr, ast.Name):
        scope = tree.function_of(expr)
        return any(
            _type_tag(a.value, tree, written)
            for a in tree.assignments()
            if tree.function_of(a) is scope
            and any(isinstance(t, ast.Name) and t.id == expr.id for t in a.targets)
            and not isinstance(a.value, ast.Name)
        )
    read = _field_read(expr)
    if read is None:
        return False
    base, field, keyed = read
    if field == _ROLE:
        return True
    return field in _TAGS and not (written and keyed) and not _payload(base, tree)


def _field_read(expr: ast.expr) -> tuple[ast.expr, object, bool] | None:
    """``(x, "f", keyed)`` for ``x.f``, ``getattr(x, "f"[, default])`` (``keyed`` false),
    ``x["f"]`` or ``x.get("f"[, default])`` (``keyed`` true)."""
    if isinstance(expr, ast.Attribute):
        return expr.value, expr.attr, False
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        return expr.value, expr.slice.value, True
    if not isinstance(expr, ast.Call):
        return None
    func, args = expr.func, expr.args
    if isinstance(func, ast.Name) and func.id == "getattr" and 2 <= len(args) <= 3:
        field = args[1]
        return (args[0], field.value, False) if isinstance(field, ast.Constant) else None
    if isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(args) <= 2:
        field = args[0]
        return (func.value, field.value, True) if isinstance(field, ast.Constant) else None
    return None


def _payload(expr: ast.expr, tree: Tree, depth: int = 0) -> bool:
    """``expr`` is what the model wrote inside a response item, its ``action`` or its
    ``arguments`` (``item.action``, ``action = item.get("action") or {}``): a type there is
    the model's choice (a computer-use action's ``click``), not the protocol's tag."""
    if isinstance(expr, ast.BoolOp):
        return any(_payload(v, tree, depth) for v in expr.values)
    if isinstance(expr, ast.Name) and depth < 3:
        scope = tree.function_of(expr)
        return any(
            _payload(a.value, tree, depth + 1)
            for a in tree.assignments()
            if tree.function_of(a) is scope
            and any(isinstance(t, ast.Name) and t.id == expr.id for t in a.targets)
        )
    read = _field_read(expr)
    return read is not None and read[1] in _PAYLOADS


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

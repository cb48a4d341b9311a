"""What other modules need to know about one module, as plain JSON-able data.

A summary lists the module's imports, its functions (with the calls they make, whether they make
an ungated model call, whether they stop on a limit), its classes (bases, methods, whether it is
a protocol), its module-level collections of names, and the names it hands to a model as tools.
Calls are written as *refs* the project index resolves across files:

* ``pkg.mod.func`` - a function (or class) by qualified name, imported or local;
* ``self:pkg.mod.Class.meth`` - a method called on ``self``, resolved through the hierarchy;
* ``type:pkg.mod.Class.meth`` - a method called on an instance of a project class (annotated,
  or built by its constructor), resolved to the class, its bases and its implementations;
* ``output:pkg.mod.Class.meth`` - the same, called on what a model returned (in ``tools``: a
  tool unless that method dispatches what it is given);
* ``param:pkg.mod.func:tools.call`` - a method called on a parameter (in ``arguments``, with a
  model-chosen name: the index resolves it through the kinds callers pass there);
* ``name:meth`` - a method called on a value whose kind the module cannot tell (a parameter
  typed ``Any``, an attribute set elsewhere, an element of a container): the index resolves it
  by the method's name to the project classes that define it (see ``ProjectIndex.targets``).
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from typing import TypedDict

from .calls import CallIndex
from .counted import checks_of, steps_of
from .handed import Handed, hand_over, tool_arguments
from .loops import counters, infinite_names, raise_tests
from .pure import builds
from .registrations import registered, registrars
from .registries import dispatch_helpers
from .retries import retried
from .tree import Tree, dotted
from .values import CLASS, FUNCTION, Values

__all__ = [
    "MODULE_CODE",
    "Summary",
    "call_ref",
    "owner_of",
    "name_ref",
    "param_ref",
    "qualified",
    "summarize",
    "tool_arguments",
]

Def = ast.FunctionDef | ast.AsyncFunctionDef
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: the pseudo-function that holds a module's top-level code
MODULE_CODE = "<module>"
_PROTOCOL_BASES = frozenset({"typing.Protocol", "typing_extensions.Protocol", "abc.ABC"})


class FunctionFacts(TypedDict):
    #: makes an ungated model call itself
    model: bool
    #: names compared in ``if ...: raise`` tests (a limit when one is a counter of the project)
    limit: list[str]
    #: a retry decorator runs it again on errors (its callers are the model turn)
    retried: bool
    calls: list[str]
    #: positional parameter names (what typed arguments of callers bind to)
    params: list[str]
    #: a stub to be overridden (``raise NotImplementedError``, ``...``, ``@abstractmethod``)
    abstract: bool
    #: the kind of value it returns (a project class, a client), empty when unknown
    returns: str
    #: only makes a value from its parameters and returns it (see ``pure.builds``)
    builds: bool
    #: the attributes a method steps on every call (``self.number += 1``) and those it
    #: returns a comparison of (``return self.number >= self.max_steps``): see ``counted``
    steps: list[str]
    checks: list[str]


class ClassFacts(TypedDict):
    bases: list[str]
    methods: list[str]
    protocol: bool
    #: attribute -> kind of the value its methods store there (``self.llm = Llm(self)``)
    attrs: dict[str, str]


class Summary(TypedDict):
    module: str
    imports: dict[str, str]
    functions: dict[str, FunctionFacts]
    classes: dict[str, ClassFacts]
    collections: dict[str, list[str]]
    tools: list[str]
    #: names handed over only where a guardkit integration gates them (``guard_tools([...])``)
    gated: list[str]
    #: names the module steps (``n += 1``): counters
    counters: list[str]
    #: ``[ref, parameter index, kind]``: known kinds of arguments passed to project functions
    arguments: list[tuple[str, int, str]]
    #: refs called inside ``while`` loops (what could make one a model loop, or bound it)
    looped: list[str]
    #: helpers that call one entry of a name->function table picked by a parameter -> the
    #: table's functions (tools when a tool calls the helper)
    dispatchers: dict[str, list[str]]
    #: the module's own functions it found to be tools (decorated, tool-class methods...)
    defined: list[str]
    #: the module's own functions that dispatch a model-chosen tool without a guard (a method
    #: run on a model's output that dispatches it is the dispatch, not a tool)
    dispatching: list[str]
    #: module-level names -> kind of the value they hold (``client = OpenAI()``)
    globals: dict[str, str]
    #: decorators of the module that store what they decorate in a module-level collection
    #: (a project's ``@tool``) -> those collections
    registrars: dict[str, list[str]]
    #: decorators the module's functions use -> the functions (members of what they fill)
    registered: dict[str, list[str]]
    #: ``[ref, parameter, names]``: lists of project names (or an instance built in the call)
    #: passed to project functions and
    #: classes, by keyword or position (``Agent("ops", helpers=[read_logs])``)
    listed: list[tuple[str, str, list[str]]]


def owner_of(tree: Tree, node: ast.AST) -> Def | None:
    """The outermost function or method (module- or class-level) containing ``node``."""
    found: Def | None = None
    func = tree.function_of(node)
    while func is not tree.module:
        if isinstance(func, _DEFS):
            found = func
        func = tree.function_of(func)
    return found


def qualified(module: str, name: str) -> str:
    return f"{module}.{name}" if module else name


def _qualname(tree: Tree, func: Def, module: str) -> str:
    cls = tree.parent(func)
    parts = [module, cls.name, func.name] if isinstance(cls, ast.ClassDef) else [module, func.name]
    return ".".join(p for p in parts if p)


def call_ref(call: ast.Call, values: Values) -> str | None:
    """The ref of the function a call runs (see the module docstring), when it can be named;
    a call that runs the function it is handed on a thread (``asyncio.to_thread(self.ask,
    ...)``, ``loop.run_in_executor(None, self.ask, ...)``) runs that function."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _HANDED_METHODS:
        position: int | None = _HANDED_RUNNERS[func.attr]
    else:
        position = _HANDED_RUNNERS.get(values.qualify(dotted(func)) or "")
    if position is not None and len(call.args) > position:
        func = call.args[position]
    return _callable_ref(func, call, values)


#: functions that run the callable handed at a position (on a thread, in an executor)
_HANDED_RUNNERS = {
    "asyncio.to_thread": 0,
    "anyio.to_thread.run_sync": 0,
    "starlette.concurrency.run_in_threadpool": 0,
    "run_in_executor": 1,
}
_HANDED_METHODS = frozenset({"run_in_executor"})


def _callable_ref(func: ast.expr, call: ast.Call, values: Values) -> str | None:
    if isinstance(func, (ast.Name, ast.Attribute)):
        # a name only by what it was bound to (the cheap test: most calls are of plain names)
        held = (
            values.kind(func, call)
            if isinstance(func, ast.Attribute)
            else values.held_kind(func, call)
        )
        if held and held.startswith(FUNCTION):
            # ``self.complete(...)`` with ``self.complete = f``, ``step(...)`` for a parameter
            # that callers pass a function
            return held[len(FUNCTION) :]
        if held and held.startswith(CLASS):
            # ``brain(messages)``, ``self.brain(messages)`` on an instance: its ``__call__``
            return f"type:{held[len(CLASS) :]}.__call__"
    if isinstance(func, ast.Attribute):
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id in {"self", "cls"}:
            cls = values.tree.class_of(call)
            if cls is None:
                return None
            return f"self:{qualified(values.module, cls.name)}.{func.attr}"
        kind = values.kind(receiver, call)
        if kind is not None and kind.startswith(CLASS):
            return f"type:{kind[len(CLASS) :]}.{func.attr}"
    return values.qualify(dotted(func))


def name_ref(call: ast.Call, values: Values) -> str | None:
    """``name:<method>`` for ``x.method(...)`` on a value of unknown kind that is no module,
    import or definition (``convo.send_message(...)`` on what a caller handed over): the
    project index resolves it by name alone, where the name is the project's own."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr.startswith("__"):
        return None
    if values.qualify(dotted(func)) is not None or values.kind(func.value, call) is not None:
        return None
    return f"name:{func.attr}"


def param_ref(call: ast.Call, values: Values) -> str | None:
    """``param:<function>:<parameter>.<method>`` for ``tools.call(...)`` with ``tools`` a
    parameter of the module- or class-level function the call is in: the project index
    resolves it through what callers pass there (``converse(client, FileTools(root))``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    owner = values.tree.function_of(call)
    if not isinstance(owner, _DEFS) or owner_of(values.tree, call) is not owner:
        return None
    params = [a.arg for a in (*owner.args.posonlyargs, *owner.args.args, *owner.args.kwonlyargs)]
    name = func.value.id
    if name not in params or name in {"self", "cls"}:
        return None
    return f"param:{_qualname(values.tree, owner, values.module)}:{name}.{func.attr}"


def _elements(expr: ast.expr, values: Values, names: Collection[str] = ()) -> list[str]:
    """Qualified names of the functions, classes or collections an expression lists
    (``names``: the module-level names, collections the index expands)."""

    def each(parts: list[ast.expr]) -> list[str]:
        return [n for part in parts for n in _elements(part, values, names)]

    parts = _held(expr)
    if parts is not None:
        return each(parts)
    if isinstance(expr, ast.Lambda):
        # ``lambda ticket_id: _lookup(ticket_id)`` runs what its body calls
        return [
            n for c in ast.walk(expr.body) if isinstance(c, ast.Call) for n in _callee(c, values)
        ]
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id in {"list", "tuple"} and expr.args:
            return each(expr.args[:1])
        if values.qualify(dotted(expr.func)) == "functools.partial" and expr.args:
            return each(expr.args[:1])  # ``partial(_run, cwd="/srv")`` runs ``_run``
        name = values.qualify(dotted(expr.func))
        return [name] if name and name.rpartition(".")[2][:1].isupper() else []
    name = values.qualify(dotted(expr))
    if name is None and isinstance(expr, ast.Name) and expr.id in names:
        name = qualified(values.module, expr.id)
    return [name] if name else []


def _held(expr: ast.expr) -> list[ast.expr] | None:
    """The parts whose elements a container, a concatenation, a choice or a comprehension
    holds; ``None`` for anything else."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return list(expr.elts)
    if isinstance(expr, ast.Dict):
        return [v for v in expr.values if v is not None]
    if isinstance(expr, ast.Starred):
        return [expr.value]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return [expr.left, expr.right]
    if isinstance(expr, ast.IfExp):
        return [expr.body, expr.orelse]
    if isinstance(expr, (ast.DictComp, ast.ListComp, ast.SetComp)):
        return _iterated(expr)
    return None


def _iterated(expr: ast.DictComp | ast.ListComp | ast.SetComp) -> list[ast.expr]:
    """``{f.__name__: f for f in TOOLS}``: what a comprehension that keeps each element
    iterates."""
    element = expr.value if isinstance(expr, ast.DictComp) else expr.elt
    target = expr.generators[0].target
    kept = isinstance(element, ast.Name) and isinstance(target, ast.Name)
    return [expr.generators[0].iter] if kept and dotted(element) == dotted(target) else []


def _listed(
    call: ast.Call, ref: str, values: Values, collections: Collection[str]
) -> list[tuple[str, str, list[str]]]:
    """The list, tuple and set literals of project names ``call`` passes, by position or
    keyword, and the instances it passes built there (``converse(client, FileTools(root))``)."""
    given = [(str(i), a) for i, a in enumerate(call.args)]
    given += [(k.arg, k.value) for k in call.keywords if k.arg]
    found: list[tuple[str, str, list[str]]] = []
    for key, value in given:
        if isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Call)):
            names = _elements(value, values)
        elif isinstance(value, ast.Name) and value.id in collections:
            # ``tools = [...]`` at module level, not rebound where the call is
            scope = values.tree.function_of(call)
            if scope is not values.tree.module and _binds(scope, value.id):
                continue
            names = [qualified(values.module, value.id)]
        else:
            continue
        if names:
            found.append((ref, key, names))
    return found


def _binds(scope: ast.AST, name: str) -> bool:
    """``name`` is a parameter of the function ``scope`` or assigned in it."""
    if isinstance(scope, _DEFS):
        params = {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
        if name in params:
            return True
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(scope)
    )


def _callee(call: ast.Call, values: Values) -> list[str]:
    name = values.qualify(dotted(call.func))
    return [name] if name else []


_COLLECTIONS = (
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.BinOp,
    ast.DictComp,
    ast.ListComp,
    ast.SetComp,
)


def _collections(tree: Tree, values: Values) -> dict[str, list[str]]:
    assigned: list[tuple[str, ast.expr]] = []
    for node in tree.module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            assigned.append((target.id, value))
    names = {name for name, _ in assigned}
    found: dict[str, list[str]] = {}
    for name, value in assigned:
        listed = _elements(value, values, names) if isinstance(value, _COLLECTIONS) else []
        if listed:
            found[qualified(values.module, name)] = listed
    return found


def _class_facts(node: ast.ClassDef, values: Values) -> ClassFacts:
    bases = [b for b in (values.qualify(dotted(base)) for base in node.bases) if b]
    methods = [item.name for item in node.body if isinstance(item, _DEFS)]
    protocol = bool(_PROTOCOL_BASES & set(bases))
    return ClassFacts(
        bases=bases, methods=methods, protocol=protocol, attrs=dict(values.attrs.get(node, {}))
    )


def _overload(func: Def) -> bool:
    """``@overload`` (``typing.overload``): one of a function's typed signatures."""
    return any((dotted(d) or "").rpartition(".")[2] == "overload" for d in func.decorator_list)


def _abstract(func: Def) -> bool:
    """A method meant to be overridden: ``@abstractmethod``, or a body that is only a
    docstring, ``pass``, ``...`` or ``raise NotImplementedError``."""
    if any((dotted(d) or "").endswith("abstractmethod") for d in func.decorator_list):
        return True
    body = [
        s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    if not body:
        return True
    if len(body) != 1:
        return False
    only = body[0]
    if isinstance(only, ast.Pass):
        return True
    if isinstance(only, ast.Raise) and only.exc is not None:
        exc = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        return dotted(exc) == "NotImplementedError"
    return False


_CONSUMERS = frozenset({"list", "tuple", "set", "sorted", "iter", "next"})


def _iterations(tree: Tree, values: Values) -> list[tuple[ast.AST, str]]:
    """Implicit calls of ``__iter__``/``__next__`` (``__aiter__``/``__anext__``) on instances of
    project classes: ``for x in response``, ``list(self)``, ``yield from response`` (a lazy
    response that calls the model when it is iterated)."""
    found: list[tuple[ast.AST, str]] = []
    iterated: list[tuple[ast.AST, ast.expr, str]] = []
    loops: list[ast.For | ast.AsyncFor] = [*tree.nodes(ast.For), *tree.nodes(ast.AsyncFor)]
    for loop in loops:
        method = "__aiter__" if isinstance(loop, ast.AsyncFor) else "__iter__"
        iterated.append((loop, loop.iter, method))
    for call in tree.nodes(ast.Call):
        if isinstance(call.func, ast.Name) and call.func.id in _CONSUMERS and call.args:
            iterated.append((call, call.args[0], "__iter__"))
    iterated += [(y, y.value, "__iter__") for y in tree.nodes(ast.YieldFrom)]
    for node, value, method in iterated:
        kind = values.kind(value, node)
        if kind and kind.startswith(CLASS):
            cls = kind[len(CLASS) :]
            step = "__anext__" if method == "__aiter__" else "__next__"
            found += [(node, f"type:{cls}.{method}"), (node, f"type:{cls}.{step}")]
    return found


def _raising_ifs(tree: Tree) -> set[ast.If]:
    """The ``if`` statement whose test decides a raise: the nearest one whose body holds it
    (found from the raises up, not the ifs down). An ``if`` further out only leads there (``if
    first_message: while True: ... if counter > limit: raise``: the limit is the inner test's),
    and a loop between the two is a retry of its own."""
    found: set[ast.If] = set()
    for node in tree.nodes(ast.Raise):
        for parent, child in tree.ancestors(node):
            if isinstance(parent, (*_DEFS, ast.Lambda, ast.ClassDef, ast.For, ast.While)):
                break
            if isinstance(parent, ast.If) and any(child is s for s in parent.body):
                found.add(parent)
                break
    return found


def _function_facts(
    tree: Tree, values: Values
) -> tuple[dict[str, FunctionFacts], dict[Def, str], str]:
    """Empty facts for each module- and class-level function (and the module's own code)."""
    module = values.module
    functions: dict[str, FunctionFacts] = {}
    owners: dict[Def, str] = {}
    defs: list[Def] = [*tree.nodes(ast.FunctionDef), *tree.nodes(ast.AsyncFunctionDef)]
    tests: dict[ast.AST | None, list[str]] = {}
    for node in _raising_ifs(tree):
        tests.setdefault(owner_of(tree, node), []).extend(raise_tests(node))
    top_level = {id(node) for node in tree.top_level}
    infinite = infinite_names(tree) if tree.nodes(ast.ClassDef) else frozenset()
    for func in defs:
        if _overload(func):
            continue  # a signature for type checkers: the function is the undecorated def
        method = isinstance(tree.parent(func), ast.ClassDef)
        if id(func) in top_level or method:
            name = _qualname(tree, func, module)
            owners[func] = name
            functions[name] = FunctionFacts(
                model=False,
                limit=sorted(set(tests.get(func, ()))),
                retried=retried(func, values.imports, tree),
                calls=[],
                params=[a.arg for a in (*func.args.posonlyargs, *func.args.args)],
                abstract=_abstract(func),
                returns=values.returns.get(func, ""),
                builds=builds(func, values.imports),
                steps=steps_of(func) if method else [],
                checks=checks_of(func, infinite) if method else [],
            )
    top = qualified(module, MODULE_CODE)
    functions[top] = FunctionFacts(
        model=False,
        limit=[],
        retried=False,
        calls=[],
        params=[],
        abstract=False,
        returns="",
        builds=False,
        steps=[],
        checks=[],
    )
    return functions, owners, top


def _decorated(tree: Tree, values: Values, owners: dict[Def, str]) -> set[tuple[str, int, str]]:
    """``(decorator, 0, function:<decorated>)``: a decorator of the project is called with the
    function it decorates (``@retry_on_exception`` over a model helper: the ``func(*args)`` its
    wrapper loops over is that helper)."""
    found: set[tuple[str, int, str]] = set()
    for func, name in owners.items():
        for decorator in func.decorator_list:
            if isinstance(decorator, (ast.Name, ast.Attribute)):
                ref = values.qualify(dotted(decorator))
                if ref:
                    found.add((ref, 0, FUNCTION + name))
    return found


def summarize(
    tree: Tree, values: Values, calls: CallIndex, handed: Handed | None = None
) -> Summary:
    """The module's summary (see the module docstring)."""
    handed = handed or hand_over(tree, values)
    module = values.module
    functions, owners, top = _function_facts(tree, values)

    def facts_of(node: ast.AST) -> FunctionFacts:
        owner = owner_of(tree, node)
        return functions[owners[owner] if owner is not None and owner in owners else top]

    arguments: set[tuple[str, int, str]] = set()
    ungated = {id(c.node) for c in calls.model if not c.gated}
    looped: set[str] = set()
    listed: list[tuple[str, str, list[str]]] = []
    collections = _collections(tree, values)
    collected = {q.rpartition(".")[2] for q in collections}
    for call in tree.nodes(ast.Call):
        facts = facts_of(call)
        if id(call) in ungated:
            facts["model"] = True
        ref = call_ref(call, values)
        called = ref or name_ref(call, values)
        if called and called not in facts["calls"]:
            facts["calls"].append(called)
        if ref and ":" not in ref:
            listed += _listed(call, ref, values, collected)
            for index, arg in enumerate(call.args):
                kind = (
                    values.reference_kind(arg, call) if not isinstance(arg, ast.Starred) else None
                )
                if kind:
                    arguments.add((ref, index, kind))
        if ref and any(isinstance(c.loop, ast.While) for c in tree.loops_of(call)):
            looped.add(ref)
    arguments |= _decorated(tree, values, owners)
    for node, ref in _iterations(tree, values):
        facts = facts_of(node)
        if ref not in facts["calls"]:
            facts["calls"].append(ref)
    classes = {
        qualified(module, node.name): _class_facts(node, values)
        for node in tree.module.body
        if isinstance(node, ast.ClassDef)
    }
    return Summary(
        module=module,
        imports=dict(values.imports.names),
        functions=functions,
        classes=classes,
        collections=collections,
        tools=handed.names,
        gated=handed.gated,
        counters=sorted(counters(tree)),
        arguments=sorted(arguments),
        looped=sorted(looped),
        dispatchers=dispatch_helpers(tree, values),
        defined=[],
        dispatching=[],
        globals=dict(values.scopes.get(tree.module, {})),
        registrars=registrars(tree, values),
        registered=registered(tree, values),
        listed=listed,
    )

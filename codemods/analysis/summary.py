"""What other modules need to know about one module, as plain JSON-able data.

A summary lists the module's imports, its functions (with the calls they make, whether they make
an ungated model call, whether they stop on a limit), its classes (bases, methods, whether it is
a protocol), its module-level collections of names, and the names it hands to a model as tools.
Calls are written as *refs* the project index resolves across files:

* ``pkg.mod.func`` - a function (or class) by qualified name, imported or local;
* ``self:pkg.mod.Class.meth`` - a method called on ``self``, resolved through the hierarchy;
* ``type:pkg.mod.Class.meth`` - a method called on an instance of a project class (annotated,
  or built by its constructor), resolved to the class, its bases and its implementations.
"""

from __future__ import annotations

import ast
from typing import TypedDict

from .calls import CallIndex
from .loops import counters, raise_tests
from .retries import retried
from .tree import Tree, dotted
from .values import CLASS, FUNCTION, Values

__all__ = [
    "MODULE_CODE",
    "Summary",
    "call_ref",
    "owner_of",
    "qualified",
    "summarize",
    "tool_arguments",
    "tool_names",
]

Def = ast.FunctionDef | ast.AsyncFunctionDef
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: keyword arguments that hand tools to a model or an agent
TOOL_KEYWORDS = frozenset({"tools", "functions", "toolsets"})
#: keywords that describe a tool to a model (beside its ``name``)
SPEC_KEYWORDS = frozenset(
    {"desc", "description", "parameters", "schema", "input_schema", "instructions"}
)
#: keywords of a tool description that hold the function that runs the tool
RUNNER_KEYWORDS = frozenset(
    {"execute", "run", "invoke", "func", "fn", "function", "handler", "callback", "coroutine"}
)
#: calls that take tools positionally: qualified name or method name -> argument index
TOOL_POSITIONS = {
    "langgraph.prebuilt.ToolNode": 0,
    "langgraph.prebuilt.create_react_agent": 1,
    "bind_tools": 0,
    # guardkit's integrations that take the tools they gate (``tools=guard_tools([...])``)
    "guardkit.plugins.langchain.guarded_tool_node": 0,
    "guardkit.plugins.openai_agents.guard_tools": 0,
}
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
    """The ref of the function a call runs (see the module docstring), when it can be named."""
    func = call.func
    if isinstance(func, ast.Attribute):
        held = values.kind(func, call)
        if held and held.startswith(FUNCTION):
            return held[len(FUNCTION) :]  # ``self.complete(...)`` with ``self.complete = f``
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


def _elements(expr: ast.expr, values: Values) -> list[str]:
    """Qualified names of the functions, classes or collections an expression lists."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return [n for e in expr.elts for n in _elements(e, values)]
    if isinstance(expr, ast.Dict):
        return [n for v in expr.values for n in _elements(v, values)]
    if isinstance(expr, ast.Starred):
        return _elements(expr.value, values)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _elements(expr.left, values) + _elements(expr.right, values)
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id in {"list", "tuple"} and expr.args:
            return _elements(expr.args[0], values)
        name = values.qualify(dotted(expr.func))
        return [name] if name and name.rpartition(".")[2][:1].isupper() else []
    name = values.qualify(dotted(expr))
    return [name] if name else []


def _spec_callables(call: ast.Call) -> list[ast.expr]:
    """``ToolSpec(name="shell", desc=..., execute=run_shell)``: a tool described for a model by
    name and schema or description, with the function that runs it."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    name = keywords.get("name")
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return []
    if not SPEC_KEYWORDS & keywords.keys():
        return []
    return [v for k, v in keywords.items() if isinstance(v, ast.Name) and k in RUNNER_KEYWORDS]


def _is_gate(call: ast.Call, values: Values) -> bool:
    """A call of a guardkit integration itself (``guarded_tool_node([...])``)."""
    return values.qualify(dotted(call.func)) in values.catalog.gates


def tool_arguments(call: ast.Call, values: Values) -> list[ast.expr]:
    """The arguments of ``call`` that hand tools to a model or an agent."""
    found = [k.value for k in call.keywords if k.arg in TOOL_KEYWORDS]
    found += _spec_callables(call)
    name = values.qualify(dotted(call.func)) or ""
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    position = TOOL_POSITIONS.get(name, TOOL_POSITIONS.get(method))
    if position is not None and len(call.args) > position:
        found.append(call.args[position])
    return found


def tool_names(call: ast.Call, values: Values) -> list[str]:
    """Qualified names of the functions, classes or collections ``call`` hands over as tools."""
    return [
        name for argument in tool_arguments(call, values) for name in _elements(argument, values)
    ]


def _collections(tree: Tree, values: Values) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in tree.module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(
            value, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.BinOp)
        ):
            names = _elements(value, values)
            if names:
                found[qualified(values.module, target.id)] = names
    return found


def _class_facts(node: ast.ClassDef, values: Values) -> ClassFacts:
    bases = [b for b in (values.qualify(dotted(base)) for base in node.bases) if b]
    methods = [item.name for item in node.body if isinstance(item, _DEFS)]
    protocol = bool(_PROTOCOL_BASES & set(bases))
    return ClassFacts(
        bases=bases, methods=methods, protocol=protocol, attrs=dict(values.attrs.get(node, {}))
    )


def _raising_ifs(tree: Tree) -> set[ast.If]:
    """``if`` statements whose body raises (found from the raises up, not the ifs down)."""
    found: set[ast.If] = set()
    for node in tree.nodes(ast.Raise):
        for parent, child in tree.ancestors(node):
            if isinstance(parent, (*_DEFS, ast.Lambda, ast.ClassDef)):
                break
            if isinstance(parent, ast.If) and any(child is s for s in parent.body):
                found.add(parent)
    return found


def summarize(tree: Tree, values: Values, calls: CallIndex) -> Summary:
    """The module's summary (see the module docstring)."""
    module = values.module
    functions: dict[str, FunctionFacts] = {}
    owners: dict[Def, str] = {}
    defs: list[Def] = [*tree.nodes(ast.FunctionDef), *tree.nodes(ast.AsyncFunctionDef)]
    tests: dict[ast.AST | None, list[str]] = {}
    for node in _raising_ifs(tree):
        tests.setdefault(owner_of(tree, node), []).extend(raise_tests(node))
    for func in defs:
        parent = tree.parent(func)
        if parent is tree.module or isinstance(parent, ast.ClassDef):
            name = _qualname(tree, func, module)
            owners[func] = name
            functions[name] = FunctionFacts(
                model=False,
                limit=sorted(set(tests.get(func, ()))),
                retried=retried(func, values.imports, tree),
                calls=[],
                params=[a.arg for a in (*func.args.posonlyargs, *func.args.args)],
            )
    top = qualified(module, MODULE_CODE)
    functions[top] = FunctionFacts(model=False, limit=[], retried=False, calls=[], params=[])
    arguments: set[tuple[str, int, str]] = set()
    ungated = {id(c.node) for c in calls.model if not c.gated}
    tools: list[str] = []
    gated: list[str] = []
    looped: set[str] = set()
    for call in tree.nodes(ast.Call):
        arguments_gated = values.has_gate(call) or _is_gate(call, values)
        for argument in tool_arguments(call, values):
            (gated if arguments_gated else tools).extend(_elements(argument, values))
        owner = owner_of(tree, call)
        facts = functions[owners[owner] if owner is not None and owner in owners else top]
        if id(call) in ungated:
            facts["model"] = True
        ref = call_ref(call, values)
        if ref and ref not in facts["calls"]:
            facts["calls"].append(ref)
        if ref and ":" not in ref:
            for index, arg in enumerate(call.args):
                kind = values.kind(arg, call) if not isinstance(arg, ast.Starred) else None
                if kind:
                    arguments.add((ref, index, kind))
        if ref and any(isinstance(c.loop, ast.While) for c in tree.loops_of(call)):
            looped.add(ref)
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
        collections=_collections(tree, values),
        tools=sorted(set(tools)),
        gated=sorted(set(gated)),
        counters=sorted(counters(tree)),
        arguments=sorted(arguments),
        looped=sorted(looped),
    )

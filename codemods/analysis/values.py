"""Follow where values come from: which names hold a model client, a guard or a tool server.

Flow-insensitive and per module, in a few rounds to a fixed point: assignments (``client =
OpenAI()``), ``self.client`` attributes set in any method, class-level annotations, annotated and
defaulted parameters, arguments passed to functions of the same module, ``with`` targets, return
values of local factories, LangChain rebinding (``llm.bind_tools(...)``) and ``prompt | llm``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Mapping
from functools import lru_cache

from .catalog import (
    HTTP_CLIENTS,
    REBINDERS,
    SERVICE_CLIENTS,
    SESSIONS,
    TOOL_SERVER_CLIENTS,
    Catalog,
)
from .imports import ImportMap
from .tree import FUNCTION_NODES, Tree, dotted

__all__ = [
    "CLASS",
    "FUNCTION",
    "GATED",
    "GUARDKIT",
    "IS_CLASS",
    "MODEL_FUNCTION",
    "RETURNS",
    "Values",
]

GUARDKIT = "guardkit"
#: the kind of a client, agent or server built with a guardkit integration: gated
GATED = "gated"
#: prefix of the "kind" of a reference to a project function (``self.complete = complete``)
FUNCTION = "function:"
#: prefix of the kind of an instance of a class that is not in the catalog
CLASS = "class:"
#: the kind of a callable that makes a model call (``completion = litellm.completion``)
MODEL_FUNCTION = "model_function"
#: the name under which ``Env.kinds`` holds what a function returns (not an identifier)
RETURNS = "<return>"
#: the name under which ``Env.kinds`` marks an imported name as a class of the project
IS_CLASS = "<class>"
Def = ast.FunctionDef | ast.AsyncFunctionDef
_ROUNDS = 3
_SERVER_SELF = frozenset({"fastmcp", "mcp_lowlevel"})


@lru_cache(maxsize=4096)
def _parse_annotation(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def _constructions(tree: Tree) -> list[tuple[ast.AST, str, ast.Call]]:
    """``(scope, name, call)`` of each ``name = Call(...)`` assignment."""
    built: list[tuple[ast.AST, str, ast.Call]] = []
    for assign in tree.nodes(ast.Assign):
        target = assign.targets[0] if len(assign.targets) == 1 else None
        name = dotted(target) if isinstance(target, (ast.Name, ast.Attribute)) else None
        if name and isinstance(assign.value, ast.Call):
            built.append((tree.function_of(assign), name, assign.value))
    return built


class Values:
    """The kind of value (``"openai"``, ``"langchain"``, ``"guardkit"``...) names hold."""

    def __init__(
        self,
        tree: Tree,
        imports: ImportMap,
        catalog: Catalog,
        module: str = "",
        project: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.tree = tree
        #: from the project index: ``function qualname -> {parameter: kind}`` and
        #: ``class qualname -> {attribute: kind}`` (``Env.kinds``)
        self.project = project or {}
        self.imports = imports
        self.catalog = catalog
        self.module = module
        self.classes: dict[str, ast.ClassDef] = {}
        self._chains: dict[ast.AST, list[ast.AST]] = {}
        gates = catalog.gates
        #: local names through which a gate of the catalog can be reached (usually none)
        self._gate_roots = {
            local
            for local, qualname in imports.names.items()
            if qualname in gates or any(g.startswith(qualname + ".") for g in gates)
        }
        self.scopes: dict[ast.AST, dict[str, str]] = defaultdict(dict)
        self.attrs: dict[ast.ClassDef, dict[str, str]] = defaultdict(dict)
        self.returns: dict[ast.AST, str] = {}
        self.functions: dict[str, Def] = {}
        self.methods: dict[ast.ClassDef, dict[str, Def]] = defaultdict(dict)
        for node in tree.top_level:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.methods[node][item.name] = item
        self._method_names = {name for methods in self.methods.values() for name in methods}
        #: constructions a guardkit integration guards from outside their own arguments
        self._guarded = self._guarded_constructions() if self._gate_roots else set()
        # parameters are bound from their annotations once; the other bindings go round to a
        # fixed point (a value assigned late in the module can feed one used earlier)
        defs: list[Def] = [*tree.nodes(ast.FunctionDef), *tree.nodes(ast.AsyncFunctionDef)]
        for func in defs:
            self._bind_parameters(func)
        nodes = tree.nodes(*_BINDING_NODES)
        for _ in range(_ROUNDS):
            before = self._size()
            for bound in nodes:
                self._bind(bound)
            if self._size() == before:
                break  # a fixed point: another round would bind nothing new

    def _size(self) -> tuple[int, int, int]:
        scopes = sum(len(s) for s in self.scopes.values())
        return scopes, sum(len(a) for a in self.attrs.values()), len(self.returns)

    # -- evaluation -------------------------------------------------------------------------
    def _attribute_kind(self, expr: ast.Attribute, at: ast.AST) -> str | None:
        """``self.client``, or ``session.model`` on an instance of a project class (its
        attributes from this module, or from the project index)."""
        if isinstance(expr.value, ast.Name) and expr.value.id in {"self", "cls"}:
            cls = self.tree.class_of(at)
            if cls is None:
                return None
            return self.attr_of(cls, expr.attr) or self._property_kind(cls, expr.attr)
        base = self.kind(expr.value, at)
        if base is None:
            return self._imported_kind(dotted(expr))
        if not base.startswith(CLASS):
            return None
        qualname = base[len(CLASS) :]
        local = self.classes.get(qualname.rpartition(".")[2])
        if local is not None and self.local_name(local.name) == qualname:
            return self.attrs[local].get(expr.attr)
        return self.project.get(qualname, {}).get(expr.attr)

    def _property_kind(self, cls: ast.ClassDef, name: str) -> str | None:
        """``self.tools`` read through a ``@property`` (or ``cached_property``): what it
        returns."""
        method = self.method_of(cls, name)
        if method is None or not any(
            (dotted(d) or "").rpartition(".")[2] in {"property", "cached_property"}
            for d in method.decorator_list
        ):
            return None
        return self.returns.get(method)

    def local_name(self, name: str) -> str:
        """The qualified name of a definition of this module."""
        return f"{self.module}.{name}" if self.module else name

    def qualify(self, name: str | None) -> str | None:
        """The qualified name of a dotted local name: imported, or defined in this module."""
        if name is None:
            return None
        resolved = self.imports.resolve(name)
        if resolved is not None:
            return resolved
        root = name.partition(".")[0]
        if root in self.functions or root in self.classes:
            return f"{self.module}.{name}" if self.module else name  # see summary.qualified
        return None

    def _guarded_constructions(self) -> set[ast.Call]:
        """Calls whose object a guardkit integration guards in place: the argument of a gate
        (``guard(CodeAgent(...))``), a construction assigned to a name a gate is given
        (``agent = CodeAgent(...)`` then ``guard(agent)``), and what such a construction is
        built from (``runner = Runner(agent=root)``, ``root = Agent(tools=[...])``)."""
        tree, module = self.tree, self.tree.module
        names: set[tuple[ast.AST, str]] = set()
        guarded: set[ast.Call] = set()

        def take(parts: list[ast.expr], scope: ast.AST) -> None:
            for part in parts:
                for node in ast.walk(part):
                    if isinstance(node, ast.Call):
                        guarded.add(node)
                    elif isinstance(node, (ast.Name, ast.Attribute)) and (found := dotted(node)):
                        names.update({(scope, found), (module, found)})

        for call in tree.nodes(ast.Call):
            parts = [*call.args, *(k.value for k in call.keywords)]
            if self.qualify(dotted(call.func)) in self.catalog.gates or self._names_gate(parts):
                take(parts, tree.function_of(call))
        built = _constructions(tree)
        for _ in range(_ROUNDS):
            before = len(guarded)
            for scope, name, call in built:
                if call in guarded or (scope, name) in names:
                    guarded.add(call)
                    take([*call.args, *(k.value for k in call.keywords)], scope)
            if len(guarded) == before:
                break
        return guarded

    @property
    def guarded(self) -> frozenset[ast.Call]:
        """The constructions a gate guards from outside their own arguments (``guard(agent)``)."""
        return frozenset(self._guarded)

    def _names_gate(self, parts: list[ast.expr]) -> bool:
        """Whether a gate of the catalog is named among ``parts`` (``plugins=[GuardPlugin()]``)."""
        for part in parts:
            for node in ast.walk(part):
                name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
                if name and self.qualify(name) in self.catalog.gates:
                    return True
        return False

    def has_gate(self, call: ast.Call) -> bool:
        """Whether a guardkit integration (the catalog's ``gates``) is among the arguments, as in
        ``create_agent(..., middleware=[GuardMiddleware()])`` or ``guard_server(mcp)``, or
        guards the object the call builds from outside (``guard(agent)``)."""
        if not self._gate_roots:
            return False
        if call in self._guarded:
            return True
        parts = [*call.args, *(k.value for k in call.keywords)]
        if isinstance(call.func, ast.Attribute):
            parts.append(call.func.value)
        return self._names_gate(parts)

    def qualname_kind(self, qualname: str | None) -> str | None:
        """The kind a call to ``qualname`` returns: a catalog kind, ``guardkit``, or
        ``class:<qualname>`` for another class (so calls on it can be followed project-wide)."""
        if qualname is None:
            return None
        if qualname == GUARDKIT or qualname.startswith("guardkit."):
            return GUARDKIT
        known = self.catalog.client_kind(qualname) or TOOL_SERVER_CLIENTS.get(qualname)
        known = known or HTTP_CLIENTS.get(qualname)
        if known is None and (
            self._in_project(qualname) or IS_CLASS in self.project.get(qualname, {})
        ):
            return CLASS + qualname
        return known

    def _in_project(self, qualname: str) -> bool:
        """A class of this project: defined here, or in a module of the same top-level package
        (how a relative import resolves); classes of other libraries are not followed."""
        head, _, last = qualname.rpartition(".")
        if not last[:1].isupper():
            return False
        if not self.module:
            return head in {"", self.module}
        return qualname.partition(".")[0] == self.module.partition(".")[0]

    def kind(self, expr: ast.AST, at: ast.AST) -> str | None:
        """The kind of value ``expr`` (located inside ``at``) evaluates to, if known."""
        if isinstance(expr, (ast.Name, ast.Attribute)):
            narrowed = self.tree.narrowed(expr, at)
            if narrowed is not None:
                return self.qualname_kind(self.qualify(dotted(narrowed)))
        if isinstance(expr, ast.Name):
            return self._name_kind(expr, at)
        if isinstance(expr, ast.Attribute):
            return self._attribute_kind(expr, at) or self._model_function(expr, at)
        if isinstance(expr, ast.Call):
            return self._call_kind(expr, at)
        if isinstance(expr, ast.Await):
            return self.kind(expr.value, at)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            sides = {self.kind(expr.left, at), self.kind(expr.right, at)}
            return "langchain" if "langchain" in sides else None
        if isinstance(expr, (ast.IfExp, ast.BoolOp)):
            options = [expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else expr.values
            return next((k for k in (self.kind(o, at) for o in options) if k), None)
        return None

    def reference_kind(self, expr: ast.expr, at: ast.AST) -> str | None:
        """``kind``, or for a function of another module of the project named, not called
        (``self.step = run_step``, ``loop(run_step)``), a reference to it: the project index
        tells whether it reaches a model."""
        found = self.kind(expr, at)
        if found is not None or not isinstance(expr, (ast.Name, ast.Attribute)):
            return found
        qualname = self.imports.resolve(dotted(expr))
        if qualname is None or qualname.rpartition(".")[2][:1].isupper():
            return None
        top = self.module.partition(".")[0]
        same = qualname.partition(".")[0] == top or "." not in self.module
        return FUNCTION + qualname if same and top else None

    def held_kind(self, expr: ast.expr, at: ast.AST) -> str | None:
        """The kind a variable or attribute was bound to (no evaluation of what it names):
        the cheap test of whether a called name holds a model function."""
        if isinstance(expr, ast.Name):
            for scope in self.scope_chain(at):
                if expr.id in self.scopes.get(scope, {}):
                    return self.scopes[scope][expr.id]
            return self._imported_kind(expr.id)
        if isinstance(expr, ast.Attribute):
            return self._attribute_kind(expr, at)
        return None

    def _name_kind(self, expr: ast.Name, at: ast.AST) -> str | None:
        for scope in self.scope_chain(at):
            if expr.id in self.scopes.get(scope, {}):
                return self.scopes[scope][expr.id]
        if expr.id in self.functions:
            return FUNCTION + self.local_name(expr.id)
        if expr.id == "self":
            cls = self.tree.class_of(at)
            return self._self_kind(cls) if cls else None
        return self._imported_kind(expr.id) or self._model_function(expr, at)

    def _imported_kind(self, name: str | None) -> str | None:
        """A module-level value of another module of the project (``from .llm import client``,
        ``config.client``), from the project index."""
        qualname = self.imports.resolve(name) if self.project else None
        if qualname is None:
            return None
        module, _, attr = qualname.rpartition(".")
        return self.project.get(module, {}).get(attr)

    def _model_function(self, expr: ast.Name | ast.Attribute, at: ast.AST) -> str | None:
        """``litellm.completion`` or ``client.chat.completions.create`` named, not called: a
        callable that makes a model call (``completion = litellm.completion``)."""
        if (expr.attr if isinstance(expr, ast.Attribute) else expr.id) not in self.catalog.tails:
            return None  # most names: no model function ends that way
        if self.imports.resolve(dotted(expr)) in self.catalog.functions:
            return MODEL_FUNCTION
        chain: list[str] = []
        node: ast.expr = expr
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
            kind = self.kind(node, at) if len(chain) > 1 or isinstance(node, ast.Name) else None
            if kind and ".".join(chain) in self.catalog.methods.get(kind, ()):
                return MODEL_FUNCTION
        return None

    def _self_kind(self, cls: ast.ClassDef) -> str:
        """``self`` in a subclass of a tool server (``class Server(FastMCP)``) is that server;
        in any other class, an instance of the class."""
        for base in cls.bases:
            kind = TOOL_SERVER_CLIENTS.get(self.qualify(dotted(base)) or "")
            if kind in _SERVER_SELF:
                return kind
        return CLASS + self.local_name(cls.name)

    def annotation_kind(self, ann: ast.expr | None) -> str | None:
        """The kind named by a type annotation (``OpenAI``, ``"OpenAI"``, ``OpenAI | None``...)."""
        if ann is None:
            return None
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            parsed = _parse_annotation(ann.value)
            return self.annotation_kind(parsed) if parsed is not None else None
        if isinstance(ann, ast.Subscript):
            inner = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            return next((k for k in map(self.annotation_kind, inner) if k), None)
        if isinstance(ann, ast.BinOp):
            return self.annotation_kind(ann.left) or self.annotation_kind(ann.right)
        return self.qualname_kind(self.qualify(dotted(ann)))

    def callee(self, call: ast.Call, at: ast.AST) -> tuple[Def, int] | None:
        """The local function a call runs (a class's ``__init__`` for a construction), and how
        many leading parameters it skips."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.functions:
            return self.functions[func.id], 0
        if isinstance(func, ast.Name) and func.id in self.classes:  # ``Handler(OpenAI())``
            init = self.method_of(self.classes[func.id], "__init__")
            return (init, 1) if init else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            cls = self.tree.class_of(at)
            if func.value.id == "self" and cls:
                method = self.method_of(cls, func.attr)
                return (method, 1) if method else None
            # ``Holder.get_instance()``, ``holder.get_instance()`` on an instance of a class here
            if func.attr not in self._method_names:
                return None
            owner = self.classes.get(func.value.id) or self._instance_class(func.value, at)
            method = self.method_of(owner, func.attr) if owner is not None else None
            return (method, 1) if method else None
        return None

    def _instance_class(self, expr: ast.Name, at: ast.AST) -> ast.ClassDef | None:
        kind = self._name_kind(expr, at)
        if kind is None or not kind.startswith(CLASS):
            return None
        name = kind[len(CLASS) :].removeprefix(f"{self.module}." if self.module else "")
        return self.classes.get(name)

    def attr_of(self, cls: ast.ClassDef, name: str, depth: int = 0) -> str | None:
        """The kind of ``self.<name>`` in ``cls``: set in its methods or in a base class of this
        module (``self.model = model`` in the base's ``__init__``)."""
        found = self.attrs[cls].get(name) if cls in self.attrs else None
        if found is not None or depth >= 8:
            return found
        for base in cls.bases:
            local = self.classes.get(dotted(base) or "")
            found = self.attr_of(local, name, depth + 1) if local and local is not cls else None
            if found:
                return found
        return None

    def method_of(self, cls: ast.ClassDef, name: str, depth: int = 0) -> Def | None:
        """``name`` defined by ``cls`` or inherited from a base class of this module."""
        if name in self.methods[cls]:
            return self.methods[cls][name]
        for base in cls.bases if depth < 8 else ():
            local = self.classes.get(dotted(base) or "")
            found = self.method_of(local, name, depth + 1) if local else None
            if found:
                return found
        return None

    def _call_kind(self, call: ast.Call, at: ast.AST) -> str | None:
        found = self.qualname_kind(self.qualify(dotted(call.func)))
        if found and found != GUARDKIT and self.has_gate(call):
            return GATED
        if found:
            return found
        if isinstance(call.func, ast.Attribute) and call.func.attr in REBINDERS:
            return self.kind(call.func.value, at)
        service = _service(call)
        if service is not None:
            return SERVICE_CLIENTS.get(service)
        session = self._session_kind(call.func, at)
        if session:
            return session
        target = self.callee(call, at)
        if target is not None:
            return self.returns.get(target[0])
        return self._returned(call, at) if self.project else None

    def _returned(self, call: ast.Call, at: ast.AST) -> str | None:
        """What a function or method of another module returns (``make_llm()``,
        ``factory.build()``), from the project index."""
        func = call.func
        ref = self.qualify(dotted(func))
        if ref is None and isinstance(func, ast.Attribute):
            receiver = self.kind(func.value, at)
            if receiver is not None and receiver.startswith(CLASS):
                ref = f"type:{receiver[len(CLASS) :]}.{func.attr}"
        return self.project.get(ref, {}).get(RETURNS) if ref else None

    def _session_kind(self, func: ast.expr, at: ast.AST) -> str | None:
        """``client.chats.create(...)`` on a genai client returns a chat session, and so on."""
        chain: list[str] = []
        while isinstance(func, ast.Attribute):
            chain.insert(0, func.attr)
            func = func.value
            kind = self.kind(func, at)
            if kind:
                return SESSIONS.get(kind, {}).get(".".join(chain))
        return None

    def scope_chain(self, at: ast.AST) -> list[ast.AST]:
        """The scopes a name used at ``at`` is looked up in, innermost first."""
        inner = at if isinstance(at, FUNCTION_NODES) else self.tree.function_of(at)
        chain = self._chains.get(inner)
        if chain is None:
            chain = [inner] if inner is not self.tree.module else []
            chain += [p for p, _ in self.tree.ancestors(inner) if isinstance(p, FUNCTION_NODES)]
            chain.append(self.tree.module)
            self._chains[inner] = chain
        return chain

    # -- binding ----------------------------------------------------------------------------
    def _bind(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            self._bind_assignment(node)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._store(item.optional_vars, self.kind(item.context_expr, node), node)
        elif isinstance(node, ast.Return) and node.value is not None:
            found = self.kind(node.value, node)
            if found:
                self.returns.setdefault(self.tree.function_of(node), found)
        elif isinstance(node, ast.Call):
            self._bind_arguments(node)

    def _bind_assignment(self, node: ast.Assign | ast.AnnAssign | ast.NamedExpr) -> None:
        found = self.reference_kind(node.value, node) if node.value is not None else None
        if isinstance(node, ast.AnnAssign):
            found = found or self.annotation_kind(node.annotation)
            parent = self.tree.parent(node)
            if isinstance(parent, ast.ClassDef) and isinstance(node.target, ast.Name) and found:
                self.attrs[parent][node.target.id] = found
                return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            self._store(target, found, node)

    def _store(self, target: ast.AST, found: str | None, at: ast.AST) -> None:
        if found is None:
            return
        if isinstance(target, ast.Name):
            self.scopes[self.tree.function_of(at)][target.id] = found
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id in {"self", "cls"}
        ):
            cls = self.tree.class_of(at)
            if cls is not None:
                self.attrs[cls][target.attr] = found

    def _bind_parameters(self, func: Def) -> None:
        args = func.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        defaults: list[ast.expr | None] = [None] * (len(args.posonlyargs) + len(args.args))
        defaults[len(defaults) - len(args.defaults) :] = args.defaults
        defaults += args.kw_defaults
        owner = self.tree.parent(func)
        name = f"{owner.name}.{func.name}" if isinstance(owner, ast.ClassDef) else func.name
        given = self.project.get(self.local_name(name), {})
        for param, default in zip(params, defaults, strict=True):
            found = self.annotation_kind(param.annotation) or given.get(param.arg)
            if found is None and default is not None:
                found = self.kind(default, func)
            if found:
                self.scopes[func][param.arg] = found
        returned = self.annotation_kind(func.returns)
        if returned:
            self.returns[func] = returned

    def _bind_arguments(self, call: ast.Call) -> None:
        target = self.callee(call, call)
        if target is None:
            return
        func, skip = target
        params = [*func.args.posonlyargs, *func.args.args][skip:]
        scope = self.scopes[func]
        for param, arg in zip(params, call.args, strict=False):
            if isinstance(arg, ast.Starred):
                break
            found = self.reference_kind(arg, call)
            if found:
                scope.setdefault(param.arg, found)
        for keyword in call.keywords:
            found = self.kind(keyword.value, call) if keyword.arg else None
            if found and keyword.arg:
                scope.setdefault(keyword.arg, found)


_BINDING_NODES = (
    ast.Assign,
    ast.AnnAssign,
    ast.NamedExpr,
    ast.With,
    ast.AsyncWith,
    ast.Return,
    ast.Call,
)


def _service(call: ast.Call) -> str | None:
    """``boto3.client("bedrock-runtime")``, ``session.client(service_name="...")``: the AWS
    service a client is made for."""
    func = call.func
    if (func.attr if isinstance(func, ast.Attribute) else dotted(func)) != "client":
        return None
    given = call.args[:1] or [k.value for k in call.keywords if k.arg == "service_name"]
    first = given[0] if given else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None

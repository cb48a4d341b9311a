"""What a module hands to a model as tools, followed through its own variables and helpers.

``Agent(tools=[...])``, ``completion(functions=...)``, ``ToolNode([...])``, a tool spec's
``execute=`` and ``server.tool(fn)`` hand callables over. The expression is followed to what it
names: module-level functions, classes and collections (by qualified name, for the project
index), methods of the enclosing class (``self.debug``, as a ``self:`` ref the index resolves
through the class hierarchy), local variables (every value assigned, ``+=``-ed, ``append``-ed or
``extend``-ed in the function), the return values of the module's own helpers
(``functions = self._supported_functions()``), and nested ``def``s (reported here, where they
live). A plugin hook that registers tools (``@llm.hookimpl def register_tools(register)``)
hands over what it passes to its registering parameter.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field

from .catalog import (
    TOOL_CALLABLE_KEYWORDS,
    TOOL_CONSTRUCTORS,
    TOOL_DECORATOR_METHODS,
    TOOL_HOOKS,
    TOOL_SERVER_CLIENTS,
)
from .tree import FUNCTION_NODES, Tree, dotted
from .values import Values

__all__ = ["Handed", "TOOL_KEYWORDS", "hand_over", "made_tools", "tool_arguments", "tool_names"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
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
    # AG2/AutoGen: ``register_function(f, caller=assistant, executor=user_proxy)``
    "autogen.register_function": 0,
    "autogen.agentchat.register_function": 0,
    # guardkit's integrations that take the tools they gate (``tools=guard_tools([...])``)
    "guardkit.plugins.langchain.guarded_tool_node": 0,
    "guardkit.plugins.openai_agents.guard_tools": 0,
}
#: methods of a tool server that register a function given as their first argument
#: (``mcp.tool(fn, name=...)``, ``mcp.add_tool(fn)``, ``agent.tool_plain(fn)``)
_REGISTERING = frozenset({"tool", "add_tool", "tool_plain"})
_SERVER_KINDS = frozenset(TOOL_SERVER_CLIENTS.values()) - {"mcp_lowlevel"}
_COPIES = frozenset({"list", "tuple", "set", "sorted"})
#: last words of the tool constructors' names (``from_defaults``, ``Tool``)
_MAKER_WORDS = frozenset(n.rpartition(".")[2] for n in TOOL_CONSTRUCTORS)
_GROWERS = frozenset({"append", "extend", "insert", "add"})
_DEPTH = 6


def _parts(expr: ast.expr) -> list[ast.expr]:
    """The sub-expressions whose values a container or a choice holds."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return list(expr.elts)
    if isinstance(expr, ast.Dict):
        return list(expr.values)
    if isinstance(expr, (ast.Starred, ast.Await)):
        return [expr.value]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return [expr.left, expr.right]
    if isinstance(expr, ast.IfExp):
        return [expr.body, expr.orelse]
    if isinstance(expr, ast.BoolOp):
        return list(expr.values)
    if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return [g.iter for g in expr.generators[:1]]
    return []


def _parameters(func: ast.AST) -> set[str]:
    args = getattr(func, "args", None)
    if not isinstance(args, ast.arguments):
        return set()
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


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


def made_tools(call: ast.Call, values: Values) -> list[ast.expr]:
    """The callable a framework makes a tool of: ``Tool(name, func)``,
    ``FunctionTool.from_defaults(async_fn=f)``, a tool decorator called on it (``tool(f)``,
    ``function_tool(f)``, ``tool("search")(f)``)."""
    func = call.func.func if isinstance(call.func, ast.Call) else call.func
    if isinstance(func, ast.Name):  # through an alias: ``tool as create_tool``
        last = (values.imports.names.get(func.id) or func.id).rpartition(".")[2]
    else:
        last = func.attr if isinstance(func, ast.Attribute) else ""
    if last in TOOL_DECORATOR_METHODS and isinstance(call.func, ast.Call):
        return call.args[:1]  # ``assistant.register_for_llm(description=...)(search)``
    if last not in _MAKER_WORDS and last not in values.catalog.tool_decorator_words:
        return []  # the cheap test first: most calls name no tool maker
    resolved = values.imports.resolve(dotted(call.func)) or ""
    if resolved in TOOL_CONSTRUCTORS:
        found = [k.value for k in call.keywords if k.arg in TOOL_CALLABLE_KEYWORDS]
        position = TOOL_CONSTRUCTORS[resolved]
        if position is not None and len(call.args) > position:
            found.append(call.args[position])
        return found
    decorator = call.func.func if isinstance(call.func, ast.Call) else call.func
    named = call.args[:1] if len(call.args) == 1 and not call.keywords else []
    if named and values.imports.resolve(dotted(decorator)) in values.catalog.tool_decorators:
        return named  # the decorator applied by hand
    return []


def tool_arguments(call: ast.Call, values: Values) -> list[ast.expr]:
    """The arguments of ``call`` that hand tools to a model or an agent."""
    found = [k.value for k in call.keywords if k.arg in TOOL_KEYWORDS]
    found += _spec_callables(call)
    found += [m for m in made_tools(call, values) if isinstance(m, ast.Name) or _on_self(m)]
    name = values.qualify(dotted(call.func)) or ""
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    position = TOOL_POSITIONS.get(name, TOOL_POSITIONS.get(method))
    if position is not None and len(call.args) > position:
        found.append(call.args[position])
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    registers = method in _REGISTERING and call.args
    if registers and receiver is not None and values.kind(receiver, call) in _SERVER_KINDS:
        found.append(call.args[0])
    return found


@dataclass(slots=True)
class Handed:
    """The tools a module hands over: qualified names or refs (for the project index), and
    nested ``def``s (reported in this module)."""

    #: qualified names and ``self:`` refs of what is handed over without a guardkit gate
    names: list[str] = field(default_factory=list)
    #: the same, handed over through a guardkit integration (``guard_tools([...])``)
    gated: list[str] = field(default_factory=list)
    #: nested functions handed over, reported where they are defined
    local: list[Def] = field(default_factory=list)


class _Resolver:
    def __init__(self, tree: Tree, values: Values) -> None:
        self.tree = tree
        self.values = values
        self.assigned: dict[tuple[ast.AST, str], list[ast.expr]] = defaultdict(list)
        self.defs: dict[tuple[ast.AST, str], Def] = {}
        bindings: list[ast.Assign | ast.AnnAssign | ast.AugAssign] = [
            *tree.nodes(ast.Assign),
            *tree.nodes(ast.AnnAssign),
            *tree.nodes(ast.AugAssign),
        ]
        for node in bindings:
            scope = tree.function_of(node)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and node.value is not None:
                    self.assigned[(scope, target.id)].append(node.value)
                elif _on_self(target) and node.value is not None:
                    cls = tree.class_of(node)
                    if cls is not None and isinstance(target, ast.Attribute):
                        # ``self.tools = [ShellTool(), ...]`` in any method of the class
                        self.assigned[(cls, target.attr)].append(node.value)
        for call in tree.nodes(ast.Call):
            func = call.func
            grows = isinstance(func, ast.Attribute) and func.attr in _GROWERS and call.args
            if grows and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                key = (tree.function_of(call), func.value.id)
                self.assigned[key].append(call.args[-1])
        defs: list[Def] = [*tree.nodes(ast.FunctionDef), *tree.nodes(ast.AsyncFunctionDef)]
        for definition in defs:
            scope = tree.function_of(definition)
            if scope is not tree.module:
                self.defs[(scope, definition.name)] = definition

    def elements(self, expr: ast.expr, at: ast.AST, out: Handed, names: list[str]) -> None:
        self._walk(expr, at, out, names, set(), 0)

    def _walk(
        self,
        expr: ast.expr,
        at: ast.AST,
        out: Handed,
        names: list[str],
        seen: set[tuple[ast.AST, str]],
        depth: int,
    ) -> None:
        if depth > _DEPTH:
            return
        if isinstance(expr, ast.Call):
            self._call(expr, at, out, names, seen, depth)
        elif isinstance(expr, ast.Name):
            self._name(expr, at, out, names, seen, depth)
        elif isinstance(expr, ast.Attribute):
            self._attribute(expr, at, out, names, seen, depth)
        else:
            for part in _parts(expr):
                self._walk(part, at, out, names, seen, depth + 1)

    def _call(
        self,
        call: ast.Call,
        at: ast.AST,
        out: Handed,
        names: list[str],
        seen: set[tuple[ast.AST, str]],
        depth: int,
    ) -> None:
        func = call.func
        if isinstance(func, ast.Name) and func.id in _COPIES and call.args:
            self._walk(call.args[0], at, out, names, seen, depth + 1)
            return
        target = self.values.callee(call, at)
        if target is not None:
            for ret in (n for n in ast.walk(target[0]) if isinstance(n, ast.Return)):
                if ret.value is not None and self.tree.function_of(ret) is target[0]:
                    self._walk(ret.value, ret, out, names, seen, depth + 1)
            return
        name = self.values.qualify(dotted(func))
        if name and name.rpartition(".")[2][:1].isupper():
            # a tool object built from a class of the project; one built from tool objects
            # (``ToolCollection(ScreenTool(), TerminalTool())``) holds them
            held: list[str] = []
            for arg in call.args:
                if isinstance(arg, (ast.Call, ast.Starred)):
                    self._walk(arg, at, out, held, seen, depth + 1)
            names.extend(held or [name])
        elif isinstance(func, ast.Attribute) and self._holds(func.value, at):
            # ``tools=collection.to_params()``: the schema of the objects the receiver holds
            self._walk(func.value, at, out, names, seen, depth + 1)

    def _holds(self, receiver: ast.expr, at: ast.AST) -> bool:
        """A variable, or an attribute the class's methods store a value in (not a method or a
        property: what those return is not followed here)."""
        if isinstance(receiver, ast.Name):
            return True
        cls = self.tree.class_of(at)
        return (
            _on_self(receiver)
            and cls is not None
            and isinstance(receiver, ast.Attribute)
            and (cls, receiver.attr) in self.assigned
        )

    def _name(
        self,
        expr: ast.Name,
        at: ast.AST,
        out: Handed,
        names: list[str],
        seen: set[tuple[ast.AST, str]],
        depth: int,
    ) -> None:
        iterated = self._iterated(expr)
        if iterated is not None:  # ``[tool(t) for t in tools]``: the elements of ``tools``
            self._walk(iterated, iterated, out, names, seen, depth + 1)
            return
        for scope in self.values.scope_chain(at):
            key = (scope, expr.id)
            if scope is self.tree.module:
                # ``tools = [add, search]`` at module level, then ``Agent(tools=tools)``
                if key in self.assigned and self.values.qualify(expr.id) is None:
                    self._assigned(key, out, names, seen, depth)
                    return
                break
            if isinstance(scope, FUNCTION_NODES) and expr.id in _parameters(scope):
                names.extend(self._parameter(scope, expr.id))
                return
            if key in self.defs:
                out.local.append(self.defs[key])
                return
            if key in self.assigned:
                self._assigned(key, out, names, seen, depth)
                return
        name = self.values.qualify(expr.id)
        if name:
            names.append(name)

    def _iterated(self, expr: ast.Name) -> ast.expr | None:
        """What the comprehension around ``expr`` iterates, when ``expr`` is its target."""
        for parent, _ in self.tree.ancestors(expr):
            if isinstance(parent, (*FUNCTION_NODES, ast.stmt)):
                return None
            if isinstance(parent, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                for generator in parent.generators:
                    target = generator.target
                    if isinstance(target, ast.Name) and target.id == expr.id:
                        return generator.iter
        return None

    def _assigned(
        self,
        key: tuple[ast.AST, str],
        out: Handed,
        names: list[str],
        seen: set[tuple[ast.AST, str]],
        depth: int,
    ) -> None:
        if key not in seen:
            seen.add(key)
            for value in self.assigned[key]:
                self._walk(value, value, out, names, seen, depth + 1)

    def _parameter(self, scope: ast.AST, param: str) -> list[str]:
        """What the callers of a module-level function or a method pass its parameter
        (``def build(llm, tools): return create_react_agent(llm, tools)``): an ``arg:`` ref."""
        owner = self.tree.parent(scope)
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not (
            owner is self.tree.module or isinstance(owner, ast.ClassDef)
        ):
            return []
        parts = [owner.name] if isinstance(owner, ast.ClassDef) else []
        if not parts or scope.name != "__init__":  # a constructor's: the class's
            parts.append(scope.name)
        return [f"arg:{param}:" + ".".join(p for p in (self.values.module, *parts) if p)]

    def _attribute(
        self,
        expr: ast.Attribute,
        at: ast.AST,
        out: Handed,
        names: list[str],
        seen: set[tuple[ast.AST, str]],
        depth: int,
    ) -> None:
        if _on_self(expr):
            cls = self.tree.class_of(at)
            if cls is None:
                return
            key = (cls, expr.attr)
            if key in self.assigned:
                # an attribute the class's methods set: what they store there
                self._assigned(key, out, names, seen, depth)
                return
            names.append(f"self:{self.values.local_name(cls.name)}.{expr.attr}")
            return
        name = self.values.qualify(dotted(expr))
        if name:
            names.append(name)


def _on_self(expr: ast.expr) -> bool:
    """``self.name``."""
    return (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == "self"
    )


def _hook_registrars(tree: Tree, values: Values) -> set[tuple[ast.AST, str]]:
    """``(hook function, parameter)``: the registering callable a tool hook is given."""
    found: set[tuple[ast.AST, str]] = set()
    defs: list[Def] = [*tree.nodes(ast.FunctionDef), *tree.nodes(ast.AsyncFunctionDef)]
    for func in defs:
        for decorator in func.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            hook = TOOL_HOOKS.get(values.qualify(dotted(target)) or "")
            if hook == func.name and func.args.args:
                found.add((func, func.args.args[0].arg))
    return found


def hand_over(tree: Tree, values: Values) -> Handed:
    """Everything the module hands to a model as tools (see the module docstring)."""
    out = Handed()
    resolver: _Resolver | None = None
    registrars = _hook_registrars(tree, values)
    for call in tree.nodes(ast.Call):
        arguments = tool_arguments(call, values)
        func = call.func
        registers = isinstance(func, ast.Name) and (tree.function_of(call), func.id)
        if registers and call.args and registers in registrars:
            arguments.append(call.args[0])
        if not arguments:
            continue
        resolver = resolver or _Resolver(tree, values)
        gated = values.has_gate(call) or _is_gate(call, values)
        names = out.gated if gated else out.names
        for argument in arguments:
            resolver.elements(argument, call, out, names)
    out.names = sorted(set(out.names))
    out.gated = sorted(set(out.gated))
    return out


def tool_names(call: ast.Call, tree: Tree, values: Values) -> list[str]:
    """Qualified names (and ``self:`` refs) of what ``call`` hands over as tools."""
    out = Handed()
    resolver = _Resolver(tree, values)
    for argument in tool_arguments(call, values):
        resolver.elements(argument, call, out, out.names)
    return sorted(set(out.names))

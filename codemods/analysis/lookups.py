"""Dispatch through tables the analysis cannot list: a callee looked up by a name the model
chose, then called with the tool call's input.

``self.tool_map.get(name)`` ... ``await tool(**tool_input)``, ``get_function(name)(**args)``,
``getattr(self, name)(**arguments)``, ``handler = get_handler(name)`` ...
``handler.run_tool(arguments)``, ``entry = tools[name]`` ... ``entry["callable"](**args)``, and
an executor handed the looked-up tool and the input (``execute(tools[name], call["args"])``):
the functions behind them are not known here (built by a comprehension, loaded from a folder),
so the site is reported without a fix. When the looked-up value has a known type
(``get_handler`` returns ``ToolHandler``), the method called on it names the tools: the
project index finds its implementations (``Dispatch.runs``).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Collection, Iterator
from functools import lru_cache

from .chosen import affixes, local_function, may_choose, model_chosen, takes_tool_input
from .fields import entries, sources
from .guards import Guards
from .project import TOOL_METHODS
from .registrations import registrars
from .summary import call_ref, name_ref, qualified
from .tools import Dispatch
from .tree import Tree, dotted, scope_nodes
from .values import CLASS

__all__ = ["chosen_lookup", "dynamic_dispatch", "lookup_runs", "remote_dispatch", "table_ref"]

Chosen = Collection[tuple[ast.AST, str]]
_RUNNERS = frozenset({*TOOL_METHODS, "ainvoke"})
_BUILTINS = frozenset(dir(builtins)) - {"getattr"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_PARTIALS = frozenset({"partial", "functools.partial"})


def chosen_lookup(expr: ast.expr, tree: Tree, chosen: Chosen, strict: bool = False) -> bool:
    """``T[name]``, ``T.get(name[, default])``, ``getattr(x, name)``, ``get_tool(name)``,
    ``find(module, name)`` with a model-chosen name (a call that takes the name first and more
    after it builds something from it, it does not look it up); ``strict``: only subscripts
    and ``.get``."""
    if isinstance(expr, ast.Await):
        expr = expr.value
    if isinstance(expr, ast.Subscript):
        return model_chosen(expr.slice, tree, chosen)
    if not strict and isinstance(expr, ast.Call) and _selecting_helper(expr, tree, chosen):
        return True
    if not isinstance(expr, ast.Call) or not expr.args or expr.keywords:
        return False
    func = expr.func
    if strict and not (isinstance(func, ast.Attribute) and func.attr == "get"):
        return False
    if isinstance(func, ast.Name) and func.id == "getattr":
        return len(expr.args) >= 2 and model_chosen(expr.args[1], tree, chosen)
    if isinstance(func, ast.Attribute) and func.attr == "get" and len(expr.args) <= 2:
        return model_chosen(expr.args[0], tree, chosen)
    if _builds(func):
        return False
    # ``get_tool(name)``, ``find_in(module, name)``: the key comes last, as in ``getattr``
    return model_chosen(expr.args[-1], tree, chosen)


def _selecting_helper(call: ast.Call, tree: Tree, chosen: Chosen) -> bool:
    """``self.get_tool(name=request["tool"], args=...)``: a function of the module given the
    chosen name, by position or keyword, that selects with it (a table key, ``getattr``, a
    module imported by it, the element of a collection a test on it picks)."""
    if not call.keywords:
        return False  # by position: the key comes last, as in ``getattr`` (below)
    positions = [i for i, a in enumerate(call.args) if model_chosen(a, tree, chosen)]
    keywords = [k.arg for k in call.keywords if k.arg and model_chosen(k.value, tree, chosen)]
    if not (positions or keywords):
        return False
    func = local_function(call.func, tree, call)
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    params = params[1:] if isinstance(call.func, ast.Attribute) else params
    names = {params[i] for i in positions if i < len(params)} | {k for k in keywords if k}
    return bool(names) and _selects(func, names)


#: calls that load code by a name (``importlib.import_module(f"tools.{name}")``)
_LOADERS = frozenset({"import_module", "__import__", "importlib.import_module"})


def _selects(func: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]) -> bool:
    """Whether ``func`` picks something with one of ``params`` (or a value made from it)."""
    names = set(params)
    nodes = list(scope_nodes(func.body))
    for _ in range(3):  # what is made from the name: ``path = f"tools/{name}.py"``
        size = len(names)
        for node in nodes:
            if isinstance(node, ast.Assign) and _uses(node.value, names):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        if len(names) == size:
            break
    for node in nodes:
        if isinstance(node, ast.Subscript) and _uses(node.slice, names):
            return True
        if isinstance(node, ast.Call) and node.args:
            callee = dotted(node.func) or ""
            last = callee.rpartition(".")[2]
            picks = node.args[1] if last == "getattr" and len(node.args) > 1 else node.args[0]
            if last in {"get", "getattr"} | _LOADERS and _uses(picks, names):
                return True
        if (
            isinstance(node, ast.If)
            and _uses(node.test, names)
            and any(isinstance(s, ast.Return) for s in node.body)
        ):
            return True  # ``for t in tools: if t.name == name: return t``
    return False


def _builds(func: ast.expr) -> bool:
    """A constructor (``Path(name)``, ``Template(name)``) or a builtin (``open(name)``,
    ``str(name)``): it makes a value from the name, it does not look a callable up."""
    name = (dotted(func) or "").rpartition(".")[2]
    return name[:1].isupper() or (isinstance(func, ast.Name) and name in _BUILTINS)


def _base(expr: ast.expr) -> ast.expr:
    """What a callee is reached from: ``tool.run`` -> ``tool``, ``entry["fn"]`` -> ``entry``
    (one method deep: ``command.template.format`` formats a field, it runs nothing)."""
    while isinstance(expr, ast.Await) or (
        isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant)
    ):
        expr = expr.value
    return expr.value if isinstance(expr, ast.Attribute) else expr


def _aliases(
    tree: Tree, chosen: Chosen, strict: bool = False
) -> dict[tuple[ast.AST, str], ast.expr]:
    """Variables holding a looked-up tool: ``(function, name) -> the lookup``, through chains of
    assignments (``found = registry.get(name)``; ``function = found``)."""
    aliases: dict[tuple[ast.AST, str], ast.expr] = {}
    assigns: list[ast.Assign | ast.AnnAssign] = [
        *tree.nodes(ast.Assign),
        *tree.nodes(ast.AnnAssign),
    ]
    for _ in range(3):
        size = len(aliases)
        for assign in assigns:
            target = assign.targets[0] if isinstance(assign, ast.Assign) else assign.target
            if not isinstance(target, ast.Name) or assign.value is None:
                continue
            key = (tree.function_of(assign), target.id)
            lookup = _lookup_of(assign.value, tree, chosen, aliases, strict)
            if lookup is not None and key not in aliases:
                aliases[key] = lookup
        if len(aliases) == size:
            break
    return aliases


def _lookup_of(
    expr: ast.expr,
    tree: Tree,
    chosen: Chosen,
    aliases: dict[tuple[ast.AST, str], ast.expr],
    strict: bool = False,
) -> ast.expr | None:
    if chosen_lookup(expr, tree, chosen, strict):
        return expr
    if isinstance(expr, ast.IfExp):  # ``getattr(self, name) if name in tools else None``
        return next(
            (
                found
                for side in (expr.body, expr.orelse)
                if (found := _lookup_of(side, tree, chosen, aliases, strict)) is not None
            ),
            None,
        )
    base = _base(expr)
    if base is not expr and chosen_lookup(base, tree, chosen, strict):
        return base
    if isinstance(base, ast.Name):
        return aliases.get((tree.function_of(base), base.id))
    return None


def _matched_element(
    call: ast.Call, tree: Tree, chosen: Chosen, picks: dict[tuple[ast.AST, str], ast.expr]
) -> ast.expr | None:
    """``for tool in tools: if tool.name == name: tool.run(...)``, or a ``tool`` picked by
    ``next(...)`` (``picks``) then ``tool.run(...)``: the element whose name equals the
    model's choice is run, a lookup (the comparison is returned)."""
    func = call.func
    target = func.value if isinstance(func, ast.Attribute) else func
    if not isinstance(target, ast.Name):
        return None
    scope = tree.function_of(call)
    for parent, child in tree.ancestors(call):
        if parent is scope:
            break
        if isinstance(parent, ast.If) and any(child is s for s in parent.body):
            test = _names_element(parent.test, target.id, tree, chosen)
            if test is not None:
                return test
    return picks.get((scope, target.id))


def _next_picks(tree: Tree, chosen: Chosen) -> dict[tuple[ast.AST, str], ast.expr]:
    """``tool = next(t for t in tools if t.name == name)``: ``(function, "tool")`` -> the
    comparison that picks it."""
    found: dict[tuple[ast.AST, str], ast.expr] = {}
    for assign in tree.assignments():
        value = assign.value
        if not (
            isinstance(value, ast.Call)
            and dotted(value.func) == "next"
            and value.args
            and isinstance(pick := value.args[0], ast.GeneratorExp)
            and isinstance(elt := pick.elt, ast.Name)
        ):
            continue
        element = elt.id
        test = next(
            (
                m
                for g in pick.generators
                for t in g.ifs
                if (m := _names_element(t, element, tree, chosen)) is not None
            ),
            None,
        )
        for name in (t for t in assign.targets if isinstance(t, ast.Name)):
            if test is not None:
                found[(tree.function_of(assign), name.id)] = test
    return found


def _names_element(test: ast.expr, element: str, tree: Tree, chosen: Chosen) -> ast.expr | None:
    """``element.name == chosen`` (or the other way round, or ``element["name"]``)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    if not isinstance(test.ops[0], ast.Eq):
        return None
    for side, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        field = side.value if isinstance(side, (ast.Attribute, ast.Subscript)) else None
        if (
            isinstance(field, ast.Name)
            and field.id == element
            and model_chosen(other, tree, chosen)
        ):
            return test
    return None


def _handed_lookup(call: ast.Call, tree: Tree, chosen: Chosen) -> ast.expr | None:
    """``execute(tools[name], call["args"])``: an executor given the looked-up tool."""
    for arg in call.args:
        if chosen_lookup(arg, tree, chosen) and isinstance(arg, ast.Subscript):
            return arg
    return None


def _gated_literal(lookup: ast.expr, guards: Guards) -> bool:
    """``{"add": add, "search": search}[name]``: a table written where it is used, every entry
    a function of the module that a guard wraps (each requests itself)."""
    table: ast.expr | None = None
    if isinstance(lookup, ast.Subscript):
        table = lookup.value
    elif isinstance(lookup, ast.Call) and isinstance(lookup.func, ast.Attribute):
        table = lookup.func.value
    if not isinstance(table, ast.Dict) or not table.values:
        return False
    functions = guards.values.functions
    entries = [functions.get(v.id) if isinstance(v, ast.Name) else None for v in table.values]
    return all(f is not None and guards.function_gated(f) for f in entries)


def table_ref(lookup: ast.expr, guards: Guards) -> tuple[str, ...]:
    """``HANDLERS.get(name)`` with ``HANDLERS`` a module-level table, here or imported: its
    qualified name (the project index lists its entries: functions, lambdas' callees,
    partials' functions)."""
    return _module_table(_table_of(lookup), guards)


def _module_table(table: ast.expr | None, guards: Guards) -> tuple[str, ...]:
    return _qualified_table(table, guards) if isinstance(table, ast.Name) else ()


def _table_of(lookup: ast.expr) -> ast.expr | None:
    """What ``TABLE[name]`` or ``TABLE.get(name)`` (awaited or not) looks its callee up in."""
    lookup = lookup.value if isinstance(lookup, ast.Await) else lookup
    if isinstance(lookup, ast.Subscript):
        return lookup.value
    if isinstance(lookup, ast.Call) and isinstance(lookup.func, ast.Attribute):
        return lookup.func.value if lookup.func.attr == "get" else None
    return None


def _qualified_table(table: ast.Name, guards: Guards) -> tuple[str, ...]:
    name = guards.values.qualify(table.id)
    if name is None and table.id in _module_names(guards.tree):
        name = qualified(guards.values.module, table.id)
    return (name,) if name else ()


def attribute_tables(lookup: ast.expr, guards: Guards) -> tuple[str, ...]:
    """``self.table[name]``, ``self.tools.get(name)`` where the class fills ``self.table``
    with a literal of its bound methods, functions or instances (``self:`` refs and qualified
    names), or from what it is built with: ``arg:<parameter>:<class>`` refs (the project index
    lists the elements callers pass there)."""
    return _attribute_table(_table_of(lookup), lookup, guards)


def _attribute_table(table: ast.expr | None, at: ast.AST, guards: Guards) -> tuple[str, ...]:
    if not (isinstance(table, ast.Attribute) and isinstance(table.value, ast.Name)):
        return ()
    if table.value.id in {"self", "cls"}:
        cls = guards.tree.class_of(at)
    else:  # ``Runner._handlers[kind]``: a table of a class of the module
        cls = next(
            (
                c
                for c in guards.tree.module.body
                if isinstance(c, ast.ClassDef) and c.name == table.value.id
            ),
            None,
        )
    if cls is None:
        return ()
    owner = qualified(guards.values.module, cls.name)
    found = [f"arg:{p}:{owner}" for p in sorted(sources(cls, table.attr))]
    collection = f"{owner}.{table.attr}"
    if any(collection in filled for filled in registrars(guards.tree, guards.values).values()):
        found.append(collection)  # what a registering method of the class stores there
    for entry in entries(cls, table.attr):
        found += _entry_refs(entry, cls, guards)
    return tuple(found)


def local_tables(lookup: ast.expr, guards: Guards) -> tuple[str, ...]:
    """``handlers[name]`` with ``handlers = {"plan": self._plan, "note": lambda **kw:
    write_note(self, **kw)}`` a literal of the function that looks it up: its entries (bound
    methods, functions, what a lambda or a ``partial`` calls)."""
    table = _table_of(lookup)
    tree = guards.tree
    if not isinstance(table, ast.Name):
        return ()
    scope = tree.function_of(lookup)
    if scope is tree.module:
        return ()
    cls = tree.class_of(lookup)
    found: list[str] = []
    for assign in tree.assignments():
        if not (isinstance(assign.value, ast.Dict) and tree.function_of(assign) is scope):
            continue
        if not any(isinstance(t, ast.Name) and t.id == table.id for t in assign.targets):
            continue
        for entry in assign.value.values:
            found += _entry_refs(_called_by(entry), cls, guards)
    return tuple(found)


def _called_by(entry: ast.expr) -> ast.expr:
    """What a table entry runs: itself, the callee of a lambda's body, a partial's function."""
    if isinstance(entry, ast.Lambda) and isinstance(entry.body, ast.Call):
        return entry.body.func
    if isinstance(entry, ast.Call) and dotted(entry.func) in _PARTIALS and entry.args:
        return entry.args[0]
    return entry


def _entry_refs(entry: ast.expr, cls: ast.ClassDef | None, guards: Guards) -> list[str]:
    """What a table entry written in a method of ``cls`` (or a function) runs: a bound method
    of the class, a method of an object the class holds (``self.pad.write``), a function here
    or imported, an instance built there."""
    if isinstance(entry, ast.Attribute) and cls is not None:
        owner = qualified(guards.values.module, cls.name)
        if dotted(entry.value) == "self":
            return [f"self:{owner}.{entry.attr}"]
        holder = entry.value
        if isinstance(holder, ast.Attribute) and dotted(holder.value) == "self":
            held = guards.values.attr_of(cls, holder.attr)
            if held and held.startswith(CLASS):
                return [f"type:{held[len(CLASS) :]}.{entry.attr}"]
        return []
    if isinstance(entry, ast.Name):
        return list(_qualified_table(entry, guards))
    if isinstance(entry, ast.Call):
        return list(_constructed(entry, guards))
    return []


def getter_tables(lookup: ast.expr, guards: Guards) -> tuple[str, ...]:
    """``self.get_capability(name)``, ``find_tool(name)``: a function of the module that
    returns an entry of a table by its parameter (``return self._capabilities.get(name)``) or
    the element of a collection a test on its parameter picks (``for tool in TOOLS: if
    tool.name == name: return tool``) returns what that table holds: its entries run."""
    lookup = lookup.value if isinstance(lookup, ast.Await) else lookup
    if not isinstance(lookup, ast.Call):
        return ()
    callee = guards.values.callee(lookup, lookup)
    if callee is None:
        return ()
    func = callee[0]
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    found: list[str] = []
    for node in scope_nodes(func.body):
        if not (isinstance(node, ast.Return) and node.value is not None):
            continue
        table = _returned_table(node, params, guards.tree)
        if table is not None:
            found += _module_table(table, guards) + _attribute_table(table, node, guards)
    return tuple(found)


def _returned_table(node: ast.Return, params: set[str], tree: Tree) -> ast.expr | None:
    """The table a ``return`` reads its value from by one of ``params``."""
    value = node.value
    if isinstance(value, ast.Subscript):
        return value.value if _uses(value.slice, params) else None
    if isinstance(value, ast.Call) and _table_of(value) is not None and value.args:
        return _table_of(value) if _uses(value.args[0], params) else None
    if not isinstance(value, ast.Name):
        return None
    tested = False  # the element returned from a loop over the table, when a test picks it
    for parent, _ in tree.ancestors(node):
        if isinstance(parent, _SCOPES):
            return None
        tested = tested or (isinstance(parent, ast.If) and _uses(parent.test, params))
        if isinstance(parent, (ast.For, ast.AsyncFor)):
            target = parent.target
            picked = tested and isinstance(target, ast.Name) and target.id == value.id
            return parent.iter if picked else None
    return None


def _uses(expr: ast.expr, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))


def _constructed(entry: ast.Call, guards: Guards) -> list[str]:
    """``RunCommand()`` in a table: the class, here or imported, whose instance is run (the
    project index expands a class to the methods a tool object runs through)."""
    name = dotted(entry.func) or ""
    if not name.rpartition(".")[2][:1].isupper():
        return []
    values = guards.values
    found = values.qualify(name)
    if found is None and name in values.classes:
        found = qualified(values.module, name)
    return [found] if found else []


def checked_tables(lookup: ast.expr, guards: Guards) -> tuple[str, ...]:
    """``getattr(self, name) if name in TOOLS else None``, ``if name in TOOLS: getattr(...)``:
    a lookup by attribute that runs only names of a table (filled by a registering decorator,
    say) runs that table's entries."""
    lookup = lookup.value if isinstance(lookup, ast.Await) else lookup
    if not (isinstance(lookup, ast.Call) and dotted(lookup.func) == "getattr"):
        return ()
    found: list[str] = []
    for parent, child in guards.tree.ancestors(lookup):
        if isinstance(parent, _SCOPES):
            break
        inside = isinstance(parent, ast.IfExp) and child is parent.body
        inside = inside or (isinstance(parent, ast.If) and child in parent.body)
        if not isinstance(parent, (ast.IfExp, ast.If)) or not inside:
            continue
        for compare in ast.walk(parent.test):
            if not isinstance(compare, ast.Compare) or not isinstance(compare.ops[0], ast.In):
                continue
            table = compare.comparators[0]
            if isinstance(table, ast.Name):
                found += _qualified_table(table, guards)
    return tuple(found)


def affixed_methods(lookup: ast.expr, guards: Guards) -> tuple[str, ...]:
    """``getattr(self, f"tool_{name}")``: the methods of the class whose names the spelling
    can make (``tool_list_dir``, ``tool_delete``), as ``self:`` refs (overrides included)."""
    lookup = lookup.value if isinstance(lookup, ast.Await) else lookup
    if not (isinstance(lookup, ast.Call) and dotted(lookup.func) == "getattr"):
        return ()
    owner, key = lookup.args[0], lookup.args[1]
    spelled = affixes(key)
    cls = guards.tree.class_of(lookup)
    if spelled is None or cls is None or dotted(owner) not in {"self", "cls"}:
        return ()
    prefix, _, suffix = spelled
    if not (prefix or suffix):
        return ()
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    names = [
        d.name
        for d in cls.body
        if isinstance(d, defs)
        and d.name.startswith(prefix)
        and d.name.endswith(suffix)
        and len(d.name) > len(prefix) + len(suffix)
    ]
    return tuple(f"self:{qualified(guards.values.module, cls.name)}.{n}" for n in names)


def instance_methods(lookup: ast.expr, guards: Guards) -> tuple[str, ...]:
    """``getattr(toolbox, name)`` with ``toolbox`` an instance of a project class (not the
    dispatcher's own ``self``), the class itself, or a module of the project: any public
    method of that class (function of that module), a ``public:`` ref the project index
    expands."""
    lookup = lookup.value if isinstance(lookup, ast.Await) else lookup
    if not (isinstance(lookup, ast.Call) and dotted(lookup.func) == "getattr"):
        return ()
    owner = lookup.args[0]
    if dotted(owner) in {"self", "cls"}:
        return ()
    kind = guards.values.kind(owner, lookup)
    if kind is None and isinstance(owner, ast.Name):
        # ``getattr(Tools, name)``: a project class itself, its static and class methods
        kind = guards.values.qualname_kind(guards.values.qualify(owner.id))
        if kind is None and owner.id in guards.imports.relative:
            # ``from . import actions``, ``getattr(actions, name)``: the module's functions
            kind = f"{CLASS}{guards.imports.resolve(owner.id)}"
    return (f"public:{kind[len(CLASS) :]}",) if kind and kind.startswith(CLASS) else ()


@lru_cache(maxsize=1)
def _module_names(tree: Tree) -> frozenset[str]:
    """Names assigned at module level."""
    return frozenset(
        t.id
        for node in tree.module.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    )


def _element_ref(call: ast.Call, lookup: ast.expr, guards: Guards) -> str | None:
    """``tools[name].execute(...)``, ``tool = self._tools.get(name)`` ... ``tool.run(...)``
    where the table's annotation names a project class (``dict[str, Tool]``): the method
    called on one element of the table, as a ``type:`` ref."""
    func = call.func.value if isinstance(call.func, ast.Await) else call.func
    lookup = lookup.value if isinstance(lookup, ast.Await) else lookup
    if not isinstance(func, ast.Attribute):
        return None
    table: ast.expr | None = None
    if isinstance(lookup, ast.Subscript):
        table = lookup.value
    elif isinstance(lookup, ast.Call) and isinstance(lookup.func, ast.Attribute):
        table = lookup.func.value if lookup.func.attr == "get" else None
    kind = guards.values.kind(table, call) if table is not None else None
    if kind is None or not kind.startswith(CLASS):
        return None
    return f"type:{kind[len(CLASS) :]}.{func.attr}"


def _runs(call: ast.Call) -> bool:
    """A direct call, or a method through which frameworks run a tool or an agent."""
    func = call.func.value if isinstance(call.func, ast.Await) else call.func
    return not isinstance(func, ast.Attribute) or func.attr in _RUNNERS


def dynamic_dispatch(guards: Guards, known: set[int]) -> Iterator[Dispatch]:
    """Dispatch sites through unknown tables, one per lookup (``known``: ids of calls already
    reported)."""
    tree, chosen, params = guards.tree, guards.chosen, guards.tool_params
    # what selects a callee: the names known here and those the flow followed; only ``chosen``
    # (an MCP handler's name) also counts as the tool's input
    names = chosen | guards.named
    named = bool(names) or may_choose(tree)
    if not (named or params):
        return
    aliases = _aliases(tree, names) if named else {}
    picks = _next_picks(tree, names) if named else {}
    # a tool's own parameters: a table entry picked by one and run (a sub-agent by the name the
    # model wrote), not data read by one (``files[path]``, ``client.get_collection(name)``)
    picked = _aliases(tree, params, strict=True) if params else {}
    sites: dict[int, tuple[ast.expr, list[ast.Call]]] = {}  # by lookup, in the source's order
    for call in sorted(tree.nodes(ast.Call), key=lambda c: (c.lineno, c.col_offset)):
        if id(call) in known:
            continue
        # the lookup first: most calls are none, and the input test walks the arguments
        lookup = None
        if named:
            lookup = _lookup_of(call.func, tree, names, aliases)
            lookup = lookup or _handed_lookup(call, tree, names)
            lookup = lookup or _matched_element(call, tree, names, picks)
        if lookup is not None and not takes_tool_input(call, tree, chosen | guards.inputs):
            lookup = None
        if lookup is None and params and _runs(call):
            lookup = _lookup_of(call.func, tree, params, picked, strict=True)
            if lookup is not None and not takes_tool_input(call, tree, params):
                lookup = None
        if lookup is None or _gated_literal(lookup, guards):
            continue
        if id(lookup) not in sites:
            sites[id(lookup)] = (lookup, [])
        sites[id(lookup)][1].append(call)
    for lookup, calls in sites.values():
        # the call that runs the tool, not one that describes it (``tool.one_liner(params)``
        # printed before ``tool.invoke(params)``): a direct call or a running method, if any
        call = next((c for c in calls if _runs(c)), calls[0])
        yield Dispatch(
            node=call,
            symbol=ast.unparse(lookup.value if isinstance(lookup, ast.Await) else lookup),
            guarded=guards.request_before(call),
            fixable=False,
            runs=lookup_runs(call, lookup, guards),
        )


def lookup_runs(call: ast.Call, lookup: ast.expr, guards: Guards) -> tuple[str, ...]:
    """What a call of a looked-up callee can run: the method called on the element (by its
    type, or by its name when the type is unknown), and every entry of the table it is looked
    up in, however that table is known (a literal, checked names, attributes, affixed methods,
    the public methods of an instance)."""
    ref = call_ref(call, guards.values) if isinstance(call.func, ast.Attribute) else None
    ref = ref if ref and ref.startswith("type:") else _element_ref(call, lookup, guards)
    if ref is None and isinstance(call.func, ast.Attribute):
        # an element of unknown kind: the index resolves the method by its name
        ref = name_ref(call, guards.values)
    return (
        ((ref,) if ref else ())
        + table_ref(lookup, guards)
        + checked_tables(lookup, guards)
        + attribute_tables(lookup, guards)
        + affixed_methods(lookup, guards)
        + instance_methods(lookup, guards)
        + getter_tables(lookup, guards)
        + local_tables(lookup, guards)
    )


#: a method that runs a tool (``call_tool``, ``acall_tool``, ``run_tool``, ``executeTool``),
#: not a record of one (``ToolCall(...)``, ``tool_result(...)``)
_RUNS_TOOL = re.compile(r"^_*a?(call|run|execute|invoke|use)_?tool$", re.IGNORECASE)
#: keywords that name the tool a call runs (``session.call_tool(name=...)``)
_TOOL_NAME_KEYWORDS = frozenset({"name", "tool_name", "tool", "tool_id"})


def remote_dispatch(guards: Guards, known: set[int]) -> Iterator[Dispatch]:
    """``await session.call_tool(block.name, block.input)``: a library's tool-running method
    (``call_tool``, ``run_tool``, ``execute_tool``...) handed the name of the tool the model
    chose runs that tool where guardkit cannot decorate it (an MCP server's, a toolkit's), a
    dispatch. A method of a project object is followed where it is defined instead."""
    tree, values = guards.tree, guards.values
    names = guards.chosen | guards.named
    if not (names or may_choose(tree)):
        return
    for call in tree.nodes(ast.Call):
        func = call.func
        if not (isinstance(func, ast.Attribute) and _RUNS_TOOL.match(func.attr)):
            continue
        given = call.args[:1] or [k.value for k in call.keywords if k.arg in _TOOL_NAME_KEYWORDS]
        if id(call) in known or not given or not model_chosen(given[0], tree, names):
            continue
        receiver = func.value
        own = dotted(receiver) in {"self", "cls"} or (
            isinstance(receiver, ast.Call) and dotted(receiver.func) == "super"
        )
        if own or (values.qualify(dotted(func)) or "").startswith("guardkit."):
            continue
        kind = values.kind(func.value, call)
        if kind is not None and kind.startswith(CLASS):
            continue  # a project object: its method's own lookup is the dispatch
        yield Dispatch(
            node=call,
            symbol=ast.unparse(func),
            guarded=guards.request_before(call),
            fixable=False,
        )

"""Find model-driven tool dispatch: name->function tables and ``if name == "tool":`` chains.

A dispatch site is guarded when a guard request precedes it in the same function. The functions it
reaches are tools; they count as gated when wrapped by a guard, or when every dispatch site that
reaches them is guarded.
"""

from __future__ import annotations

import ast
from collections import defaultdict

from .chosen import is_tool_input, model_chosen, takes_tool_input
from .guards import Guards
from .project import TOOL_METHODS
from .pure import acts
from .tools import Dispatch, ToolSite
from .tree import Tree, dotted

__all__ = ["find_dispatch"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
#: a table named for tools is dispatch even in a module that never calls a model itself
_TABLE_WORDS = ("tool", "function")
#: a dispatch call, the functions it may run, a label, and the tool names a guard request may use
Route = tuple[ast.Call, list[ast.Name], str, frozenset[str]]


def _tables(
    assignments: list[ast.Assign], key_sets: dict[str, set[str]]
) -> dict[str, list[ast.Name]]:
    """``{"search": search, ...}`` literals bound to a name: table name -> its function names
    (and, into ``key_sets``, table name -> the tool names it maps)."""
    tables: dict[str, list[ast.Name]] = {}
    for node in assignments:
        if not isinstance(node.value, ast.Dict):
            continue
        keys, vals = node.value.keys, node.value.values
        if not vals or not all(
            isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys
        ):
            continue
        if not all(isinstance(v, ast.Name) for v in vals):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                tables[target.id] = [v for v in vals if isinstance(v, ast.Name)]
                key_sets[target.id] = {str(k.value) for k in keys_of(node.value)}
    for node in assignments:  # entries added later: ``tools["fetch"] = fetch_page``
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Subscript) and isinstance(value, ast.Name)):
            continue
        table, key = dotted(target.value), target.slice
        if table in tables and isinstance(key, ast.Constant) and isinstance(key.value, str):
            tables[table].append(value)
            key_sets[table].add(key.value)
    return tables


def keys_of(table: ast.Dict) -> list[ast.Constant]:
    return [k for k in table.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def _table_of(expr: ast.expr, tables: dict[str, list[ast.Name]], tree: Tree) -> str | None:
    """The table indexed by ``T[name]`` or ``T.get(name)`` with a model-chosen name."""
    if isinstance(expr, ast.Subscript):
        name, key = dotted(expr.value), expr.slice
    elif (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and expr.args
    ):
        name, key = dotted(expr.func.value), expr.args[0]
    else:
        return None
    return name if name in tables and model_chosen(key, tree) else None


def _table_sites(guards: Guards, tables: dict[str, list[ast.Name]]) -> dict[str, list[ast.Call]]:
    sites: dict[str, list[ast.Call]] = defaultdict(list)
    aliases: dict[tuple[ast.AST, str], str] = {}
    bindings: list[ast.Assign | ast.NamedExpr] = [
        *guards.tree.nodes(ast.Assign),
        *guards.tree.nodes(ast.NamedExpr),  # ``if fn := TOOLS.get(call.function.name):``
    ]
    for assign in bindings:
        target = assign.targets[0] if isinstance(assign, ast.Assign) else assign.target
        if isinstance(assign, ast.Assign) and len(assign.targets) != 1:
            continue
        table = _table_of(assign.value, tables, guards.tree)
        if table and isinstance(target, ast.Name):
            aliases[(guards.tree.function_of(assign), target.id)] = table
    for node in guards.tree.nodes(ast.Call):
        table = _table_of(node.func, tables, guards.tree)
        if table is None and isinstance(node.func, ast.Name):
            table = aliases.get((guards.tree.function_of(node), node.func.id))
        if table:
            sites[table].append(node)
    return sites


def _chosen_branches(guards: Guards) -> list[tuple[ast.stmt, list[ast.stmt], str]]:
    """``(head, body, "x")`` of each ``if <tool name> == "x":`` branch and ``case "x":`` of a
    ``match <tool name>:`` (``head``: the ``if`` or the ``match``)."""
    found: list[tuple[ast.stmt, list[ast.stmt], str]] = []
    tree = guards.tree
    chosen = guards.chosen | guards.named
    for node in tree.nodes(ast.If):
        test = node.test
        if not (isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Eq)):
            continue
        right = test.comparators[0]
        if model_chosen(test.left, tree, chosen) and isinstance(right, ast.Constant):
            found.append((node, node.body, str(right.value)))
    for match in tree.nodes(ast.Match):
        if not model_chosen(match.subject, tree, chosen):
            continue
        for case in match.cases:
            pattern = case.pattern
            if isinstance(pattern, ast.MatchValue) and isinstance(pattern.value, ast.Constant):
                found.append((match, case.body, str(pattern.value.value)))
    return found


def _branch_calls(
    guards: Guards, builders: frozenset[str]
) -> list[tuple[ast.Call, ast.Name | None, str, ast.stmt]]:
    """The first call of a local or imported function handed the tool input in each branch on
    the tool name, with the name it runs for (``None`` when the branch is the tool itself)
    and the branch's test."""
    found: list[tuple[ast.Call, ast.Name | None, str, ast.stmt]] = []
    known = guards.values.functions.keys() | guards.imports.names.keys()
    for head, body, label in _chosen_branches(guards):
        # the first call of a known function handed the tool input, also inside another
        # (``out.append(search(**block.input))``) or after checks of the input
        for call in (c for stmt in body for c in ast.walk(stmt) if isinstance(c, ast.Call)):
            func = call.func
            known_call = isinstance(func, ast.Name) and func.id in known
            if known_call and isinstance(func, ast.Name) and takes_tool_input(call, guards.tree):
                inline = guards.values.qualify(func.id) in builders and _acts(body, guards)
                found.append((call, None if inline else func, label, head))
                break
    return found


def _acts(body: list[ast.stmt], guards: Guards) -> bool:
    """A branch that does the work itself: a library call in it acts on the tool input or
    on a variable the branch made from it (``pattern = escape(args["q"])`` then
    ``subprocess.run(["rg", pattern])``)."""
    tree = guards.tree
    made: set[tuple[ast.AST, str]] = set()
    for stmt in (n for s in body for n in ast.walk(s) if isinstance(n, ast.Assign)):
        if is_tool_input(stmt.value, tree, made):
            made |= {(tree.function_of(t), t.id) for t in stmt.targets if isinstance(t, ast.Name)}
    calls = (c for s in body for c in ast.walk(s) if isinstance(c, ast.Call))
    return any(
        not isinstance(c.func, ast.Name)
        and acts(c, guards.imports)
        and takes_tool_input(c, tree, made)
        for c in calls
    )


def _inline(guards: Guards, call: ast.Call, label: str, head: ast.stmt) -> Dispatch:
    """The dispatch of a chain whose branch does the work itself: reported at the branch."""
    if isinstance(head, ast.If) and isinstance(head.test, ast.Compare):
        symbol = f"if {ast.unparse(head.test.left)} == ..."
    else:
        symbol = f"match {ast.unparse(head.subject)}" if isinstance(head, ast.Match) else "if"
    guarded = guards.request_before(call, frozenset({label}))
    return Dispatch(node=head, symbol=symbol, guarded=guarded, fixable=False)


def find_dispatch(
    guards: Guards, agentic: bool, builders: frozenset[str] = frozenset()
) -> tuple[list[ToolSite], list[Dispatch], list[ast.Call]]:
    """Tools reached through tables and branches, the unguarded dispatch sites that reach them,
    and the dispatch calls that reach a guarded tool (which raises when denied). A function
    that only builds a value (``builders``) called in a branch that does the work itself is
    no tool: the branch is, and its chain the dispatch."""
    keys: dict[str, set[str]] = {}
    tables = _tables(guards.tree.nodes(ast.Assign), keys)
    sites = _table_sites(guards, tables)
    routes: list[Route] = []
    for table, calls in sites.items():
        if agentic or any(w in table.lower() for w in _TABLE_WORDS):
            tools = frozenset(keys[table] | {n.id for n in tables[table]})
            routes += [(call, tables[table], table, tools) for call in calls]
    inline: dict[int, Dispatch] = {}
    if agentic:
        for call, name, label, head in _branch_calls(guards, builders):
            if name is None:
                inline.setdefault(id(head), _inline(guards, call, label, head))
            else:
                routes.append((call, [name], name.id, frozenset({label, name.id})))
    exposed = [
        name
        for table, names in tables.items()
        if table not in sites
        and ("tool" in table.lower() or (agentic and "function" in table.lower()))
        for name in names
    ]
    found, dispatches, raising = _resolve(guards, routes, exposed)
    return found, dispatches + list(inline.values()), raising


def _nested(tree: Tree, name: ast.Name) -> Def | None:
    """The ``def`` a table entry names inside the function that builds the table (tools
    defined in ``main()`` beside their ``available_tools`` dict)."""
    scope = tree.function_of(name)
    if scope is tree.module:
        return None
    for node in ast.iter_child_nodes(scope):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name.id:
            return node
    return None


def _runs(guards: Guards, entry: ast.Name) -> list[tuple[str, Def]] | None:
    """What a table entry runs: the function (of the module, or nested beside the table), or
    the tool methods of a registered class (``{"bash": BashTool}`` ...
    ``TOOLS[name]().execute(**args)``); ``None`` when not local."""
    name = entry.id
    nested = _nested(guards.tree, entry)
    if nested is not None:
        scope = guards.tree.function_of(entry)
        return [(f"{getattr(scope, 'name', '<lambda>')}.{name}", nested)]
    func = guards.values.functions.get(name)
    if func is not None:
        return [(name, func)]
    cls = guards.values.classes.get(name)
    if cls is None:
        return None
    methods = guards.values.methods[cls]
    return [(f"{name}.{m}", methods[m]) for m in TOOL_METHODS if m in methods]


def _resolve(
    guards: Guards, routes: list[Route], exposed: list[ast.Name]
) -> tuple[list[ToolSite], list[Dispatch], list[ast.Call]]:
    """Tools are gated when wrapped, or when reached only through guarded dispatch sites; a
    table handed elsewhere (``exposed``, no dispatch site here) needs its functions wrapped."""
    reached: dict[ast.Name, list[bool]] = defaultdict(list)
    by_id: dict[str, ast.Name] = {}
    for name in exposed:
        reached[by_id.setdefault(name.id, name)].append(False)
    dispatches: list[Dispatch] = []
    raising: list[ast.Call] = []
    for call, names, symbol, allowed in routes:
        guarded = guards.request_before(call, allowed)
        local = [_runs(guards, n) for n in names]
        wrapped = [r is not None and all(guards.function_gated(f) for _, f in r) for r in local]
        for name in names:
            reached[by_id.setdefault(name.id, name)].append(guarded)
        if any(wrapped):
            raising.append(call)
        if not all(wrapped):
            fixable = all(r for r in local)
            dispatches.append(Dispatch(node=call, symbol=symbol, guarded=guarded, fixable=fixable))
    tools: list[ToolSite] = []
    for target, guarded_paths in reached.items():
        for label, func in _runs(guards, target) or ():
            gated = guards.function_gated(func) or all(guarded_paths)
            site = ToolSite(name=label, node=func, how="dispatch", gated=gated, fixable=True)
            tools.append(site)
    return tools, dispatches, raising

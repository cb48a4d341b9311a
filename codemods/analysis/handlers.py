"""The tools behind an MCP low-level server's ``@server.call_tool()`` handler.

The handler receives the tool name the model chose and its arguments, and runs the tool: through
an ``if name == ...``/``match name:`` chain, a lookup (``handlers[name]``, see ``lookups``), or,
when it never looks at the name, by being the one tool itself. A branch of the chain that makes
exactly one call of the project's own code delegates to it: that function (or method) is the
tool, wherever it is defined. A branch that does the work itself (no such call, or several) is
the tool, reported at the branch. The handler itself is reported as the dispatch (GK202).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from .guards import Guards
from .pure import acts
from .summary import call_ref
from .tools import ToolSite
from .tree import SCOPE_NODES, dotted

__all__ = ["HandlerTools", "handler_tools"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
_INLINE_NOTE = " (implemented inline in the call_tool handler: gate the handler)"
_SINGLE_NOTE = " (the whole call_tool handler: gate it with guardkit's MCP server integration)"


@dataclass(slots=True)
class HandlerTools:
    """Tools found behind the module's handlers."""

    tools: list[ToolSite] = field(default_factory=list)
    #: qualified names and refs of tools defined in other modules (for the project index)
    refs: list[str] = field(default_factory=list)


def _body_nodes(stmts: list[ast.stmt]) -> Iterator[ast.AST]:
    """Nodes under ``stmts``, not inside nested scopes or ``raise`` statements."""
    stack: list[ast.AST] = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*SCOPE_NODES, ast.Raise)):
            stack.extend(ast.iter_child_nodes(node))


def _tests_name(test: ast.expr, name: str) -> str | None:
    """The tool name(s) ``test`` compares the parameter with (``name == "x"``,
    ``name in ("x", "y")``, ``name == Tools.X``, ``name.startswith("x_")``), as a label."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        labels = [_tests_name(v, name) for v in test.values]
        return "|".join(label for label in labels if label) if all(labels) else None
    affix = _affix(test, name)
    if affix is not None:
        return affix
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == name]
    others = [s for s in sides if s not in names]
    if len(names) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.In)):
        return None
    other = others[0]
    if isinstance(other, ast.Constant):
        return str(other.value)
    return ast.unparse(other) if not isinstance(other, ast.Call) else None


def _affix(test: ast.expr, name: str) -> str | None:
    """``name.startswith("fs_")`` -> ``"fs_*"``, ``name.endswith("_file")`` -> ``"*_file"``: a
    branch for a group of tools, often handed on to a helper that picks among them."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.args):
        return None
    func, first = test.func, test.args[0]
    if not (isinstance(func.value, ast.Name) and func.value.id == name):
        return None
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    if func.attr == "startswith":
        return f"{first.value}*"
    return f"*{first.value}" if func.attr == "endswith" else None


def _branches(handler: Def, name: str) -> list[tuple[str, ast.AST, list[ast.stmt]]]:
    """``(label, where, body)`` of each branch that runs one named tool."""
    found: list[tuple[str, ast.AST, list[ast.stmt]]] = []
    for node in _body_nodes(handler.body):
        if isinstance(node, ast.If):
            label = _tests_name(node.test, name)
            if label:
                found.append((label, node, node.body))
        elif (
            isinstance(node, ast.Match)
            and isinstance(node.subject, ast.Name)
            and node.subject.id == name
        ):
            for case in node.cases:
                if isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None:
                    continue  # ``case _:`` / ``case other:``: the unknown-tool branch
                found.append((ast.unparse(case.pattern), case.pattern, case.body))
    return found


def _dispatches_on(handler: Def, name: str) -> bool:
    """Whether the handler uses the tool name to choose (compares it, looks it up, passes it
    on); a handler that never does is one tool."""
    for node in _body_nodes(handler.body):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript):
            parts = [node.slice]
        elif isinstance(node, ast.Match):
            parts = [node.subject]
        elif isinstance(node, ast.Call):
            parts = [*node.args, *(k.value for k in node.keywords)]
        else:
            continue
        if any(isinstance(p, ast.Name) and p.id == name for p in parts):
            return True
    return False


def _project_call(guards: Guards, call: ast.Call) -> tuple[str, Def | None] | None:
    """The project function or method a call runs, as a ref (and its ``def`` when it is in this
    module); ``None`` for anything else (libraries, builtins, constructors)."""
    values, imports = guards.values, guards.imports
    func = call.func
    if isinstance(func, ast.Name) and func.id in values.functions:
        return values.local_name(func.id), values.functions[func.id]
    if isinstance(func, ast.Attribute):
        ref = call_ref(call, values)
        if ref and ref.startswith("self:"):
            cls = guards.tree.class_of(call)
            return ref, values.method_of(cls, func.attr) if cls else None
        if ref and ref.startswith("type:"):
            return ref, None
    name = dotted(func)
    qualname = imports.resolve(name)
    if qualname is None or qualname.rpartition(".")[2][:1].isupper():
        return None
    root = (name or "").partition(".")[0]
    module = values.module
    same = "." in module and qualname.partition(".")[0] == module.partition(".")[0]
    return (qualname, None) if same or root in imports.relative else None


def _written(handler: Def, given: str) -> set[str]:
    """The handler's arguments parameter and the variables made from it (``args =
    MoveInput(**arguments)``, ``path = arguments["path"]``): what the model wrote."""
    found = {given}
    assigns = [n for n in _body_nodes(handler.body) if isinstance(n, ast.Assign)]
    for _ in range(3):
        size = len(found)
        for assign in assigns:
            if any(isinstance(n, ast.Name) and n.id in found for n in ast.walk(assign.value)):
                found |= {
                    n.id for t in assign.targets for n in ast.walk(t) if isinstance(n, ast.Name)
                }
        if len(found) == size:
            break
    return found


def _handed(call: ast.Call, written: set[str]) -> bool:
    given = [*call.args, *(k.value for k in call.keywords)]
    return any(isinstance(n, ast.Name) and n.id in written for a in given for n in ast.walk(a))


def _branch_tool(
    guards: Guards,
    handler: Def,
    branch: tuple[str, ast.AST, list[ast.stmt]],
    written: set[str] | None,
    gated: bool,
) -> tuple[ToolSite | None, str | None]:
    """The tool a branch runs: the one project function it calls, unless the branch acts on
    what the model wrote itself (``shutil.move(args.src, args.dst)`` before ``return
    to_text(...)``: the project function formats, the branch is the tool)."""
    label, where, body = branch
    calls = [n for n in _body_nodes(body) if isinstance(n, ast.Call)]
    project = [(c, p) for c in calls if (p := _project_call(guards, c)) is not None]
    handed = [c for c in calls if written is not None and _handed(c, written)]
    acting = [c for c in handed if not _project_call(guards, c) and acts(c, guards.imports)]
    if len(project) != 1 or acting:  # none, several, or the branch acts itself
        symbol = f"{handler.name}[{label}]"
        site = ToolSite(
            name=symbol,
            node=where,
            how="MCP call_tool branch",
            gated=gated,
            fixable=False,
            note=_INLINE_NOTE,
        )
        return (site if not gated else None), None
    call, (ref, local) = project[0]
    gated = gated or guards.request_before(call)
    if local is not None:
        gated = gated or guards.function_gated(local)
        site = ToolSite(
            name=local.name, node=local, how="MCP call_tool branch", gated=gated, fixable=True
        )
        return site, None
    return None, (None if gated else ref)


def handler_tools(guards: Guards, handlers: list[Def]) -> HandlerTools:
    """The tools behind the module's ``call_tool`` handlers (see the module docstring)."""
    out = HandlerTools()
    for handler in handlers:
        params = [*handler.args.posonlyargs, *handler.args.args]
        if params[:1] and params[0].arg in {"self", "cls"}:
            params = params[1:]
        if not params:
            continue
        name = params[0].arg
        guards.chosen.add((handler, name))
        gated = guards.self_guarded(handler) or guards.integration_gated(handler)
        branches = _branches(handler, name)
        if not branches and not _dispatches_on(handler, name):
            single = ToolSite(
                name=handler.name,
                node=handler,
                how="MCP call_tool handler",
                gated=gated,
                fixable=False,
                note=_SINGLE_NOTE,
            )
            out.tools.append(single)
            continue
        written = _written(handler, params[1].arg) if len(params) > 1 else None
        for branch in branches:
            site, ref = _branch_tool(guards, handler, branch, written, gated)
            if site is not None:
                out.tools.append(site)
            if ref is not None:
                out.refs.append(ref)
    return out

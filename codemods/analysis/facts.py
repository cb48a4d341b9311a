"""Everything the rules need to know about one module, computed once from a stdlib ``ast`` tree.

``analyze`` takes the module's ``Env`` from the project index (what its calls reach in other
modules, which of its definitions other modules expose as tools); without one the module is
analysed as a project of its own.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from .calls import CallIndex, ModelCall, classify_calls
from .catalog import DEFAULT_CATALOG, SOURCE_READERS, Catalog
from .chains import reply_branches
from .chosen import may_choose, takes_tool_input
from .counted import counter_calls
from .dispatch import find_dispatch
from .env import Env
from .flow import MODEL_NAME, MODEL_REPLY, follow_names, seeds_from_env
from .guards import Guards
from .handed import hand_over
from .handlers import handler_tools
from .imports import ImportMap
from .lookups import chosen_lookup, dynamic_dispatch, lookup_runs, remote_dispatch
from .loops import Counted, infinite_names, is_bounded
from .project import ProjectIndex
from .recursion import unbounded_recursions
from .reply import (
    Reply,
    output_runs,
    reply_evaluated,
    reply_matched,
    reply_passed,
    reply_selected,
)
from .risks import denial_escapes, model_supplied_costs
from .structured import structured_runs
from .summary import Summary, call_ref, name_ref, owner_of, param_ref, qualified, summarize
from .tools import Dispatch, ToolSite, find_tools
from .tree import FUNCTION_NODES, Tree, dotted
from .values import Values

__all__ = ["ModuleFacts", "analyze"]

Loop = ast.For | ast.AsyncFor | ast.While
Def = ast.FunctionDef | ast.AsyncFunctionDef
_AGENT_WORDS = {"input_schema", "tool_use", "tool_calls", "function_call", "tool_result"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModuleFacts:
    """Model calls, unbounded loops, tools, dispatch sites and risky guard usage of one module."""

    model_calls: tuple[ModelCall, ...]
    unbounded_loops: tuple[tuple[Loop, tuple[ModelCall, ...]], ...]
    tools: tuple[ToolSite, ...]
    dispatches: tuple[Dispatch, ...]
    costs: tuple[ast.expr, ...]
    escapes: tuple[ast.AST, ...]
    #: what other modules need to know about this one
    summary: Summary
    #: the environment the module was analysed in
    env: Env
    #: functions that reach a model and call themselves with no bound (agent loops as recursion)
    recursions: tuple[tuple[Def, tuple[ModelCall, ...]], ...] = ()


def _agentic(tree: Tree, has_model_calls: bool) -> bool:
    if has_model_calls or any(k.arg == "tools" for k in tree.nodes(ast.keyword)):
        return True
    return any(
        isinstance(c.value, str) and c.value in _AGENT_WORDS for c in tree.nodes(ast.Constant)
    )


def _helper(tree: Tree, call: ast.Call) -> ModelCall:
    """A call of a project function that reaches an ungated model call (for GK101 only)."""
    symbol = dotted(call.func) or ast.unparse(call.func)
    return ModelCall(
        node=call,
        symbol=symbol,
        stmt=tree.statement_of(call),
        function=tree.function_of(call),
        loops=tuple(tree.loops_of(call)),
        gated=True,
        fixable=False,
    )


def _nested_helpers(tree: Tree, reaching: list[ModelCall]) -> list[ModelCall]:
    """Calls of functions defined inside a function (``def process_step(): agent.step()`` in
    the body of a loop, then ``process_step()``) whose body reaches a model: the project index
    sees only module- and class-level functions, so these are followed here."""
    defs: dict[tuple[ast.AST, str], Def] = {}
    nested: list[Def] = [*tree.nodes(ast.FunctionDef), *tree.nodes(ast.AsyncFunctionDef)]
    for node in nested:
        scope = tree.function_of(node)
        if scope is not tree.module and not isinstance(tree.parent(node), ast.ClassDef):
            defs[(scope, node.name)] = node
    if not defs:
        return []
    inner = {id(d) for d in defs.values()}
    reached = {id(c.function) for c in reaching} & inner
    known = {id(c.node) for c in reaching}
    calls = [c for c in tree.nodes(ast.Call) if isinstance(c.func, ast.Name)]
    found: list[ModelCall] = []
    for _ in range(4):
        size = len(found)
        for call in calls:
            target = _nested_def(tree, call, defs)
            if target is not None and id(target) in reached and id(call) not in known:
                known.add(id(call))
                found.append(_helper(tree, call))
                if id(tree.function_of(call)) in inner:
                    reached.add(id(tree.function_of(call)))
        if len(found) == size:
            break
    return found


def _nested_def(tree: Tree, call: ast.Call, defs: dict[tuple[ast.AST, str], Def]) -> Def | None:
    """The nested function a plain-name call runs: defined in its scope or an enclosing one."""
    name = call.func.id if isinstance(call.func, ast.Name) else ""
    scope = tree.function_of(call)
    while scope is not tree.module:
        if (scope, name) in defs:
            return defs[(scope, name)]
        scope = tree.function_of(scope)
    return None


def _unbounded(
    tree: Tree,
    imports: ImportMap,
    calls: list[ModelCall],
    gates: list[ast.Call],
    stoppers: list[ast.Call],
    infinite: frozenset[str],
    counted: Counted,
) -> list[tuple[Loop, tuple[ModelCall, ...]]]:
    by_loop: dict[Loop, list[ModelCall]] = {}
    for call in calls:
        for ctx in call.loops:
            by_loop.setdefault(ctx.loop, []).append(call)
    return [
        (loop, tuple(found))
        for loop, found in by_loop.items()
        if not is_bounded(loop, tree, imports, gates, stoppers, infinite, counted)
    ]


def _inside(tree: Tree, node: ast.AST, functions: list[Def]) -> bool:
    return any(parent in functions for parent, _ in tree.ancestors(node))


def _tool_parameters(tools: list[ToolSite]) -> set[tuple[ast.AST, str]]:
    """A tool's own parameters hold what the model wrote: a lookup by one is model-chosen."""
    found: set[tuple[ast.AST, str]] = set()
    for site in tools:
        if isinstance(site.node, Def):
            args = site.node.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            found.update((site.node, p.arg) for p in params if p.arg not in {"self", "cls"})
    return found


def _reads_source(tree: Tree, values: Values) -> bool:
    return any(values.qualify(dotted(c.func)) in SOURCE_READERS for c in tree.nodes(ast.Call))


def _unique_tools(tools: list[ToolSite], reads_source: bool) -> list[ToolSite]:
    """One entry per reported node; an entry that is gated by any route wins. In a module that
    reads function source, no tool is fixed by a decorator."""
    best: dict[int, ToolSite] = {}
    if reads_source:
        note = " (this module reads function source: gate the registry instead)"
        tools = [replace(t, fixable=False, note=t.note or note) for t in tools]
    for site in tools:
        seen = best.get(id(site.node))
        if seen is None or (site.gated and not seen.gated):
            best[id(site.node)] = site
    return list(best.values())


def _turns(tree: Tree, values: Values, imports: ImportMap, env: Env) -> CallIndex:
    """Calls of retried provider helpers are the model turn; the calls inside a helper that
    is called somewhere are gated there."""

    def turn(call: ast.Call) -> str | None:
        return dotted(call.func) if call_ref(call, values) in env.turns else None

    calls = classify_calls(tree, values, imports, turn)
    kept = []
    for call in calls.model:
        owner = owner_of(tree, call.node)
        called = owner is not None and _qualified(tree, owner, values) in env.called
        kept.append(replace(call, gated=True) if call.retried and called else call)
    calls.model = kept
    return calls


def _qualified(tree: Tree, func: ast.AST, values: Values) -> str:
    parent = tree.parent(func)
    name = getattr(func, "name", "")
    if isinstance(parent, ast.ClassDef):
        name = f"{parent.name}.{name}"
    return qualified(values.module, name)


def _follow_chosen(
    tree: Tree, values: Values, guards: Guards, env: Env, summary: Summary, agentic: bool
) -> None:
    """Add the variables and parameters a model-chosen tool name flows into to
    ``guards.named``, and record the chosen names passed to other modules' functions. Followed
    from the tool calls of a module that calls a model (``agentic``), or from the parameters
    that receive a chosen name from elsewhere."""
    seeds = set(guards.chosen) | _env_seeds(tree, values, env, MODEL_NAME)
    if not (seeds or (agentic and may_choose(tree))):
        return
    guards.named, guards.inputs, passed = follow_names(
        tree, values, seeds, lambda c: call_ref(c, values) or param_ref(c, values)
    )
    if passed:
        known = {(ref, index, kind) for ref, index, kind in summary["arguments"]}
        summary["arguments"] = sorted(known | passed)


def _looked_up(guards: Guards, known: set[int]) -> list[Dispatch]:
    """Calls of a callee a model-chosen name looks up: here, or in a library (``known``: ids
    of the calls already reported)."""
    found = list(dynamic_dispatch(guards, known))
    return found + list(remote_dispatch(guards, known | {id(d.node) for d in found}))


def _from_reply(
    tree: Tree,
    values: Values,
    guards: Guards,
    asked: tuple[CallIndex, list[ModelCall]],
    known: set[int],
    context: tuple[Env, Summary],
) -> tuple[set[str], list[Dispatch]]:
    """What the model returned, followed once (``asked``: the module's model calls and the
    helper calls that reach one; also the parameters other modules hand it to): the tools run
    on it and the dispatches it selects, with what those run (``context``: the module's
    environment, whose builders only build a value, no tools, and its summary, where the calls
    that hand it to other modules are recorded)."""
    env, summary = context
    calls, helpers = asked
    sources = [c.node for c in (*calls.model, *helpers) if isinstance(c.node, ast.Call)]
    seeds = _env_seeds(tree, values, env, MODEL_REPLY)
    if not (sources or seeds):
        return set(), []
    reply = Reply(tree, sources, seeds)
    passed = reply_passed(reply, lambda c: call_ref(c, values), values.imports.resolve)
    if passed:
        summary["arguments"] = sorted({*summary["arguments"], *passed})
    picked = _reply_dispatches(reply, values, guards, (helpers, env.builders), known)
    runs = _runs_model_output(reply, values, guards)
    for call, refs in structured_runs(reply, values):
        if id(call) in known or id(call) in {id(d.node) for d in picked}:
            continue
        guarded = guards.request_before(call)
        if len(refs) > 1:  # the model chose which class it returned: which tool runs
            symbol = ast.unparse(call.func)
            picked.append(
                Dispatch(node=call, symbol=symbol, guarded=guarded, fixable=False, runs=refs)
            )
        elif not guarded:
            runs |= {f"output:{r.partition(':')[2]}" for r in refs}
    return runs | {r for d in picked if not d.guarded for r in d.runs}, picked


def _env_seeds(tree: Tree, values: Values, env: Env, of: str) -> set[tuple[ast.AST, str]]:
    """The parameters callers in other modules hand a value of kind ``of``: a chosen tool name
    or what a model returned."""
    if not any(kind == of for _, _, kind in env.kinds):
        return set()
    defs = tree.nodes(*FUNCTION_NODES)
    qualify = {id(d): _qualified(tree, d, values) for d in defs}
    return seeds_from_env(tree, env.kind_map(), qualify, of)


def _runs_model_output(reply: Reply, values: Values, guards: Guards) -> set[str]:
    """``type:`` refs of project methods run, without a guard request, on what a model
    returned (``env.execute(extract_action(reply))``): tools."""
    found = output_runs(reply, lambda c: call_ref(c, values))
    refs = {r for c in found if not guards.request_before(c) and (r := call_ref(c, values))}
    return {f"output:{r.partition(':')[2]}" for r in refs}


def _reply_dispatches(
    reply: Reply,
    values: Values,
    guards: Guards,
    project: tuple[list[ModelCall], frozenset[str]],
    known: set[int],
) -> list[Dispatch]:
    """Calls of a table item the model's reply selected (``tools[int(reply) - 1](prompt)``),
    and ``if``/``elif`` chains on what the model wrote whose branches run code handed parts of
    it (``if op == "click": screen.click(op_x, op_y)``); ``project``: the helper calls that
    reach a model and the refs that only build a value."""
    helpers, builders = project
    named = guards.chosen | guards.named
    found = [
        Dispatch(
            node=call,
            symbol=ast.unparse(lookup),
            guarded=guards.request_before(call),
            fixable=False,
            runs=lookup_runs(call, lookup, guards),
        )
        for call, lookup in reply_selected(reply)
        if id(call) not in known
        # by a tool call's name, the call runs the tool only if handed its input
        and (
            not chosen_lookup(lookup, reply.tree, named)
            or takes_tool_input(call, reply.tree, named | guards.inputs)
        )
    ]
    found += [
        Dispatch(
            node=call,
            symbol=f"{ast.unparse(call.func)}({ast.unparse(call.args[0])}, ...)",
            guarded=guards.request_before(call),
            fixable=False,
            runs=_namespace(call, values),
        )
        for call in reply_evaluated(reply)
        # the builtin, not a function or import of that name
        if id(call) not in known and values.qualify(ast.unparse(call.func)) is None
    ]
    found += [
        Dispatch(
            node=call,
            symbol=ast.unparse(call.func),
            guarded=guards.request_before(call),
            fixable=False,
            runs=tuple(r for r in (call_ref(call, values) or name_ref(call, values),) if r),
        )
        for call, _ in reply_matched(reply)
        if id(call) not in known
    ]
    known = known | {id(d.node) for d in found}
    helped = [c.node for c in helpers if isinstance(c.node, ast.Call)]
    for head, handed in reply_branches(reply, helped, lambda c: call_ref(c, values), builders):
        if id(head) in known or any(id(c) in known for c in handed):
            continue
        refs = (call_ref(c, values) for c in handed)
        found.append(
            Dispatch(
                node=head,
                symbol=_chain_symbol(head),
                guarded=all(guards.request_before(c) for c in handed),
                fixable=False,
                runs=tuple(sorted({r for r in refs if r})),
            )
        )
    return found


def _namespace(call: ast.Call, values: Values) -> tuple[str, ...]:
    """The functions a ``{"name": function}`` namespace given to ``eval``/``exec`` holds."""
    given = [*call.args[1:], *(k.value for k in call.keywords if k.arg in {"globals", "locals"})]
    return tuple(
        name
        for space in given
        if isinstance(space, ast.Dict)
        for value in space.values
        if isinstance(value, (ast.Name, ast.Attribute))
        and (name := values.qualify(dotted(value))) is not None
    )


def _chain_symbol(head: ast.If | ast.Match) -> str:
    """``if x == ...`` for a chain of ``x == "a"`` tests (or ``x == "a" or ...``), else the
    first test itself (``if x.startswith('CLICK') ...``); ``match x`` for a ``match``."""
    if isinstance(head, ast.Match):
        return f"match {ast.unparse(head.subject)}"
    test = head.test
    while isinstance(test, ast.BoolOp):
        test = test.values[0]
    if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Eq):
        return f"if {ast.unparse(test.left)} == ..."
    return f"if {ast.unparse(test)} ..."


def _unseen_kinds(values: Values, env: Env, name: str) -> bool:
    """Whether ``env`` gives a parameter of a module-level function a kind that ``values``
    did not bind it to."""
    prefix = f"{name}." if name else ""
    for owner, param, kind in env.kinds:
        func = values.functions.get(owner[len(prefix) :]) if owner.startswith(prefix) else None
        if func is not None and values.scopes.get(func, {}).get(param) != kind:
            return True
    return False


def _project_calls(
    tree: Tree, values: Values, env: Env, calls: CallIndex
) -> tuple[list[ModelCall], list[ast.Call], Counted]:
    """The module's calls of project functions that reach a model (not model calls
    themselves), those that raise on a limit, and those of a step object's methods."""
    direct = {id(c.node) for c in calls.model}
    helpers: list[ModelCall] = []
    stoppers: list[ast.Call] = []
    counting = env.counting_map()
    stepping: list[tuple[ast.Call, str]] = []
    if not (env.model or env.limit or counting):
        return helpers, stoppers, counter_calls(stepping, counting)
    for node in tree.nodes(ast.Call):
        ref = call_ref(node, values) or name_ref(node, values)
        if ref in env.model and id(node) not in direct:
            helpers.append(_helper(tree, node))
        if ref in env.limit:
            stoppers.append(node)
        if ref in counting:
            stepping.append((node, ref))
    return helpers, stoppers, counter_calls(stepping, counting)


def analyze(
    module: ast.Module,
    catalog: Catalog = DEFAULT_CATALOG,
    *,
    name: str = "",
    is_package: bool = False,
    env: Env | None = None,
) -> ModuleFacts:
    """Analyse a parsed module named ``name`` in the project environment ``env``."""
    tree = Tree(module)
    imports = ImportMap(tree.nodes(ast.Import, ast.ImportFrom), name, is_package, catalog.known)
    values = Values(tree, imports, catalog, name, env.kind_map() if env else None)
    calls = classify_calls(tree, values, imports)
    handed = hand_over(tree, values)
    summary = summarize(tree, values, calls, handed)
    standalone = env is None
    if env is None:
        env = ProjectIndex([summary]).env(name)
        if _unseen_kinds(values, env, name):
            # the module's own functions hand one another what ``values`` could not bind by
            # itself (a decorator of the module is handed the model helper it decorates)
            return analyze(module, catalog, name=name, is_package=is_package, env=env)
    if env.turns or env.called:
        calls = _turns(tree, values, imports, env)
    helpers, stoppers, counted = _project_calls(tree, values, env, calls)
    helpers += _nested_helpers(tree, [*calls.model, *helpers])
    guards = Guards(tree, values, imports, calls, env.gated)
    tools, dispatches = find_tools(guards, env.tools, handed.local)
    handler_defs = [d.node for d in dispatches if isinstance(d.node, Def)]
    handlers = handler_tools(guards, handler_defs)
    tools += handlers.tools
    guards.tool_params.update(_tool_parameters(tools))
    agentic = _agentic(tree, bool(calls.model))
    _follow_chosen(tree, values, guards, env, summary, agentic)
    more_tools, branched, raising = find_dispatch(guards, agentic, env.builders)
    # a dispatch inside an MCP ``call_tool`` handler is reported as the handler
    more_dispatches = [d for d in branched if not _inside(tree, d.node, handler_defs)]
    known = {id(d.node) for d in (*dispatches, *branched)} | {id(c) for c in raising}
    looked_up = _looked_up(guards, known)
    runs = {r for d in looked_up if not d.guarded for r in d.runs}
    known |= {id(d.node) for d in looked_up}
    output, picked = _from_reply(tree, values, guards, (calls, helpers), known, (env, summary))
    runs |= output
    looked_up += picked
    # a lookup inside an MCP ``call_tool`` handler is reported as the handler
    more_dispatches += [d for d in looked_up if not _inside(tree, d.node, handler_defs)]
    summary["tools"] = sorted({*summary["tools"], *handlers.refs, *runs})
    summary["defined"] = sorted(
        {_qualified(tree, t.node, values) for t in tools if isinstance(t.node, Def)}
    )
    owners = (owner_of(tree, d.node) for d in (*branched, *looked_up) if not d.guarded)
    summary["dispatching"] = sorted({_qualified(tree, o, values) for o in owners if o})
    if standalone and (handlers.refs or runs or (summary["dispatchers"] and summary["defined"])):
        # tools found only now (behind a handler or a typed lookup) may be defined here
        again = ProjectIndex([summary]).env(name)
        return analyze(module, catalog, name=name, is_package=is_package, env=again)
    escapes = {id(n): n for n in denial_escapes(tree, guards, calls, raising)}
    looped = [*calls.model, *helpers]
    infinite = infinite_names(tree)
    recursions = unbounded_recursions(tree, looped, [*calls.gates, *stoppers], infinite)
    return ModuleFacts(
        model_calls=tuple(calls.model),
        unbounded_loops=tuple(
            _unbounded(tree, imports, looped, calls.gates, stoppers, infinite, counted)
        ),
        tools=tuple(_unique_tools(tools + more_tools, _reads_source(tree, values))),
        dispatches=tuple(dispatches + more_dispatches),
        costs=tuple(model_supplied_costs(tree, guards, calls)),
        escapes=tuple(escapes.values()),
        summary=summary,
        env=env,
        recursions=tuple(recursions),
    )

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
from collections.abc import Callable, Iterable

from .chosen import is_tool_input, reads_tool_name
from .tree import FUNCTION_NODES, Tree
from .values import Values

__all__ = ["MODEL_NAME", "MODEL_REPLY", "follow_names", "seeds_from_env"]

#: the kind of a parameter that receives a model-chosen tool name from a caller
MODEL_NAME = "model:name"
#: the kind of a parameter that receives what a model returned (or part of it) from a caller
MODEL_REPLY = "model:reply"
#: a value that holds a chosen name itself (not in one of its positions)
_WHOLE = -1
_ROUNDS = 4
#: methods that cut a string into parts (``name.split(".")``), and the positions they fill
_SPLITS = frozenset({"split", "rsplit", "partition", "rpartition"})
_PARTS = frozenset({0, 1, 2})

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

"""The project index: module summaries resolved across files.

From every analysed module's ``Summary`` it resolves refs (re-exports through package
``__init__`` modules, methods through class hierarchies and protocol implementations), then
computes to a fixed point which functions reach an ungated model call, which stop on a limit,
and which functions and classes are handed to a model as tools. ``Env`` is what one module needs
of that: the refs it calls that reach a model or stop on a limit, and its own definitions that
other modules expose as tools. Its digest keys the module's cached findings, so a change in one
file re-analyses exactly the modules whose ``Env`` it changes.
"""

from __future__ import annotations

import asyncio
import io
import logging
import pathlib
import subprocess
import threading
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from .catalog import TOOL_BASES
from .env import EMPTY_ENV, Env
from .summary import FunctionFacts, Summary
from .values import CLASS, IS_CLASS, RETURNS

__all__ = ["EMPTY_ENV", "Env", "ProjectIndex"]

_DEPTH = 8
#: how many unrelated class hierarchies may define a method for a call of it on a value of
#: unknown kind to be resolved by its name to what it runs (a tool, a callee a kind is passed
#: to); whether it reaches a model or a limit asks every definer, however many
_NAMED_ROOTS = 2
#: method names of builtin value types: on a value of unknown kind, most likely theirs
_VALUE_METHODS = frozenset(
    name for kind in (dict, list, str, bytes, set, tuple, int, float) for name in dir(kind)
)
#: and of the standard library's common objects (a thread's ``run``, a file's ``read``)
_COMMON_METHODS = _VALUE_METHODS | frozenset(
    name
    for kind in (
        io.TextIOBase,
        io.BufferedIOBase,
        logging.Logger,
        pathlib.Path,
        threading.Thread,
        asyncio.Queue,
        asyncio.Task,
        subprocess.Popen,
    )
    for name in dir(kind)
)
#: methods through which a framework or a loop runs a tool object
TOOL_METHODS = ("forward", "run", "_run", "_arun", "arun", "execute", "invoke", "__call__")


class ProjectIndex:
    """Resolve and propagate facts over the summaries of a project's modules."""

    def __init__(self, summaries: Iterable[Summary]) -> None:
        #: every summary, also of scripts that share a module name (``main.py`` in each
        #: example folder): what they hand over as tools is not lost to the one ``modules`` keeps
        self._summaries = list(summaries)
        self.modules: dict[str, Summary] = {s["module"]: s for s in self._summaries}
        self.functions = {q: f for s in self.modules.values() for q, f in s["functions"].items()}
        self.classes = {q: c for s in self.modules.values() for q, c in s["classes"].items()}
        self.collections = {
            q: list(c) for s in self.modules.values() for q, c in s["collections"].items()
        }
        self._register()
        self._subclasses: dict[str, set[str]] = defaultdict(set)
        self._by_method: dict[str, set[str]] = defaultdict(set)
        for name, cls in self.classes.items():
            for base in cls["bases"]:
                self._subclasses[self.canonical(base)].add(name)
            for method in cls["methods"]:
                self._by_method[method].add(name)
        self._lookups: dict[tuple[str, str, bool], frozenset[str]] = {}
        self._targets: dict[str, frozenset[str]] = {}
        #: ``name:meth`` refs -> every concrete method of that name (see ``reaches``)
        self._named_targets: dict[str, frozenset[str]] = {}
        self.callers: dict[str, set[str]] = defaultdict(set)
        #: ``name:meth`` refs -> the functions that make them (a fact passes through one only
        #: when every method of that name has it: see ``reaches``)
        self._named: dict[str, set[str]] = defaultdict(set)
        for name, facts in self.functions.items():
            for ref in facts["calls"]:
                if ref.startswith("name:"):
                    self._named[ref].add(name)
                    continue
                for target in self.targets(ref):
                    self.callers[target].add(name)
        self.turns = frozenset(q for q, f in self.functions.items() if f["retried"] and f["model"])
        self.model = self._propagate(lambda facts: facts["model"])
        steps = {c for s in self.modules.values() for c in s["counters"]}
        self.limit = self._propagate(lambda facts: any(name in steps for name in facts["limit"]))
        self._relevant: dict[tuple[str, int], bool] = {}
        self.params = self._parameter_kinds()
        #: the functions of ``params``, sorted: those of a module and its sub-modules are adjacent
        self._owners = sorted(self.params)
        self.dispatching = frozenset(d for s in self._summaries for d in s["dispatching"])
        self._entry_map: dict[str, set[str]] | None = None
        self.tools = self._tools() | self._derived_tools()
        self.tools |= self._dispatched(self.tools)
        self.gated = self._tools("gated") - self.tools

    # -- resolution ---------------------------------------------------------------------------
    def canonical(self, name: str, depth: int = 0) -> str:
        """Follow re-exports (``from .agent import Agent`` in ``pkg/__init__``) to a definition."""
        if name in self.functions or name in self.classes or name in self.collections:
            return name
        head, _, last = name.rpartition(".")
        if depth > _DEPTH or not head:
            return name
        if head in self.modules:
            target = self.modules[head]["imports"].get(last)
            return self.canonical(target, depth + 1) if target and target != name else name
        owner = self.canonical(head, depth + 1)
        return f"{owner}.{last}" if owner != head else name

    def _register(self) -> None:
        """Add what a project's registering decorators decorate, in any module, to the
        collections they fill (``@tool`` storing each function in ``TOOLS``)."""
        fills = {d: c for s in self.modules.values() for d, c in s["registrars"].items()}
        if not fills:
            return
        for summary in self._summaries:
            for decorator, functions in summary["registered"].items():
                for collection in fills.get(self.canonical(decorator), ()):
                    members = self.collections.setdefault(collection, [])
                    members += [f for f in functions if f not in members]

    def _hierarchy(self, cls: str, up: bool) -> list[str]:
        key = (cls, "", up)
        if key in self._lookups:
            return list(self._lookups[key])
        order = self._walk(cls, up)
        self._lookups[key] = frozenset(order)
        return order

    def _walk(self, cls: str, up: bool) -> list[str]:
        order: list[str] = []
        todo = [cls]
        while todo and len(order) < 64:
            name = self.canonical(todo.pop(0))
            if name in order:
                continue
            order.append(name)
            facts = self.classes.get(name)
            if up and facts:
                todo += facts["bases"]
            elif not up:
                todo += sorted(self._subclasses.get(name, ()))
        return order

    def _implementations(self, protocol: str) -> set[str]:
        """Classes that have every method of a protocol (structural subtyping)."""
        wanted = set(self.classes[protocol]["methods"]) - {"__init__"}
        if not wanted:
            return set()
        found = set.intersection(*(self._by_method[m] for m in wanted))
        return found - {protocol}

    def methods_of(self, cls: str, method: str, *, dynamic: bool) -> frozenset[str]:
        """``cls.method`` looked up through the bases; with ``dynamic``, overrides in subclasses
        and protocol implementations too (what a call on an instance may run)."""
        key = (cls, method, dynamic)
        found = self._lookups.get(key)
        if found is not None:
            return found
        classes = self._hierarchy(cls, up=True)
        if dynamic:
            classes += self._hierarchy(cls, up=False)
            for name in list(classes):
                if name in self.classes and self.classes[name]["protocol"]:
                    classes += sorted(self._implementations(name))
        found = frozenset(f"{c}.{method}" for c in classes if f"{c}.{method}" in self.functions)
        self._lookups[key] = found
        return found

    def targets(self, ref: str) -> frozenset[str]:
        """The functions a ref may run."""
        found = self._targets.get(ref)
        if found is not None:
            return found
        kind, _, name = ref.rpartition(":")
        cls, _, method = name.rpartition(".")
        result: frozenset[str]
        if kind == "name":
            result = self.by_name(name)
        elif kind in {"self", "type", "output"}:
            result = self.methods_of(cls, method, dynamic=True)
        else:
            target = self.canonical(name)
            result = frozenset({target}) if target in self.functions else frozenset()
            if target in self.classes:
                result = self.methods_of(target, "__init__", dynamic=False)
        self._targets[ref] = result
        return result

    def by_name(
        self, method: str, *, tool: bool = False, roots: int | None = _NAMED_ROOTS
    ) -> frozenset[str]:
        """What ``x.method(...)`` on a value of unknown kind may run: the project's methods of
        that name, when the name is the project's own (no method of a builtin or standard
        type spells it: ``get``, ``append``, ``read``) and at most ``roots`` class
        hierarchies define it (a name many unrelated classes share says nothing of which).
        A stub (a protocol's or an ABC's) runs nothing: it stands for the implementations.
        On a ``tool`` (an element a dispatch picked by the model's choice) only the value
        types' names are ruled out: it is no thread or file, and ``run`` is a tool's."""
        if method in (_VALUE_METHODS if tool else _COMMON_METHODS):
            return frozenset()
        owners = self._by_method.get(method, set())
        concrete = {
            f"{c}.{method}"
            for c in owners
            if not self.functions.get(f"{c}.{method}", {"abstract": True})["abstract"]
        }
        if roots is not None and self._hierarchies(owners, concrete) > roots:
            return frozenset()
        return frozenset(concrete)

    def _hierarchies(self, owners: set[str], concrete: set[str]) -> int:
        """How many unrelated hierarchies of ``owners`` hold the ``concrete`` methods (a
        protocol no class derives from holds none)."""
        held = {
            b for m in concrete for b in self._hierarchy(m.rpartition(".")[0], up=True)
        } & owners
        return sum(
            1 for c in held if not any(b in held for b in self._hierarchy(c, up=True) if b != c)
        )

    # -- propagation --------------------------------------------------------------------------
    def reaches(self, ref: str, having: frozenset[str]) -> bool:
        """Whether calling ``ref`` runs a function of ``having``: one of its targets may, but a
        call resolved by the method's name alone (``name:meth``) only when every concrete
        method of that name does, however many classes define it (a stand-in model's ``chat``
        beside the real one's is no model call)."""
        if ref.startswith("name:"):
            targets = self._named_targets.get(ref)
            if targets is None:
                targets = self._named_targets[ref] = self.by_name(ref[len("name:") :], roots=None)
            return bool(targets) and targets <= having
        return not self.targets(ref).isdisjoint(having)

    def _propagate(self, fact: Callable[[FunctionFacts], bool]) -> frozenset[str]:
        """Functions with ``fact``, directly or through any function they call."""
        callers = self.callers
        done = {name for name, facts in self.functions.items() if fact(facts)}
        todo = list(done)
        while todo:
            while todo:
                for caller in callers.get(todo.pop(), ()):
                    if caller not in done:
                        done.add(caller)
                        todo.append(caller)
            # calls resolved by name pass the fact on once every method of the name has it
            reached = frozenset(done)
            todo = [
                caller
                for ref, named in self._named.items()
                if self.reaches(ref, reached)
                for caller in named
                if caller not in done
            ]
            done.update(todo)
        return frozenset(done)

    def _expand(self, name: str, seen: set[str]) -> Iterable[str]:
        if name.startswith("arg:"):  # what callers build the class with (``helpers=[...]``)
            for item in self._passed(name):
                yield from self._expand(item, seen)
            return
        if name.startswith("public:"):  # ``getattr(toolbox, name)``: any public method
            yield from self._public(self.canonical(name[len("public:") :]))
            return
        if name.startswith("name:"):  # a method run on an element of unknown kind
            for target in self.by_name(name[len("name:") :], tool=True):
                yield from self._run_targets(f"type:{target}")
            return
        if ":" in name:  # ``self:pkg.mod.Class.meth``: the method and its overrides
            yield from self._run_targets(name)
            return
        target = self.canonical(name)
        if target in seen:
            return
        seen.add(target)
        if target in self.collections:
            for item in self.collections[target]:
                yield from self._expand(item, seen)
        else:
            yield target

    def _public(self, owner: str) -> Iterator[str]:
        """What ``getattr(owner, name)`` can run: the public methods of a class, or the public
        functions of a module (not its classes' methods)."""
        for method in sorted(self.method_names(owner)):
            if not method.startswith("_"):
                yield from self._run_targets(f"type:{owner}.{method}")
        if owner in self.modules:
            prefix = f"{owner}."
            for q in sorted(self.modules[owner]["functions"]):
                local = q[len(prefix) :] if q.startswith(prefix) else "."
                if "." not in local and not local.startswith("_"):
                    yield q

    def _passed(self, ref: str) -> set[str]:
        """``arg:<parameter>:<class>``: the names callers pass the class (or a subclass) there,
        by keyword or by position; ``arg:<parameter>:<function>``: what callers pass the
        function there."""
        _, param, owner = ref.split(":", 2)
        owner = self.canonical(owner)
        function = owner in self.functions and owner not in self.classes
        callees = {owner} if function else set(self._hierarchy(owner, up=False))
        found: set[str] = set()
        for summary in self._summaries:
            for callee, key, names in summary["listed"]:
                target = self.canonical(callee)
                if target not in callees:
                    continue
                run = target if function else f"{target}.__init__"
                params = self.functions.get(run, {"params": []})["params"]
                position = [p for p in params if p != "self"]
                if key == param or (key.isdigit() and position[int(key) : int(key) + 1] == [param]):
                    found.update(names)
        return found

    def abstract(self, cls: str) -> bool:
        """A base to be subclassed: a protocol or ABC, or a class with a stub method."""
        facts = self.classes.get(cls)
        if facts is None:
            return False
        stubs = (self.functions.get(f"{cls}.{m}") for m in facts["methods"])
        return facts["protocol"] or any(f is not None and f["abstract"] for f in stubs)

    def _hooks(self, base: str, via: str) -> set[str]:
        """What the concrete subclasses of an abstract ``base`` implement of its stubs (a
        template method's hooks: ``run_async`` on the base runs each subclass's ``run_impl``)."""
        found: set[str] = set()
        for sub in self._hierarchy(base, up=False):
            if sub in self.classes and not self.abstract(sub):
                found |= self._stub_implementations(sub, via)
        return found

    def _class_entries(self, cls: str) -> set[str]:
        """The methods through which a tool class handed to a model runs: the ones frameworks
        and loops call (``execute``, ``run``...), else its implementations of its bases' stubs
        (``run_impl`` under a base's ``run_async``); never a method that dispatches a
        model-chosen tool (a registry handed over for its schemas is not itself a tool)."""
        entries = {f"{cls}.{m}" for m in TOOL_METHODS if f"{cls}.{m}" in self.functions}
        if not entries and not self.abstract(cls):
            entries = self._stub_implementations(cls)
        return entries - self.dispatching

    def _entries(self) -> dict[str, set[str]]:
        """The run methods of the tool classes, by the module that defines them (a base in
        another module may define the method a tool class inherits); built once."""
        if self._entry_map is None:
            self._entry_map = defaultdict(set)
            for cls in self.tools & self.classes.keys():
                for entry in self._class_entries(cls):
                    self._entry_map[self.module_of(entry)].add(entry)
        return self._entry_map

    def _stub_implementations(self, cls: str, via: str = "") -> set[str]:
        """``cls``'s implementations of its bases' stubs that run the tool, its own or
        inherited from a base between (``Ranker.call`` for a ``LengthRanker`` that overrides
        only ``score``): the ones frameworks call (``execute``...), else those ``via`` (the
        base method run) calls, else those the implementations do not call themselves (a
        hook ``call`` runs through ``self.score`` is a helper of the tool, not the tool)."""
        order = self._walk(cls, up=True)  # nearest first (``_hierarchy`` keeps no order)
        stubs = {
            m
            for base in order[1:]
            for m in self.classes.get(base, {"methods": []})["methods"]
            if self.functions.get(f"{base}.{m}", {"abstract": False})["abstract"]
        }
        found = {m: f for m in stubs if (f := self._implementation(order, m)) is not None}
        stubs = set(found)
        called = {r.rpartition(".")[2] for r in self.functions.get(via, {"calls": []})["calls"]}
        inner = {
            r.rpartition(":")[2].rpartition(".")[2]
            for f in found.values()
            for r in self.functions[f]["calls"]
            if r.startswith(("self:", "name:"))  # ``name:``: on ``self`` inside a lambda
        }
        chosen = (stubs & set(TOOL_METHODS)) or (stubs & called) or (stubs - inner) or stubs
        return {found[m] for m in chosen}

    def _implements_stub(self, method: str) -> bool:
        """Whether ``Class.meth`` implements a stub a base of its class declares."""
        owner, _, name = method.rpartition(".")
        return any(
            self.functions.get(f"{base}.{name}", {"abstract": False})["abstract"]
            for base in self._hierarchy(owner, up=True)
            if base != owner
        )

    def _implementation(self, order: list[str], method: str) -> str | None:
        """The first definition of ``method`` in a class's ``order`` (itself, then its bases)
        that is no stub: what an instance runs."""
        for cls in order:
            facts = self.functions.get(f"{cls}.{method}")
            if facts is not None:
                return None if facts["abstract"] else f"{cls}.{method}"
        return None

    def _run_targets(self, ref: str) -> set[str]:
        """What running ``ref`` on a tool object (one picked by name, or given the model's
        output) runs: the method and its overrides; a method of an abstract base stands for the
        concrete subclasses, whose tools are their implementations of the base's stubs (the
        base's own method is shared plumbing), unless it implements a stub of a base further
        up itself (a tool interface's ``call``: that is the tool, its hooks help it). Only the
        subclasses whose instances the call can be on count: a method the named class inherits
        runs that class's hooks, not those of the base's other subclasses."""
        if ref.startswith("self:"):  # a bound method handed over: that method is the tool
            return set(self.targets(ref))
        receiver = self.canonical(ref.rpartition(":")[2].rpartition(".")[0])
        inherited = set(self._hierarchy(receiver, up=True))
        found: set[str] = set()
        for target in self.targets(ref):
            owner = target.rpartition(".")[0]
            # a stub run stands for its overrides (among the targets already)
            template = self.abstract(owner) and not self.functions[target]["abstract"]
            template = template and not self._implements_stub(target)
            below = receiver if owner in inherited else owner
            hooks = self._hooks(below, target) if template else set()
            found |= hooks or {target}
        return found

    def _tools(self, key: str = "tools") -> frozenset[str]:
        found: set[str] = set()
        for summary in self._summaries:
            for name in summary[key]:  # type: ignore[literal-required]
                expanded = set(self._expand(name, set()))
                if name.startswith("output:"):
                    # a method that dispatches what it is given, or another model stage (it
                    # asks a model itself: text in, text out) is no tool run on the output
                    expanded -= self.dispatching | self.model
                found |= expanded
        return frozenset(
            t
            for t in found
            if t in self.classes or (t in self.functions and not self.functions[t]["abstract"])
        )

    def _derived_tools(self) -> frozenset[str]:
        """The run methods of project classes derived, through the project's own bases, from a
        framework's tool class (``class Search(ProjectTool)`` with ``ProjectTool(BaseTool)``:
        ``Search._run``); a class that names the framework's base itself is found where it is
        defined."""
        found: set[str] = set()
        for name, facts in self.classes.items():
            for base in TOOL_BASES.keys() & set(facts["bases"]):
                for derived in self._hierarchy(name, up=False)[1:]:
                    found.update(
                        f"{derived}.{m}"
                        for m in TOOL_BASES[base]
                        if f"{derived}.{m}" in self.functions
                    )
        return frozenset(found)

    def _dispatched(self, tools: frozenset[str]) -> frozenset[str]:
        """The functions of name->function tables whose dispatch helper a tool calls (a
        ``BaseTool._run`` forwarding to ``api.run(self.method, ...)``)."""
        helpers = {q: f for s in self.modules.values() for q, f in s["dispatchers"].items()}
        if not helpers:
            return frozenset()
        roots = set(tools) | {
            self.canonical(d) for s in self.modules.values() for d in s["defined"]
        }
        roots |= {f"{c}.{m}" for c in roots if c in self.classes for m in TOOL_METHODS}
        found: set[str] = set()
        for root in roots & self.functions.keys():
            for ref in self.functions[root]["calls"]:
                for helper in self.targets(ref) & helpers.keys():
                    found.update(t for f in helpers[helper] for t in self._expand(f, set()))
        return frozenset(t for t in found if t in self.functions)

    def _parameter_kinds(self) -> dict[str, dict[str, str]]:
        """``function -> {parameter: kind}`` from the kinds of the arguments callers pass."""
        found: dict[str, dict[str, str]] = defaultdict(dict)
        for summary in self.modules.values():
            for ref, index, kind in summary["arguments"]:
                target = self.canonical(ref)
                offset = 1 if target in self.classes else 0
                for func in self.targets(ref):
                    params = self.functions[func]["params"]
                    if offset or (
                        params[:1] == ["self"] and func.rpartition(".")[0] in self.classes
                    ):
                        position = index + 1
                    else:
                        position = index
                    if position < len(params):
                        self._bind(found[func], params[position], kind)
        self._through_parameters(found)
        return found

    def _bind(self, kinds: dict[str, str], param: str, kind: str) -> None:
        """The first kind callers pass a parameter, unless a later one matters where it does
        not (``@keep_trying`` over a model helper and over a string helper: the wrapper's
        ``func`` may be the model helper)."""
        known = kinds.get(param)
        if known is None or (not self.relevant(known) and self.relevant(kind)):
            kinds[param] = kind

    def _through_parameters(self, found: dict[str, dict[str, str]]) -> None:
        """A model-chosen name passed to a method of a parameter (``tools.call(item.name,
        ...)``, a ``param:`` ref) reaches that method of the class callers pass there."""
        for summary in self.modules.values():
            for ref, index, kind in summary["arguments"]:
                if not ref.startswith("param:"):
                    continue
                _, func, held = ref.split(":", 2)
                param, _, method = held.rpartition(".")
                passed = found.get(func, {}).get(param, "")
                if not passed.startswith("class:"):
                    continue
                for target in self.targets(f"type:{passed[len('class:') :]}.{method}"):
                    params = self.functions[target]["params"]
                    position = index + 1 if params[:1] == ["self"] else index
                    if position < len(params):
                        found[target].setdefault(params[position], kind)

    def relevant(self, kind: str, depth: int = 0) -> bool:
        """Whether knowing a value's kind can change a finding: a catalog kind (a model
        client, a guard), a function reaching a model or a limit, or a project class with such
        a method or such an attribute. Other kinds stay out of ``Env`` (they would only cause
        re-analysis)."""
        key = (kind, depth)
        known = self._relevant.get(key)
        if known is None:
            known = self._relevant[key] = self._is_relevant(kind, depth)
        return known

    def _is_relevant(self, kind: str, depth: int) -> bool:
        if kind.startswith("function:"):
            name = kind[len("function:") :]
            return name in self.model or name in self.limit
        if not kind.startswith("class:"):
            return True
        cls = self.canonical(kind[len("class:") :])
        facts = self.classes.get(cls)
        if facts is None or depth > 2:
            return False
        reach = self.model | self.limit
        if any(self.methods_of(cls, m, dynamic=True) & reach for m in self.method_names(cls)):
            return True
        return any(self.relevant(k, depth + 1) for k in facts["attrs"].values())

    def _kinds(self, module: str, refs: set[str]) -> frozenset[tuple[str, str, str]]:
        prefix = f"{module}." if module else ""
        found: set[tuple[str, str, str]] = set()
        for func in self._owners[bisect_left(self._owners, prefix) :]:
            if not func.startswith(prefix):
                break
            found |= {(func, n, k) for n, k in self.params[func].items() if self.relevant(k)}
        found |= self._imported_globals(module)
        found |= self._returns(refs)
        found |= self._sibling_classes(module)
        classes = {k[len("class:") :] for _, _, k in found if k.startswith("class:")}
        classes |= {r[len("type:") :].rpartition(".")[0] for r in refs if r.startswith("type:")}
        for cls in classes:
            facts = self.classes.get(self.canonical(cls))
            if facts:
                found |= {
                    (cls, attr, kind)
                    for attr, kind in facts["attrs"].items()
                    if self.relevant(kind)
                }
        return frozenset(found)

    def _returns(self, refs: set[str]) -> set[tuple[str, str, str]]:
        """``(ref, RETURNS, kind)``: what the functions and methods a module calls return."""
        found: set[tuple[str, str, str]] = set()
        for ref in refs:
            if ref.startswith("self:"):
                continue  # the module's own classes: ``Values`` sees what they return
            kinds = {self.functions[t]["returns"] for t in self.targets(ref)} - {""}
            if len(kinds) == 1 and self._returned_matters(kind := kinds.pop()):
                found.add((ref, RETURNS, kind))
        return found

    def _sibling_classes(self, module: str) -> set[tuple[str, str, str]]:
        """``(name, IS_CLASS, kind)``: the classes a module imports from another top-level
        package or script of the project (``from llm import Brain`` in a script,
        ``from assistant.tools import FileTools`` in ``main.py``), which ``Values`` cannot tell
        from a library's on its own (classes of its own package it can)."""
        found: set[tuple[str, str, str]] = set()
        root = module.partition(".")[0]
        script = "." not in module
        for target in self.modules[module]["imports"].values():
            cls = self.canonical(target)
            if cls not in self.classes or cls.partition(".")[0] == root:
                continue
            # a script's every class (what it builds and hands on is the app's wiring); a
            # package's only those that reach a model (a big tree imports classes across its
            # packages everywhere: ``BaseModel``)
            if script or self.relevant(CLASS + cls):
                found.add((target, IS_CLASS, CLASS + cls))
        return found

    def _returned_matters(self, kind: str) -> bool:
        """A returned client or model-chosen name, or an instance of a project class with a
        method that reaches a model (a limit passed through a factory is not followed)."""
        if not kind.startswith(CLASS):
            return self.relevant(kind)
        cls = self.canonical(kind[len(CLASS) :])
        return any(
            self.methods_of(cls, m, dynamic=True) & self.model for m in self.method_names(cls)
        )

    def method_names(self, cls: str) -> set[str]:
        """The names of the methods an instance of ``cls`` has: its own and its bases' (a
        subclass that only sets class attributes still has the base's ``call``)."""
        return {
            m
            for c in self._hierarchy(cls, up=True)
            if c in self.classes
            for m in self.classes[c]["methods"]
        }

    def _imported_globals(self, module: str) -> set[tuple[str, str, str]]:
        """Kinds of the module-level values of other modules that ``module`` imports (the
        module, or one of its names)."""
        found: set[tuple[str, str, str]] = set()
        for target in self.modules[module]["imports"].values():
            if target in self.modules:
                held = self.modules[target]["globals"]
                found |= {(target, n, k) for n, k in held.items() if self.relevant(k)}
                continue
            head, _, last = target.rpartition(".")
            kind = self.modules[head]["globals"].get(last) if head in self.modules else None
            if kind and self.relevant(kind):
                found.add((head, last, kind))
        return found

    def _builds(self, ref: str) -> bool:
        """Whether every function ``ref`` may run only builds a value (a formatter)."""
        targets = self.targets(ref)
        return bool(targets) and all(self.functions[t]["builds"] for t in targets)

    def module_of(self, qualname: str) -> str:
        """The module that defines a function, method or class."""
        head = qualname.rpartition(".")[0]
        return head.rpartition(".")[0] if head in self.classes else head

    # -- per module ---------------------------------------------------------------------------
    def env(self, module: str) -> Env:
        summary = self.modules.get(module)
        if summary is None:
            return EMPTY_ENV
        refs = {ref for f in summary["functions"].values() for ref in f["calls"]}
        model = {r for r in refs if self.reaches(r, self.model)}
        limit = {r for r in refs if self.reaches(r, self.limit)}
        builders = {r for r in refs if self._builds(r)}
        own = {t for t in self.tools if self.module_of(t) == module}
        own |= self._entries().get(module, set())
        gated = frozenset(t for t in self.gated if self.module_of(t) == module)
        turns = frozenset(r for r in refs if self.reaches(r, self.turns))
        called = frozenset(
            q for q in self.turns if q.startswith(f"{module}.") or not module if self.callers.get(q)
        )
        return Env(
            model=frozenset(model),
            limit=frozenset(limit),
            builders=frozenset(builders),
            tools=frozenset(own),
            gated=gated,
            turns=turns,
            called=called,
            kinds=self._kinds(module, refs),
            counting=self._counting(refs),
        )

    def _counting(self, refs: set[str]) -> frozenset[tuple[str, str, str]]:
        """What the methods ``refs`` run (resolved through the receiver's kind) step and
        compare of their own attributes: what every method a ref may run does."""
        found: set[tuple[str, str, str]] = set()
        for ref in refs:
            targets = [self.functions[t] for t in self.targets(ref)] if ":" in ref else []
            if targets:
                steps = set.intersection(*(set(t["steps"]) for t in targets))
                checks = set.intersection(*(set(t["checks"]) for t in targets))
                found.update((ref, "steps", attribute) for attribute in steps)
                found.update((ref, "checks", attribute) for attribute in checks)
        return frozenset(found)

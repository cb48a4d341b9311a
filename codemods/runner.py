"""Scan a project: discover, consult the cache, analyse the rest in parallel, resolve the
project index, re-analyse the modules whose environment it changed; keep going on errors.

Three phases (see ``docs/scan.md``): (1) every file that passes the textual prefilter is
analysed on its own, giving its findings and its summary; modules the summaries point to (tools
handed over, functions called in loops) are then analysed too, even without a prefilter match;
(2) the project index resolves the summaries across files; (3) a module whose environment
differs from the one it was analysed in is analysed again. Every step is cached per file by
content hash and environment digest, so a warm run reads no file and re-analyses nothing.
``scan_paths`` returns one ``FileResult`` per file, in path order, and never raises for a bad
file.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from fnmatch import fnmatch
from functools import partial
from pathlib import Path

from .analysis.catalog import TOOL_BASES
from .analysis.env import Env
from .analysis.flow import MODEL_NAME, MODEL_REPLY
from .analysis.project import ProjectIndex
from .analysis.summary import Summary
from .cache import Record, ScanCache, digest
from .config import Config
from .findings import FileResult
from .modules import (
    TEST_DIRS,
    is_test_path,
    module_name,
    namespace_names,
    source_roots,
    unique_names,
)
from .scanner import analyse_source

__all__ = ["Record", "discover", "project_envs", "scan_paths"]

_SKIP_DIRS = {"__pycache__", "node_modules"}
_PARALLEL_MIN = 64
_ROUNDS = 3
#: rounds of re-analysis in context: each lets a fact travel one more module (a factory's
#: return to a script, the script's argument to a class, the class's loop to the model)
_FINAL_ROUNDS = 6
#: allocations between young collections during a scan (CPython's default is 700)
_GC_YOUNG = 100_000
Progress = Callable[[int, int], None]


def _excluded(path: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch(path, p) or fnmatch(os.path.basename(path), p) for p in patterns)


def discover(
    paths: Iterable[str], exclude: tuple[str, ...] = (), *, include_tests: bool = False
) -> list[str]:
    """Python files under ``paths`` (hidden and build folders skipped, test code too unless
    ``include_tests``; see ``modules.is_test_path``), sorted, de-duplicated. A file named
    explicitly is always kept."""
    found: set[str] = set()
    for root in paths:
        if os.path.isfile(root):
            found.add(os.path.abspath(root))
            continue
        skip = _SKIP_DIRS if include_tests else _SKIP_DIRS | TEST_DIRS
        for folder, dirs, files in os.walk(root):
            # pruning test folders here is is_test_path's folder rule, without a call per file
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in skip]
            for name in files:
                if name.endswith(".py") and (include_tests or not is_test_path(name)):
                    found.add(os.path.abspath(os.path.join(folder, name)))
    return sorted(p for p in found if not _excluded(p, exclude))


Task = tuple[str, str, bool, Env | None]


def _work(
    config: Config, task: Task, sources: Mapping[str, bytes] | None = None
) -> tuple[Record, os.stat_result | None]:
    path, name, force, env = task
    try:
        data = sources[path] if sources and path in sources else Path(path).read_bytes()
        stat = None if sources and path in sources else os.stat(path)
    except OSError as exc:
        return Record(FileResult(path=path, error=f"cannot read: {exc.strerror or exc}")), None
    try:
        result, summary, env_digest = analyse_source(
            data, path, config, name=name, env=env, force=force
        )
    except Exception as exc:  # noqa: BLE001 - one file's crash must not stop the run
        result = FileResult(path=path, error=f"internal error: {type(exc).__name__}: {exc}")
        summary, env_digest = None, ""
    return Record(result, summary, env_digest, digest(data)), stat


def _rare_collections() -> None:
    # Each parse allocates hundreds of thousands of AST nodes that reference counting frees
    # (they form no cycles); at the default threshold the cyclic collector walks them thousands
    # of times per scan, about a sixth of a cold single-process scan.
    gc.set_threshold(_GC_YOUNG, *gc.get_threshold()[1:])


@contextmanager
def _few_collections() -> Iterator[None]:
    """Run the cyclic garbage collector rarely while a scan runs."""
    old = gc.get_threshold()
    _rare_collections()
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _analyse(
    tasks: list[Task], config: Config, jobs: int, sources: Mapping[str, bytes] | None = None
) -> Iterator[tuple[Record, os.stat_result | None]]:
    work = partial(_work, config, sources=sources)
    if jobs <= 1 or len(tasks) < _PARALLEL_MIN:
        yield from map(work, tasks)
        return
    chunk = max(1, min(64, len(tasks) // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs, initializer=_rare_collections) as pool:
        yield from pool.map(work, tasks, chunksize=chunk)


def _reaches_model(ref: str, index: ProjectIndex) -> bool:
    target = index.canonical(ref)
    if target in index.classes:
        return index.relevant(f"class:{target}")
    return not index.targets(ref).isdisjoint(index.model)


def _demanded(records: dict[str, Record], forced: set[str], index: ProjectIndex) -> set[str]:
    """Qualified names the summaries point to: tools handed to a model (and the collections
    that list them), functions of the same top-level package called in loops (where a
    bound may be enforced), by tools (where a dispatch helper may run more tools) or with a
    model-chosen tool name (where it may be dispatched), the project functions and classes
    anywhere handed something that reaches a model (``ReActAgent(make_model(cfg))``: where
    their loops call it) and the classes of the instances handed to one that does."""
    wanted: set[str] = set()
    for path, record in records.items():
        summary = record.summary
        if summary is None:
            continue
        wanted.update(summary["tools"])
        wanted.update(f for functions in summary["dispatchers"].values() for f in functions)
        root = summary["module"].partition(".")[0]
        # what loops call (a bound may be enforced there) and what tools call (a dispatch
        # helper whose table holds more tools)
        called = [*summary["looped"]]
        for tool in summary["defined"]:
            if tool in summary["functions"]:
                called += summary["functions"][tool]["calls"]
        for ref in called:
            name = ref.rpartition(":")[2]
            if name.partition(".")[0] == root:
                wanted.add(name)
        # and the functions handed a model-chosen tool name or a model's reply (a dispatch
        # may be there), in any module of the project
        wanted.update(
            ref.rpartition(":")[2]
            for ref, _, kind in summary["arguments"]
            if kind in (MODEL_NAME, MODEL_REPLY)
        )
        wanted.update(
            ref.rpartition(":")[2]
            for ref, _, kind in summary["arguments"]
            if _is_client(kind) or (kind.startswith("class:") and index.relevant(kind))
        )
        # and the instances built for a function or class that reaches a model
        # (``converse(client, FileTools(root))``: what its loop may call tools on)
        wanted.update(
            name
            for ref, _, names in summary["listed"]
            if _reaches_model(ref, index)
            for name in names
        )
        # the classes whose methods register what they decorate or are given
        # (``@registry.action(...)``, ``registry.add("ls", ls)``): their tables, and what
        # they are given (a function imported from a module no model touches)
        for method, functions in summary["registered"].items():
            if _class_attribute(method):
                wanted.add(method.rpartition(".")[0])
                wanted.update(functions)
        if path in forced:
            wanted.update(n for names in summary["collections"].values() for n in names)
    return {name.rpartition(":")[2] for name in wanted}


def importing(words: list[str], packages: Iterable[str] = ()) -> re.Pattern[bytes]:
    """An ``import``/``from`` line that names one of ``words`` (module names); with
    ``packages``, only an absolute import from one of them (``from agentx.model import ...``
    in a script outside the package)."""
    names = b"|".join(re.escape(w.encode()) for w in words)
    head = rb"(?m)^[ \t]*(?:from|import)[ \t]"
    roots = b"|".join(re.escape(p.encode()) for p in sorted(packages))
    if roots:
        head += rb"+(?:" + roots + rb")\b"
    return re.compile(head + rb"[^\n]*\b(?:" + names + rb")\b")


def _module_of(qualname: str, modules: set[str]) -> str:
    """The module among ``modules`` that defines ``qualname`` (empty when none does)."""
    head = qualname
    while head and head not in modules:
        head = head.rpartition(".")[0]
    return head


def _is_client(kind: str) -> bool:
    """A kind of value that makes model calls or registers tools (a client, a model function,
    a tool server), not a project class or function, a guard or a plain HTTP session."""
    plain = {"guardkit", "gated", "http"}
    return not kind.startswith(("class:", "function:")) and kind not in plain


def _reaching_names(index: ProjectIndex, summaries: list[Summary]) -> set[str]:
    """What reaches a model, as other modules would import it: model functions, classes with
    such a method (``C.__class__``, their own or inherited), classes whose bound methods are
    tools, and module-level clients and instances of such classes."""
    model = index.model
    names = set(model)
    for cls in index.classes:
        methods = index.method_names(cls)
        if any(not index.methods_of(cls, m, dynamic=True).isdisjoint(model) for m in methods):
            names.add(f"{cls}.__class__")
    # classes whose bound methods are handed over as tools (a subclass may override one)
    for summary in summaries:
        bound = [t for t in summary["tools"] if t.startswith(("self:", "type:", "output:"))]
        names |= {f"{t.partition(':')[2].rpartition('.')[0]}.__class__" for t in bound}

    # module-level values other modules import: clients (``from .llm import client``) and
    # instances of such classes (``planner = HostedProvider()`` in a config module)
    for summary in summaries:
        module = summary["module"]
        held = summary["globals"].items()
        names |= {f"{module}.{g}" for g, kind in held if _holds_reach(kind, index, names)}
    return names


def _holds_reach(kind: str, index: ProjectIndex, names: set[str]) -> bool:
    """A client, or an instance of a class among ``names`` (``C.__class__``)."""
    cls = kind.partition(":")[2] if kind.startswith("class:") else ""
    return _is_client(kind) or bool(cls and f"{index.canonical(cls)}.__class__" in names)


def _factories(index: ProjectIndex, summaries: list[Summary], names: set[str]) -> set[str]:
    """The functions that return a client or an instance of a class that reaches a model
    (``get_provider(name)``, ``make_client()``): their importers hold what reaches a model."""
    return {
        func
        for summary in summaries
        for func, facts in summary["functions"].items()
        if facts["returns"] and _holds_reach(facts["returns"], index, names)
    }


def _class_attribute(qualname: str) -> bool:
    """``pkg.mod.Registry.actions``: an attribute (or method) of a class, not a module-level
    name."""
    return qualname.rpartition(".")[0].rpartition(".")[2][:1].isupper()


def _parents(module: str) -> list[str]:
    """``a.b.c`` -> ``["a.b", "a"]``: the packages whose ``__init__`` holds the module."""
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]


def _modules_of(names: set[str], by_module: dict[str, str]) -> set[str]:
    found: set[str] = set()
    for name in names:
        head = name
        while head:
            if head in by_module:
                found.add(by_module[head])
                break
            head = head.rpartition(".")[0]
    return found


class _Run:
    """The state of one scan: records by path, cache and progress."""

    def __init__(
        self,
        files: list[str],
        config: Config,
        jobs: int,
        cache: ScanCache | None,
        sources: Mapping[str, bytes] | None = None,
    ):
        #: file contents that replace what is on disk (a fix's changes before they are written)
        self.sources = sources or {}
        self.config = replace(config, select=(), ignore=())
        self.jobs = jobs
        self.cache = cache
        names = namespace_names({path: module_name(path) for path in files}, self._read)
        self.names = unique_names(source_roots(names, self._read), self._read)
        self.records: dict[str, Record] = {}
        self._backward_done: set[str] = set()
        self._registrars_done: set[str] = set()
        self._builders_done: set[str] = set()
        self._methods_done: set[str] = set()
        #: the index of the records as they are now (``None`` once a run changed them)
        self._index: ProjectIndex | None = None

    def _by_module(self, paths: Iterable[str]) -> dict[str, str]:
        """Module name -> the first of ``paths`` that has it."""
        by_module: dict[str, str] = {}
        for path in paths:
            by_module.setdefault(self.names[path], path)
        return by_module

    def _read(self, path: str) -> bytes:
        return self.sources[path] if path in self.sources else Path(path).read_bytes()

    def index(self) -> ProjectIndex:
        """The project index of the summaries analysed so far."""
        if self._index is None:
            summaries = [r.summary for r in self.records.values() if r.summary is not None]
            self._index = ProjectIndex(summaries)
        return self._index

    def run(self, tasks: list[Task], progress: Progress | None = None) -> None:
        work = _analyse(tasks, self.config, self.jobs, self.sources)
        self._index = None
        for done, (record, stat) in enumerate(work, 1):
            path = record.result.path
            self.records[path] = record
            if self.cache is not None and stat is not None and record.digest:
                self.cache.store(record, stat)
            if progress is not None:
                progress(done, len(tasks))

    def lookup(self, path: str) -> Record | None:
        if self.cache is None:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        hit = self.cache.by_stat(path, stat)
        if hit is None and path in self.cache.entries:
            try:
                hit = self.cache.by_digest(path, stat, digest(Path(path).read_bytes()))
            except OSError:
                return None
        if (
            hit is not None
            and hit.summary is not None
            and hit.summary["module"] != self.names[path]
        ):
            return None  # analysed under another name (a folder since imported as a package)
        return hit

    def first_phase(self, files: list[str], progress: Progress | None) -> None:
        pending: list[Task] = []
        for path in files:
            hit = self.lookup(path)
            if hit is None:
                pending.append((path, self.names[path], False, None))
            else:
                self.records[path] = hit
        self.run(pending, progress)

    def _canonical(self, names: set[str]) -> set[str]:
        """``names`` and what they re-export to (``pkg.tools.search`` defined in
        ``pkg.tools.web``), through the ``__init__`` modules analysed so far."""
        index = self.index()
        return names | {index.canonical(n) for n in names}

    def expand(self, files: list[str]) -> None:
        """Analyse the modules the summaries point to (forward: tools, loop callees), then the
        modules of the same top-level package that import a module reaching a model
        (backward: loops that call into it), a few rounds each."""
        by_module = self._by_module(files)
        forced: set[str] = set()
        for _ in range(_ROUNDS):
            wanted = _modules_of(
                self._canonical(_demanded(self.records, forced, self.index())), by_module
            )
            todo = [p for p in sorted(wanted) if self.records[p].result.skipped]
            todo += self._importers_of_model_modules(files, by_module)
            todo += self._users_of_registrars(files)
            todo += self._builders_of_tool_classes(files)
            todo += self._methods_by_name(files)
            if not todo:
                return
            forced.update(todo)
            self.run([(p, self.names[p], True, None) for p in sorted(set(todo))])

    def _users_of_registrars(self, files: list[str]) -> list[str]:
        """Files of the same top-level package (for a top-level script: the scripts of its
        folder) that import a registering decorator (a project's ``@tool``): what they decorate
        is in the collection it fills, whoever reads it."""
        registrars = {
            d: r.summary["module"]
            for r in self.records.values()
            if r.summary is not None
            for d, filled in r.summary["registrars"].items()
            # an instance's own table (``Registry.actions``) is followed from the calls of its
            # methods (``_demanded``), not from every importer of the module
            if not all(_class_attribute(c) for c in filled)
        }
        new = {d: m for d, m in registrars.items() if d not in self._registrars_done}
        self._registrars_done.update(new)
        if not new:
            return []
        words = {d.rpartition(".")[2] for d in new} | {m.rpartition(".")[2] for m in new.values()}
        pattern = importing(sorted(w for w in words if w.isidentifier()))
        return self._skipped_matching(self._near(files, set(new.values())), pattern)

    def _builders_of_tool_classes(self, files: list[str]) -> list[str]:
        """Files, anywhere in the project (examples, apps), that import a class whose
        dispatch runs what it is built with (``arg:helpers:pkg.agent.Agent``): the tools are
        what they pass it; or a project class derived from a framework's tool class (their
        subclasses are tools)."""
        classes = {
            ref.rpartition(":")[2]
            for r in self.records.values()
            if r.summary is not None
            for ref in r.summary["tools"]
            if ref.startswith("arg:")
        }
        # and a project's own base of a framework's tool class: its subclasses are tools
        classes |= {
            name
            for r in self.records.values()
            if r.summary is not None
            for name, facts in r.summary["classes"].items()
            if TOOL_BASES.keys() & set(facts["bases"])
        }
        new = classes - self._builders_done
        self._builders_done.update(new)
        if not new:
            return []
        return self._skipped_matching(files, importing(sorted({c.rpartition(".")[2] for c in new})))

    def _methods_by_name(self, files: list[str]) -> list[str]:
        """Files of the same top-level package (for a top-level script: the scripts of its
        folder) that call, on any value, or define a method that reaches a model and that its
        name alone resolves (``convo.send_plan(task)`` on a parameter typed ``Any``: see
        ``ProjectIndex.by_name``), and those that define a method a dispatch runs on a table
        element of unknown kind (``registry[block.name].execute(...)``: its tools)."""
        index = self.index()
        called: dict[str, str] = {}  # method -> a module that makes it known
        defined: dict[str, str] = {}  # the same, for a name some other method spells
        for name in index.model:
            owner, _, method = name.rpartition(".")
            fresh = owner in index.classes and method not in self._methods_done
            if fresh and index.reaches(f"name:{method}", index.model):
                called[method] = index.module_of(name)
            elif fresh and index.by_name(method, roots=None):
                defined[method] = index.module_of(name)
        run: dict[str, str] = {
            ref[len("name:") :]: record.summary["module"]
            for record in self.records.values()
            if record.summary is not None
            for ref in record.summary["tools"]
            if ref.startswith("name:") and ref[len("name:") :] not in self._methods_done
        }
        self._methods_done.update(called, defined, run)
        # a method's definers matter either way: a name other classes share resolves to none
        # of them (``by_name``), and a protocol's stub of the name makes its importers call it
        found = self._near_matching(files, called, rb"(?:\.|\bdef\s+)")
        return found + self._near_matching(files, {**defined, **run}, rb"\bdef\s+")

    def _near_matching(self, files: list[str], methods: dict[str, str], before: bytes) -> list[str]:
        """The files not analysed yet, of the top-level packages of ``methods``' modules (or
        beside them, for a top-level script), where ``before`` and one of the methods' names
        and ``(`` are written."""
        if not methods:
            return []
        near = self._near(files, set(methods.values()))
        names = rb"(?:" + b"|".join(re.escape(m.encode()) for m in sorted(methods)) + rb")"
        return self._skipped_matching(near, re.compile(before + names + rb"\s*\("))

    def _near(self, files: list[str], modules: set[str]) -> list[str]:
        """The files of ``modules``' top-level packages, and for a top-level script the scripts
        of its folder."""
        roots = {m.partition(".")[0] for m in modules if "." in m}
        folders = {
            os.path.dirname(path)
            for path, record in self.records.items()
            if record.summary is not None and record.summary["module"] in modules
        }
        return [
            path
            for path in files
            if self.names[path].partition(".")[0] in roots
            or ("." not in self.names[path] and os.path.dirname(path) in folders)
        ]

    def _skipped_matching(self, files: list[str], pattern: re.Pattern[bytes]) -> list[str]:
        """The files of ``files`` not analysed yet whose text ``pattern`` matches."""
        found: list[str] = []
        for path in files:
            if not self.records[path].result.skipped:
                continue
            try:
                if pattern.search(self._read(path)):
                    found.append(path)
            except OSError:
                continue
        return found

    def _importers_of_model_modules(self, files: list[str], by_module: dict[str, str]) -> list[str]:
        """Files of the same top-level package (for a top-level script: the scripts of its
        folder) that import a module, function or class that reaches a model (a protocol or
        base class counts when an implementation does), and the package ``__init__`` modules
        above such a module (where protocols usually live)."""
        index = self.index()
        summaries = [r.summary for r in self.records.values() if r.summary is not None]
        names = _reaching_names(index, summaries)
        known = {r.summary["module"] for r in self.records.values() if r.summary is not None}
        modules = {_module_of(q, known) for q in names} - {""}
        targets = modules - self._backward_done
        # a factory's importers are found by the factory's name alone (its module may be a
        # package's shared ``utils``, imported everywhere for other things)
        factories = _factories(index, summaries, names) - self._backward_done
        self._backward_done.update(targets | factories)
        if not (targets or factories):
            return []
        found = [
            by_module[parent]
            for m in targets
            for parent in _parents(m)
            if parent in by_module and self.records[by_module[parent]].result.skipped
        ]
        words = {m.rpartition(".")[2] for m in targets}
        words |= {q.split(".")[-2] if q.endswith(".__class__") else "" for q in names}
        words |= {q.rpartition(".")[2] for q in names if q.rpartition(".")[0] in modules}
        words |= {f.rpartition(".")[2] for f in factories}
        listed = sorted(w for w in words - {"", "__class__"} if w.isidentifier())
        roots = {m.partition(".")[0] for m in (*targets, *factories)}
        # a top-level script's importers are the scripts of its folder
        folders = {
            os.path.dirname(by_module[m]) for m in targets if "." not in m and m in by_module
        }
        near = [
            path
            for path in files
            if ("." not in self.names[path] and os.path.dirname(path) in folders)
            or self.names[path].partition(".")[0] in roots
        ]
        # anywhere else in the project (``run.py`` beside the package, examples, apps): an
        # absolute import from the package
        packages = {m.partition(".")[0] for m in (*targets, *factories) if "." in m}
        far = [path for path in files if self.names[path].partition(".")[0] not in roots]
        outside = self._skipped_matching(far, importing(listed, packages)) if packages else []
        return found + self._skipped_matching(near, importing(listed)) + outside

    def final_phase(self) -> ProjectIndex:
        """Re-analyse modules whose environment changed, until none does (a module analysed in
        its environment can tell the index more: the kinds of what it passes on)."""
        index = ProjectIndex([])
        by_module = self._by_module(self.records)
        for _ in range(_FINAL_ROUNDS):
            index = self.index()
            redo: list[Task] = []
            for path, record in self.records.items():
                if record.summary is None:
                    continue
                env = index.env(self.names[path])
                if env.digest() != record.env:
                    redo.append((path, self.names[path], True, env))
            # modules that only a module analysed in its environment points to (the tools of a
            # dispatch whose model call sits in another module)
            wanted = _modules_of(self._canonical(_demanded(self.records, set(), index)), by_module)
            redo += [
                (p, self.names[p], True, index.env(self.names[p]))
                for p in sorted(wanted)
                if self.records[p].result.skipped
            ]
            if not redo:
                break
            self.run(redo)
        return index


def project_envs(
    files: list[str],
    config: Config,
    *,
    jobs: int = 0,
    cache: ScanCache | None = None,
    sources: Mapping[str, bytes] | None = None,
) -> dict[str, tuple[str, Env]]:
    """Module name and project environment of each analysed file (what ``fix`` needs to apply
    a cross-module finding in the module it belongs to); ``sources`` replaces the contents of
    some files (a fix's first changes, not yet written)."""
    state = _Run(files, config, jobs or os.cpu_count() or 1, cache, sources)
    with _few_collections():
        state.first_phase(files, None)
        state.expand(files)
        index = state.final_phase()
    return {
        path: (state.names[path], index.env(state.names[path]))
        for path, record in state.records.items()
        if record.summary is not None
    }


def scan_paths(
    files: list[str],
    config: Config,
    *,
    jobs: int = 0,
    cache: ScanCache | None = None,
    progress: Progress | None = None,
) -> list[FileResult]:
    """Scan ``files`` (absolute paths) as one project; ``jobs=0`` means one worker per CPU.

    Files are analysed (and cached) with every rule; ``select``/``ignore`` filter afterwards, so
    a run with a different selection reuses the cache and never sees a filtered entry.
    """
    state = _Run(files, config, jobs or os.cpu_count() or 1, cache)
    with _few_collections():
        state.first_phase(files, progress)
        # an unchanged project (same files, same contents) already has every record it needs
        unchanged = (
            cache is not None and cache.project and cache.fingerprint(files) == cache.project
        )
        if not unchanged:
            state.expand(files)
            state.final_phase()
    if cache is not None:
        fingerprint = cache.fingerprint(files)
        if fingerprint != cache.project:
            cache.project, cache.dirty = fingerprint, True
        cache.save()
    return [_selected(state.records[p].result, config) for p in files]


def _selected(result: FileResult, config: Config) -> FileResult:
    if not (config.select or config.ignore):
        return result
    return replace(result, findings=tuple(f for f in result.findings if config.enabled(f.rule)))

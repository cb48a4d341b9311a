"""Apply the codemods to source text: ``fix_source`` returns the new code or an error.

A fix runs in two steps. First, framework agents and MCP servers get guardkit's integration
where they are built (``AttachIntegrations``); then the project is analysed again, so a tool
or a run that an integration now gates (in any module) is not decorated or gated a second
time, and the other codemods fix what is left. ``fix_source`` does both on one module,
``fix_paths`` on a project.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from libcst.codemod import CodemodContext, TransformFailure, TransformSuccess, transform_module

from .analysis.env import Env
from .analysis.summary import qualified
from .config import Config
from .findings import Finding
from .import_style import ImportStyle, place_guardkit_imports
from .layout import fit
from .parsing import parse_module
from .policy_skeleton import framework_name
from .runner import project_envs
from .scanner import analyse_source
from .transforms import TRANSFORMS, AttachIntegrations, FindingCodemod
from .transforms.integration_plan import plan

__all__ = ["FixResult", "fix_paths", "fix_source", "integrate_source", "unified_diff"]

_PARALLEL_MIN = 8  # a file to fix costs ~0.1 s of libcst work, more than a worker's start-up
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True, kw_only=True)
class FixResult:
    """The outcome of fixing one file: the new code (equal to the old when nothing applied)."""

    path: str
    before: str
    after: str
    applied: tuple[str, ...] = ()
    error: str | None = None
    #: names of the tools the fix gated, with ``guardkit.tool()`` or a framework integration
    #: (for the policy skeleton)
    tools: tuple[str, ...] = ()
    #: findings no codemod fixes, reported as follow-ups
    followups: tuple[Finding, ...] = ()
    #: extras of the ``guardkit`` requirement the code needs now (``langchain``, ``mcp``...)
    extras: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.before != self.after


def _exposed(code: str, path: str, config: Config, name: str, env: Env | None) -> set[str]:
    """Names of the tools reported unguarded (GK201) in ``code``."""
    found = analyse_source(code.encode(), path, config, name=name, env=env, force=True)[0]
    return {f.symbol for f in found.findings if f.rule == "GK201"}


def integrate_source(
    code: str,
    path: str = "<module>",
    config: Config | None = None,
    *,
    name: str = "",
    env: Env | None = None,
    ungated: frozenset[str] = frozenset(),
) -> FixResult:
    """The first step of a fix: attach framework integrations where they remove a finding
    (``ungated``: qualified names of tools reported ungated elsewhere in the project)."""
    config = config or Config()
    sites = plan(code, path, config, name=name, env=env, ungated=ungated)
    if not sites:
        return FixResult(path=path, before=code, after=code)
    codemod = AttachIntegrations(
        CodemodContext(filename=path), config=config, env=env, module_name=name, sites=sites
    )
    result = transform_module(codemod, code)
    if isinstance(result, TransformFailure):
        message = f"AttachIntegrations failed: {result.error}"
        return FixResult(path=path, before=code, after=code, error=message)
    after = result.code if isinstance(result, TransformSuccess) else code
    return FixResult(
        path=path,
        before=code,
        after=after,
        applied=("AttachIntegrations",) if after != code else (),
        extras=tuple(sorted(codemod.extras)),
    )


def _fix_rest(
    code: str,
    path: str,
    config: Config,
    transforms: tuple[type[FindingCodemod], ...],
    name: str,
    env: Env | None,
) -> tuple[FixResult, set[str]]:
    """The second step: the finding-driven codemods, each on the output of the one before;
    also the names of the tools reported unguarded before it."""
    current = code
    applied: list[str] = []
    gated: set[str] = set()
    # A cheap ast pre-scan decides which codemods have work: each libcst pass costs a full parse.
    found = analyse_source(code.encode(), path, config, name=name, env=env, force=True)[0]
    exposed = {f.symbol for f in found.findings if f.rule == "GK201"}
    todo = {f.rule for f in found.findings if f.fixable}
    mended = {f.rule for f in found.findings}
    followups = tuple(f for f in found.findings if not f.fixable)
    for transform in transforms:
        if transform is AttachIntegrations or not (
            todo.intersection(transform.RULES) or mended.intersection(transform.MENDS)
        ):
            continue
        context = CodemodContext(filename=path)
        codemod = transform(context, config=config, env=env, module_name=name)
        result = transform_module(codemod, current)
        if isinstance(result, TransformFailure):
            message = f"{transform.__name__} failed: {result.error}"
            failed = FixResult(path=path, before=code, after=code, error=message)
            return replace(failed, followups=followups), exposed
        if isinstance(result, TransformSuccess):
            current = result.code
            applied.append(transform.__name__)
            gated |= codemod.gated
    if applied:
        # what is left is what the fixed code still has (a mended site is no follow-up; a
        # denial of a newly guarded tool that escapes its loop is one)
        after = analyse_source(current.encode(), path, config, name=name, env=env, force=True)[0]
        followups = tuple(f for f in after.findings if not f.fixable)
    tools = tuple(sorted(gated))
    done = FixResult(
        path=path,
        before=code,
        after=current,
        applied=tuple(applied),
        tools=tools,
        followups=followups,
    )
    return done, exposed


def _finish(
    first: FixResult, second: tuple[FixResult, set[str]], exposed: set[str], style: ImportStyle
) -> FixResult:
    """One result for both steps: imports placed, long new lines split, the tools the
    integrations gated (``exposed`` before the fix, not after the first step) added to those
    the decorator gated."""
    rest, left = second
    if rest.error is not None:
        return replace(rest, before=first.before, after=first.before)
    after = rest.after
    if first.applied or rest.applied:
        after = place_guardkit_imports(after, style, first.before)
        after = fit(first.before, after, style.line_length)
    module = parse_module(first.before) if exposed - left else None
    integrated = {framework_name(module, t) for t in exposed - left if module is not None}
    tools = sorted(integrated | set(rest.tools))
    return replace(
        rest,
        before=first.before,
        after=after,
        applied=first.applied + rest.applied,
        tools=tuple(tools),
        extras=first.extras,
    )


def fix_source(
    code: str,
    path: str = "<module>",
    config: Config | None = None,
    transforms: tuple[type[FindingCodemod], ...] = TRANSFORMS,
    *,
    name: str = "",
    env: Env | None = None,
    style: ImportStyle | None = None,
) -> FixResult:
    """Run the codemods on module ``name`` in the project environment ``env`` (on its own
    when ``None``); a failing codemod stops the file and is reported."""
    config = config or Config()
    first = FixResult(path=path, before=code, after=code)
    exposed: set[str] = set()
    if AttachIntegrations in transforms:
        exposed = _exposed(code, path, config, name, env)
        first = integrate_source(code, path, config, name=name, env=env)
        if first.error is not None:
            return first
    second = _fix_rest(first.after, path, config, transforms, name, env)
    return _finish(first, second, exposed, style or ImportStyle())


def unified_diff(result: FixResult) -> str:
    lines = difflib.unified_diff(
        result.before.splitlines(keepends=True),
        result.after.splitlines(keepends=True),
        fromfile=f"a/{result.path}",
        tofile=f"b/{result.path}",
    )
    return "".join(lines)


def _display(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


@dataclass(frozen=True, slots=True)
class _Survey:
    """A file before the fix: its source, or why it cannot be fixed; the tools reported
    unguarded in it, by name and by qualified name; its module-level collections of names."""

    code: str
    error: str | None = None
    exposed: frozenset[str] = frozenset()
    ungated: frozenset[str] = frozenset()
    collections: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _survey(
    config: Config, envs: dict[str, tuple[str, Env]], item: tuple[str, str | None]
) -> _Survey:
    path, code = item
    try:
        code = Path(path).read_text(encoding="utf-8") if code is None else code
    except (OSError, UnicodeDecodeError) as exc:
        return _Survey("", f"cannot read: {exc}")
    if path not in envs:
        return _Survey(code)
    try:
        parse_module(code, path)
    except SyntaxError as exc:
        return _Survey(code, f"cannot parse: {exc.msg}")
    name, env = envs[path]
    found, summary, _ = analyse_source(code.encode(), path, config, name=name, env=env, force=True)
    exposed = frozenset(f.symbol for f in found.findings if f.rule == "GK201")
    listed = summary["collections"] if summary else {}
    return _Survey(
        code,
        exposed=exposed,
        ungated=frozenset(qualified(name, t) for t in exposed),
        collections=tuple((k, tuple(v)) for k, v in listed.items()),
    )


def _ungated(surveys: list[_Survey]) -> frozenset[str]:
    """The project's ungated tools, and the collections that list one (a few levels deep:
    ``TOOLS = [*FILE_TOOLS, search]``)."""
    found: set[str] = set().union(*(s.ungated for s in surveys))
    collections = [c for s in surveys for c in s.collections]
    for _ in range(3):
        more = {name for name, listed in collections if found.intersection(listed)} - found
        if not more:
            break
        found |= more
    return frozenset(found)


def _integrate(
    config: Config,
    envs: dict[str, tuple[str, Env]],
    ungated: frozenset[str],
    item: tuple[str, _Survey],
) -> FixResult:
    path, survey = item
    shown = _display(path)
    if survey.error is not None or path not in envs:
        return FixResult(path=shown, before=survey.code, after=survey.code, error=survey.error)
    name, env = envs[path]
    return integrate_source(survey.code, shown, config, name=name, env=env, ungated=ungated)


def _fix_file(
    config: Config,
    envs: dict[str, tuple[str, Env]],
    style: ImportStyle,
    item: tuple[str, _Survey, FixResult],
) -> FixResult:
    path, survey, first = item
    if first.error is not None or path not in envs:
        return first
    name, env = envs[path]
    second = _fix_rest(first.after, first.path, config, TRANSFORMS, name, env)
    return _finish(first, second, set(survey.exposed), style)


class _Map(Protocol):
    """``map`` to a list, in this process or over a pool."""

    def __call__(self, func: Callable[[T], R], items: Iterable[T], /) -> list[R]: ...


@contextmanager
def _mapper(jobs: int, size: int) -> Iterator[_Map]:
    """``map`` over one process pool for every step of a fix (in-process for small ones)."""
    if jobs <= 1 or size < _PARALLEL_MIN:
        yield lambda func, items: list(map(func, items))
        return
    chunk = max(1, size // (jobs * 4))
    pool: Executor
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield lambda func, items: list(pool.map(func, items, chunksize=chunk))


def fix_paths(
    files: list[str],
    config: Config,
    *,
    jobs: int = 0,
    write: bool = False,
    style: ImportStyle | None = None,
) -> list[FixResult]:
    """Fix every file as one project; with ``write`` the changed files are rewritten. Imports
    are placed per ``style`` (the host's isort settings and line length).

    The fix runs again on what it made (in memory) until a round changes nothing, a few rounds
    at most: a change in one module can show the analysis more to fix in another (a dispatch
    whose tools were just decorated), and a second ``fix --write`` must find nothing to do."""
    jobs = jobs or os.cpu_count() or 1
    style = style or ImportStyle()
    current: dict[str, str] = {}
    results: list[FixResult] = []
    with _mapper(jobs, len(files)) as mapped:
        for _ in range(_ROUNDS):
            found = _fix_round(mapped, files, config, jobs, style, current)
            if results:
                found = [_merge(a, b) for a, b in zip(results, found, strict=True)]
            moved = {
                p: r.after
                for p, r in zip(files, found, strict=True)
                if r.after != current.get(p, r.before)
            }
            results = found
            if not moved:
                break
            current.update(moved)
    if write:
        for path, result in zip(files, results, strict=True):
            if result.changed and result.error is None:
                Path(path).write_text(result.after, encoding="utf-8")
    return results


#: rounds of a project fix at most
_ROUNDS = 3


def _fix_round(
    mapped: _Map,
    files: list[str],
    config: Config,
    jobs: int,
    style: ImportStyle,
    current: dict[str, str],
) -> list[FixResult]:
    """One fix of every file, from ``current`` (the sources changed so far) or the disk."""
    sources = {p: code.encode() for p, code in current.items()}
    envs = project_envs(files, config, jobs=jobs, sources=sources or None)
    surveys = mapped(partial(_survey, config, envs), [(p, current.get(p)) for p in files])
    items = list(zip(files, surveys, strict=True))
    firsts = mapped(partial(_integrate, config, envs, _ungated(surveys)), items)
    changed = {p: r.after.encode() for p, r in zip(files, firsts, strict=True) if r.changed}
    if changed:
        envs = project_envs(files, config, jobs=jobs, sources={**sources, **changed})
    work = partial(_fix_file, config, envs, style)
    return mapped(work, list(zip(files, surveys, firsts, strict=True)))


def _merge(earlier: FixResult, later: FixResult) -> FixResult:
    """Two rounds of one file's fix as one result (an error in the later keeps the earlier)."""
    if later.error is not None:
        return earlier
    return replace(
        later,
        before=earlier.before,
        applied=earlier.applied + tuple(a for a in later.applied if a not in earlier.applied),
        tools=tuple(sorted({*earlier.tools, *later.tools})),
        extras=tuple(sorted({*earlier.extras, *later.extras})),
    )

"""Apply the codemods to source text: ``fix_source`` returns the new code or an error."""

from __future__ import annotations

import ast
import difflib
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from libcst.codemod import CodemodContext, TransformFailure, TransformSuccess, transform_module

from .analysis.project import Env
from .config import Config
from .findings import Finding
from .import_style import ImportStyle, place_guardkit_import
from .runner import project_envs
from .scanner import analyse_source
from .transforms import TRANSFORMS, FindingCodemod

__all__ = ["FixResult", "fix_paths", "fix_source", "unified_diff"]

_PARALLEL_MIN = 8  # a file to fix costs ~0.1 s of libcst work, more than a worker's start-up


@dataclass(frozen=True, slots=True, kw_only=True)
class FixResult:
    """The outcome of fixing one file: the new code (equal to the old when nothing applied)."""

    path: str
    before: str
    after: str
    applied: tuple[str, ...] = ()
    error: str | None = None
    #: names of the tools the fix put behind ``guardkit.tool()`` (for the policy skeleton)
    tools: tuple[str, ...] = ()
    #: findings no codemod fixes, reported as follow-ups
    followups: tuple[Finding, ...] = ()

    @property
    def changed(self) -> bool:
        return self.before != self.after


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
    """Run each codemod in turn on module ``name`` in the project environment ``env`` (on its
    own when ``None``); a failing codemod stops the file and is reported."""
    config = config or Config()
    current = code
    applied: list[str] = []
    # A cheap ast pre-scan decides which codemods have work: each libcst pass costs a full parse.
    found = analyse_source(code.encode(), path, config, name=name, env=env, force=True)[0]
    todo = {f.rule for f in found.findings if f.fixable}
    followups = tuple(f for f in found.findings if not f.fixable)
    for transform in transforms:
        if not todo.intersection(transform.RULES):
            continue
        context = CodemodContext(filename=path)
        codemod = transform(context, config=config, env=env, module_name=name)
        result = transform_module(codemod, current)
        if isinstance(result, TransformFailure):
            message = f"{transform.__name__} failed: {result.error}"
            return FixResult(path=path, before=code, after=code, error=message, followups=followups)
        if isinstance(result, TransformSuccess):
            current = result.code
            applied.append(transform.__name__)
    if applied and not _imports_guardkit(code):
        current = place_guardkit_import(current, style or ImportStyle())
    tools: tuple[str, ...] = ()
    if "AddToolGuard" in applied:
        tools = tuple(
            f.symbol.rpartition(".")[2] for f in found.findings if f.rule == "GK201" and f.fixable
        )
    return FixResult(
        path=path,
        before=code,
        after=current,
        applied=tuple(applied),
        tools=tools,
        followups=followups,
    )


def _imports_guardkit(code: str) -> bool:
    return any(
        isinstance(node, ast.Import) and any(a.name == "guardkit" for a in node.names)
        for node in ast.parse(code).body
    )


def unified_diff(result: FixResult) -> str:
    lines = difflib.unified_diff(
        result.before.splitlines(keepends=True),
        result.after.splitlines(keepends=True),
        fromfile=f"a/{result.path}",
        tofile=f"b/{result.path}",
    )
    return "".join(lines)


def _fix_file(
    config: Config,
    envs: dict[str, tuple[str, Env]],
    style: ImportStyle,
    path: str,
    write: bool,
) -> FixResult:
    try:
        code = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return FixResult(path=path, before="", after="", error=f"cannot read: {exc}")
    shown = _display(path)
    if path not in envs:
        return FixResult(path=shown, before=code, after=code)
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return FixResult(path=shown, before=code, after=code, error=f"cannot parse: {exc.msg}")
    name, env = envs[path]
    result = fix_source(code, shown, config, name=name, env=env, style=style)
    if write and result.changed and result.error is None:
        Path(path).write_text(result.after, encoding="utf-8")
    return result


def _display(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def fix_paths(
    files: list[str],
    config: Config,
    *,
    jobs: int = 0,
    write: bool = False,
    style: ImportStyle | None = None,
) -> list[FixResult]:
    """Fix every file as one project; with ``write`` the changed files are rewritten. Imports
    are placed per ``style`` (the host's isort settings)."""
    jobs = jobs or os.cpu_count() or 1
    envs = project_envs(files, config, jobs=jobs)
    work = partial(_fix_file, config, envs, style or ImportStyle(), write=write)
    if jobs <= 1 or len(files) < _PARALLEL_MIN:
        return list(map(work, files))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(work, files, chunksize=max(1, len(files) // (jobs * 4))))

"""What ``guardkit fix`` does around the codemods: the host's project root and import style,
its dependency on guardkit, the policy skeleton, and the report of follow-ups and configuration.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .config import find_pyproject
from .dependencies import add_dependency, requirement
from .fixer import FixResult
from .parsing import parse_module
from .policy_skeleton import FILE_NAME, input_schemas, render_policy

__all__ = ["CONFIGURE", "finish", "project_root"]

#: how a fixed project configures its guard (read by ``guardkit.current_agent()``)
CONFIGURE = (
    "Configure the guard of the fixed project through the environment: GUARDKIT_AGENT (the "
    "agent's id), GUARDKIT_DB (a ledger path) or GUARDKIT_URL and GUARDKIT_TOKEN (a guardkit "
    f"server), and GUARDKIT_POLICY={FILE_NAME}. Its tests run each test under guardkit's "
    "guard_agent fixture (an in-memory guard that allows everything) with "
    'usefixtures = ["guard_agent"] in [tool.pytest.ini_options], or pytest -o '
    "usefixtures=guard_agent. Each finding's rule is explained by guardkit scan --explain "
    "CODE (GK302, say)."
)


def project_root(paths: tuple[str, ...], config_file: str | None) -> Path:
    """The folder of the project's ``pyproject.toml``, else the first path's folder."""
    if config_file:
        return Path(config_file).resolve().parent
    start = Path(paths[0] if paths else ".").resolve()
    start = start if start.is_dir() else start.parent
    found = find_pyproject(start)
    return found.parent if found is not None else start


def finish(
    results: list[FixResult],
    root: Path,
    *,
    write: bool,
    dependency: bool,
    max_turns: int,
    echo: Callable[[str], None],
) -> None:
    """After ``fix --write``: add the dependency and write the policy skeleton (the diff says
    it would); always: report follow-ups and how to configure the guard."""
    changed = [r for r in results if r.changed and r.error is None]
    if changed:
        if dependency:
            _dependencies(changed, root, write=write, echo=echo)
        _policy(results, root, write=write, max_turns=max_turns, echo=echo)
    followups = [(r.path, f) for r in results for f in r.followups]
    if followups:
        echo(f"Follow-ups guardkit fix could not make ({len(followups)}):")
        for path, finding in followups:
            echo(f"  {path}:{finding.line}:{finding.column + 1}: {finding.rule} {finding.message}")
    if changed:
        echo(CONFIGURE)


#: how the diff (the default) words what ``--write`` would also change; nothing is written
_ALSO = "With --write, guardkit fix would also"


def _dependencies(
    changed: list[FixResult], root: Path, *, write: bool, echo: Callable[[str], None]
) -> None:
    # each changed file's own project (a monorepo has several), with the extras of the
    # integrations attached in it
    projects: dict[Path, set[str]] = {}
    for r in changed:
        projects.setdefault(_project_of(Path(r.path).resolve(), root), set()).update(r.extras)
    for project, extras in sorted(projects.items()):
        edited = add_dependency(project, extras, write=write)
        if edited is not None:
            added = f"{requirement(extras)} to the dependencies in {_shown(edited)}."
            echo(f"Added {added}" if write else f"{_ALSO} add {added}")


def _policy(
    results: list[FixResult],
    root: Path,
    *,
    write: bool,
    max_turns: int,
    echo: Callable[[str], None],
) -> None:
    policy = root / FILE_NAME
    # a file the fix left alone may hold tools an integration elsewhere now gates
    tools = sorted({t for r in results if r.error is None for t in r.tools})
    if policy.exists():
        echo(f"Kept the existing {_shown(policy)}; tools gated now: {', '.join(tools)}.")
    elif write:
        schemas = {}
        for r in results:
            if r.error is None and r.tools:
                schemas.update(input_schemas(parse_module(r.after)))
        policy.write_text(render_policy(tools, max_turns, schemas), encoding="utf-8")
        echo(f"Wrote the policy skeleton {_shown(policy)} ({len(tools)} tools): review it.")
    else:
        echo(f"{_ALSO} write the policy skeleton {_shown(policy)} ({len(tools)} tools).")


def _project_of(path: Path, root: Path) -> Path:
    """The folder of the ``pyproject.toml`` or ``requirements.txt`` nearest above ``path``,
    else ``root``."""
    for folder in path.parents:
        if (folder / "pyproject.toml").is_file() or (folder / "requirements.txt").is_file():
            return folder
        if folder == root:
            break
    return root


def _shown(path: Path) -> str:
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel

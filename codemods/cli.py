"""``guardkit scan`` and ``guardkit fix`` as click commands (registered on the root group).

Exit status: 0 clean, 1 findings (scan) or changes pending (``fix --diff``), 2 usage errors or
files that could not be parsed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import click

from .cache import ScanCache
from .config import Config, find_pyproject, load_config
from .findings import FileResult
from .rules import RULES_BY_ID
from .runner import Progress, discover, scan_paths

__all__ = ["fix", "scan"]

_PROGRESS_MIN = 200


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def _load(
    paths: tuple[str, ...],
    config_file: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
) -> Config:
    start = Path(paths[0]) if paths else Path.cwd()
    pyproject = (
        Path(config_file)
        if config_file
        else find_pyproject(start if start.is_dir() else start.parent)
    )
    try:
        config = load_config(pyproject)
    except (OSError, ValueError) as exc:
        raise click.UsageError(f"bad configuration in {pyproject}: {exc}") from exc
    unknown = [r for r in (*select, *ignore) if not any(i.startswith(r) for i in RULES_BY_ID)]
    if unknown:
        raise click.UsageError(f"unknown rule id(s): {', '.join(unknown)}")
    return Config(
        select=select or config.select,
        ignore=(*config.ignore, *ignore),
        exclude=config.exclude,
        max_turns=config.max_turns,
        catalog=config.catalog,
    )


def _files(paths: tuple[str, ...], config: Config, include_tests: bool) -> list[str]:
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise click.UsageError(f"no such file or directory: {', '.join(missing)}")
    return discover(paths or (".",), config.exclude, include_tests=include_tests)


@contextmanager
def _progress(total: int, enabled: bool) -> Iterator[Progress | None]:
    if not (enabled and total >= _PROGRESS_MIN and sys.stderr.isatty()):
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress as Bar

    with Bar(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("scanning", total=total)

        def update(done: int, pending: int) -> None:
            bar.update(task, completed=total - pending + done)

        yield update


def _explain(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    rule = RULES_BY_ID.get(value.upper())
    if rule is None:
        raise click.BadParameter(f"unknown rule {value}; known: {', '.join(RULES_BY_ID)}")
    fixer = f" (guardkit fix: {rule.FIXED_BY})" if rule.FIXED_BY else ""
    click.echo(f"{rule.ID} {rule.name()}\n\n{rule.EXPLANATION}\n\nFix{fixer}: {rule.FIX}")
    ctx.exit(0)


def _render(results: list[FileResult], fmt: str) -> str:
    if fmt == "json":
        from .output.json_report import render_json

        return render_json(results)
    if fmt == "sarif":
        from .output.sarif import render_sarif

        return render_sarif(results)
    from .output.text import render_text

    return render_text(results)


_common = [
    click.argument("paths", nargs=-1, type=click.Path()),
    click.option("--select", multiple=True, help="Only these rule ids or prefixes (GK1,GK201)."),
    click.option("--ignore", multiple=True, help="Skip these rule ids or prefixes."),
    click.option("--config", "config_file", type=click.Path(dir_okay=False), help="pyproject.toml"),
    click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, help="Workers; 0: CPUs."),
    click.option(
        "--include-tests",
        is_flag=True,
        help="Also analyse test code (test_*.py, *_test.py, conftest.py, tests/ folders).",
    ),
]


def _with_common(func: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(_common):
        func = option(func)
    return func


@click.command("scan")
@_with_common
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]), default="text")
@click.option("--output", "-o", type=click.File("w"), default="-", help="Write the report here.")
@click.option("--no-cache", is_flag=True, help="Analyse every file, ignore the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=".guardkit_cache")
@click.option("--no-progress", is_flag=True, help="No progress bar, even on a terminal.")
@click.option(
    "--explain",
    metavar="RULE",
    callback=_explain,
    expose_value=False,
    is_eager=True,
    help="Explain a rule (e.g. GK101) and exit.",
)
def scan(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_file: str | None,
    jobs: int,
    include_tests: bool,
    fmt: str,
    output: IO[str],
    no_cache: bool,
    cache_dir: str,
    no_progress: bool,
) -> None:
    """Find unbounded model loops, ungated model calls and unguarded tools."""
    config = _load(paths, config_file, _split(select), _split(ignore))
    files = _files(paths, config, include_tests)
    cache = None if no_cache else ScanCache(Path(cache_dir), config.fingerprint())
    with _progress(len(files), not no_progress) as progress:
        results = scan_paths(files, config, jobs=jobs, cache=cache, progress=progress)
    output.write(_render(results, fmt))
    if any(r.error for r in results):
        sys.exit(2)
    sys.exit(1 if any(r.findings for r in results) else 0)


@click.command("fix")
@_with_common
@click.option("--diff/--write", default=True, help="Show a diff (default) or rewrite files.")
@click.option("--max-turns", type=click.IntRange(min=1), default=None, help="Loop bound to insert.")
@click.option(
    "--no-dependency", is_flag=True, help="Do not add guardkit to the project's dependencies."
)
def fix(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_file: str | None,
    jobs: int,
    include_tests: bool,
    diff: bool,
    max_turns: int | None,
    no_dependency: bool,
) -> None:
    """Insert guards: @guardkit.tool(), model_turn() gates and turn limits; with --write, also
    add guardkit to the dependencies and write a policy skeleton."""
    from .fix_report import finish, project_root
    from .fixer import fix_paths, unified_diff
    from .import_style import ImportStyle

    config = _load(paths, config_file, _split(select), _split(ignore))
    if max_turns is not None:
        config = Config(
            select=config.select,
            ignore=config.ignore,
            exclude=config.exclude,
            max_turns=max_turns,
            catalog=config.catalog,
        )
    root = project_root(paths, config_file)
    files = _files(paths, config, include_tests)
    style = ImportStyle.load(root)
    results = fix_paths(files, config, jobs=jobs, write=not diff, style=style)
    changed = [r for r in results if r.changed]
    for result in results:
        if result.error:
            click.echo(f"{result.path}: error: {result.error}", err=True)
        elif result.changed and diff:
            click.echo(unified_diff(result), nl=False)
    verb = "would change" if diff else "changed"
    click.echo(f"guardkit fix {verb} {len(changed)} of {len(results)} files.", err=True)
    echo = lambda text: click.echo(text, err=True)  # noqa: E731
    finish(
        results,
        root,
        write=not diff,
        dependency=not no_dependency,
        max_turns=config.max_turns,
        echo=echo,
    )
    if any(r.error for r in results):
        sys.exit(2)
    sys.exit(1 if diff and changed else 0)

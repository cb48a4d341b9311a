"""Lines per second of `guardkit scan` on a large tree, beside ruff, semgrep and bandit.

Usage:
    python benchmarks/scan_speed.py [TREE] [--tools-bin DIR] [--quick] [--no-bandit]

TREE defaults to the running interpreter's site-packages; it is copied into a temporary folder
first, so that no tool skips it for living under .venv/ or a git-ignored path (ruff's default
excludes and semgrep's git/.semgrepignore handling would otherwise scan nothing). guardkit is
measured single-process and
with --jobs 2, cold (empty cache) and warm (unchanged tree), each as a fresh process started the
way a user starts it. ruff, semgrep (one rule equivalent to GK101) and bandit are measured on the
same tree when found on PATH or in --tools-bin; otherwise the table says "not installed".
Baselines in-process: stdlib ast.parse over every file, libcst.parse_module over a sample.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

SEMGREP_RULE = """\
rules:
  - id: unbounded-model-loop
    languages: [python]
    severity: WARNING
    message: model call in a while True loop
    pattern: |
      while True:
        ...
        $CLIENT.messages.create(...)
        ...
"""


def python_files(tree: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [
            d for d in dirs if not d.startswith(".") and d not in {"__pycache__", "node_modules"}
        ]
        found += [Path(folder, f) for f in files if f.endswith(".py")]
    return found


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def find_tool(name: str, extra: Path | None) -> str | None:
    if extra is not None and (extra / name).exists():
        return str(extra / name)
    sibling = Path(sys.executable).parent / name
    return shutil.which(name) or (str(sibling) if sibling.exists() else None)


def baselines(files: list[Path], lines: int, sample: int) -> list[tuple[str, float, int]]:
    rows = []
    start = time.perf_counter()
    for path in files:
        with contextlib.suppress(SyntaxError, ValueError):
            ast.parse(path.read_bytes())
    rows.append(("stdlib ast.parse, all files (in-process)", time.perf_counter() - start, lines))
    import libcst

    subset = files[:sample]
    sub_lines = sum(p.read_bytes().count(b"\n") for p in subset)
    start = time.perf_counter()
    for path in subset:
        # libcst rejects some files (e.g. syntax newer than its grammar); skip them
        with contextlib.suppress(Exception):
            libcst.parse_module(path.read_bytes())
    rows.append(
        (
            f"libcst.parse_module, {len(subset)} files (in-process)",
            time.perf_counter() - start,
            sub_lines,
        )
    )
    return rows


def guardkit_rows(tree: Path, lines: int, work: Path) -> list[tuple[str, float, int]]:
    rows = []
    for jobs in (1, 2):
        cache = work / f"cache-j{jobs}"
        base = [sys.executable, "-m", "guardkit.codemods", "scan", str(tree), "--jobs", str(jobs)]
        cmd = [*base, "--cache-dir", str(cache), "--no-progress", "-o", os.devnull]
        rows.append((f"guardkit scan --jobs {jobs} (cold cache)", timed(cmd, work), lines))
        rows.append((f"guardkit scan --jobs {jobs} (warm cache)", timed(cmd, work), lines))
    return rows


def other_rows(
    tree: Path, lines: int, work: Path, tools_bin: Path | None, *, bandit: bool
) -> list[tuple[str, float | None, int]]:
    rows: list[tuple[str, float | None, int]] = []
    ruff = find_tool("ruff", tools_bin)
    # --exclude replaces ruff's default excludes (build/, dist/, site-packages/...) with a no-op
    cmd = [ruff or "", "check", "--no-cache", "--exit-zero", "--select", "E,F", "-q"]
    cmd += ["--exclude", "__none__", str(tree)]
    rows.append(("ruff check --select E,F (no cache)", timed(cmd, work) if ruff else None, lines))
    semgrep = find_tool("semgrep", tools_bin)
    rule = work / "rule.yaml"
    rule.write_text(SEMGREP_RULE)
    (work / ".semgrepignore").write_text("")  # in the cwd: no default ignore list
    cmd = [semgrep or "", "scan", "--config", str(rule), "--jobs", "2", "--metrics=off", "--quiet"]
    cmd += ["--disable-version-check", "--no-git-ignore", str(tree)]
    rows.append(("semgrep, one rule, --jobs 2", timed(cmd, work) if semgrep else None, lines))
    found = find_tool("bandit", tools_bin) if bandit else None
    cmd = [found or "", "-r", "-q", "-f", "json", "-o", os.devnull, str(tree)]
    label = "bandit -r (all plugins)" if bandit else "bandit (skipped: --no-bandit)"
    rows.append((label, timed(cmd, work) if found else None, lines))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=sysconfig.get_paths()["purelib"])
    parser.add_argument(
        "--tools-bin", type=Path, default=None, help="folder with ruff/semgrep/bandit"
    )
    parser.add_argument("--quick", action="store_true", help="skip the other tools")
    parser.add_argument("--no-bandit", action="store_true", help="skip bandit (minutes)")
    args = parser.parse_args()
    source = Path(args.tree).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tree = work / "tree"
        shutil.copytree(source, tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        files = python_files(tree)
        lines = sum(p.read_bytes().count(b"\n") for p in files)
        print(f"tree: {source} (copied)")
        print(f"files: {len(files)}  lines: {lines:,}  cpus: {os.cpu_count()}")
        print("(semgrep also reads .pyi files and skips files over 1 MB)\n", flush=True)
        rows: list[tuple[str, float | None, int]] = [*baselines(files, lines, 300)]
        rows += guardkit_rows(tree, lines, work)
        if not args.quick:
            rows += other_rows(tree, lines, work, args.tools_bin, bandit=not args.no_bandit)
    print(f"{'measurement':48} {'seconds':>9} {'lines/s':>12}")
    for name, seconds, counted in rows:
        if seconds is None:
            status = "skipped" if "skipped" in name else "not installed"
            print(f"{name:48} {status:>22}")
        else:
            print(f"{name:48} {seconds:9.2f} {counted / seconds:12,.0f}")
    print_ratios({name: seconds for name, seconds, _ in rows})


def print_ratios(seconds: dict[str, float | None]) -> None:
    """The targets of docs/scan.md, as ratios measured in this run (so machine load cancels)."""
    semgrep = seconds.get("semgrep, one rule, --jobs 2")
    parse = seconds.get("stdlib ast.parse, all files (in-process)")
    print()
    for jobs in (1, 2):
        cold = seconds.get(f"guardkit scan --jobs {jobs} (cold cache)")
        warm = seconds.get(f"guardkit scan --jobs {jobs} (warm cache)")
        if cold and semgrep:
            print(f"semgrep / guardkit cold --jobs {jobs}: {semgrep / cold:5.1f}x (target >= 3)")
        if cold and parse:
            print(f"guardkit cold --jobs {jobs} / ast.parse of the tree: {cold / parse:5.2f}")
        if warm is not None:
            print(f"guardkit warm --jobs {jobs}: {warm:.2f} s (target < 1 s)")


if __name__ == "__main__":
    main()

"""``guardkit fix --write`` on corpus checkouts: what is left, whether it compiles, whether it is
idempotent.

Usage (from the repository root):
    python benchmarks/corpus/fix_check.py --corpus /work/corpus [--split test] [--repo owner/name]

For each selected repository the checkout is copied to a temporary folder (the checkout itself is
never touched), ``guardkit fix --write`` runs on its scan targets, then ``guardkit scan``; the
table gives the GK101/GK201/GK202 findings left in reviewed files, whether every reviewed file
that fix changed still compiles, and how many files a second ``fix --write`` changes (idempotent:
none). Exit status 0 when every repository has nothing left, compiles and is idempotent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "corpus"

from .manifest import RepoEntry, load_manifest, verify_checkout
from .split import load_split

__all__ = ["main"]

RULES = ("GK101", "GK201", "GK202")
#: Folders no run of fix is judged by: version control, the scan's cache, bytecode.
_SKIP = frozenset({".git", ".guardkit_cache", "__pycache__"})


@dataclass(slots=True)
class Checked:
    repo: str
    changed: int = 0
    left: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    second_run: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not (self.left or self.broken or self.second_run or self.error)


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not _SKIP.intersection(p.relative_to(root).parts)
    }


def _guardkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guardkit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def check(entry: RepoEntry, checkout: Path, work: Path) -> Checked:
    result = Checked(entry.repo)
    copy = work / entry.dirname
    shutil.copytree(checkout, copy, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    targets = list(entry.scan)
    before = _digests(copy)
    first = _guardkit("fix", "--write", *targets, cwd=copy)
    if first.returncode not in (0, 1):
        lines = (first.stderr or first.stdout).strip().splitlines()
        result.error = f"fix exited {first.returncode}: {lines[-1] if lines else ''}"
        return result
    after = _digests(copy)
    changed = [p for p, h in after.items() if before.get(p) != h]
    result.changed = len(changed)
    for path in changed:
        if path.endswith(".py"):
            try:
                compile((copy / path).read_text(encoding="utf-8"), path, "exec")
            except SyntaxError as exc:
                result.broken.append(f"{path}:{exc.lineno}: {exc.msg}")
    scanned = _guardkit("scan", "--format", "json", *targets, cwd=copy)
    try:
        report = json.loads(scanned.stdout)
    except json.JSONDecodeError:
        result.error = f"scan printed no JSON: {scanned.stderr.strip()[-200:]}"
        return result
    for finding in report.get("findings", []):
        if finding["rule"] in RULES and finding["path"] in entry.files:
            result.left.append(f"{finding['rule']} {finding['path']}:{finding['line']}")
    _guardkit("fix", "--write", *targets, cwd=copy)
    again = _digests(copy)
    result.second_run = sorted(p for p, h in again.items() if after.get(p) != h)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fix_check.py", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, type=Path)
    parser.add_argument("--split", choices=("dev", "test", "both"), default="dev")
    parser.add_argument("--repo", action="append", default=[])
    args = parser.parse_args(argv)
    split = load_split()
    halves = ("dev", "test") if args.split == "both" else (args.split,)
    entries = [
        e
        for e in load_manifest()
        if split.half(e.repo) in halves and (not args.repo or e.repo in args.repo)
    ]
    results = []
    with tempfile.TemporaryDirectory(prefix="guardkit-fix-check-") as tmp:
        for entry in entries:
            folder = args.corpus / entry.dirname
            if verify_checkout(entry, folder)[0] != "ok":
                results.append(Checked(entry.repo, error="checkout missing or drifted"))
                continue
            results.append(check(entry, folder, Path(tmp)))
    width = max(len(r.repo) for r in results) if results else 10
    print(f"{'repository':{width}}  changed  left  broken  2nd-run  ok")
    for r in results:
        print(
            f"{r.repo:{width}}  {r.changed:7}  {len(r.left):4}  {len(r.broken):6}  "
            f"{len(r.second_run):7}  {'yes' if r.ok else 'NO'}"
        )
        again = [f"changed again: {p}" for p in r.second_run]
        for line in [*r.left, *r.broken, *again] + ([r.error] if r.error else []):
            print(f"    {line}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

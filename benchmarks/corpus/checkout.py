"""Materialise CORPUS/<owner>+<name> at the pinned commits from local mirrors or clones.

Usage:
    python benchmarks/corpus/checkout.py --mirrors DIR --corpus DIR [--repo owner/name ...]

A mirror of owner/name is looked for as DIR/<owner>+<name>/repo (the layout of a fetched
snapshot), DIR/<owner>+<name>, or DIR/<owner>+<name>.git; it may be bare or a plain clone, and
must contain the pinned commit. Snapshots that lack large files (over a size limit, LFS) are
handled: such paths are left out of the work tree through a sparse checkout, and it is an error
only when a reviewed file is among them. An existing checkout at the right commit is kept.
Exit status 0 when every selected repository verifies, 1 otherwise.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "corpus"

from .manifest import CorpusError, RepoEntry, load_manifest, verify_checkout

__all__ = ["find_mirror", "materialise", "main"]


class CheckoutError(RuntimeError):
    """A repository could not be checked out at its pinned commit."""


def _git(*args: str, cwd: Path | None = None, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise CheckoutError(f"git {' '.join(args[:3])}: {done.stderr.strip()[-300:]}")
    return done.stdout


def find_mirror(mirrors: Path, entry: RepoEntry) -> Path | None:
    """The first git repository (bare or not) found for ``entry`` under ``mirrors``."""
    for candidate in (
        mirrors / entry.dirname / "repo",
        mirrors / entry.dirname,
        mirrors / f"{entry.dirname}.git",
    ):
        if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
            return candidate
    return None


def _absent_paths(target: Path, commit: str) -> list[str]:
    """Paths at ``commit`` whose blobs the clone lacks (a snapshot without its large files)."""
    listing = _git("ls-tree", "-r", "-z", commit, cwd=target)
    blobs = []
    for record in listing.split("\0"):
        if record:
            meta, path = record.split("\t", 1)
            if meta.split()[1] == "blob":
                blobs.append((meta.split()[2], path))
    if not blobs:
        return []
    checked = _git(
        "cat-file", "--batch-check", cwd=target, stdin="".join(f"{sha}\n" for sha, _ in blobs)
    ).splitlines()
    return [
        path for (_, path), line in zip(blobs, checked, strict=True) if line.endswith("missing")
    ]


def _sparse_pattern(path: str) -> str:
    escaped = "".join("\\" + c if c in "*?[]!#\\ " else c for c in path)
    return f"!/{escaped}"


def materialise(entry: RepoEntry, mirrors: Path, corpus: Path) -> list[str]:
    """Check ``entry`` out under ``corpus``; return the paths left out of the work tree."""
    target = corpus / entry.dirname
    if target.is_dir() and verify_checkout(entry, target)[0] == "ok":
        return []
    if not target.exists():
        source = find_mirror(mirrors, entry)
        if source is None:
            raise CheckoutError(f"no mirror of {entry.repo} under {mirrors}")
        _git("clone", "--quiet", "--no-checkout", str(source), str(target))
    try:
        _git("cat-file", "-e", f"{entry.commit}^{{commit}}", cwd=target)
    except CheckoutError as exc:
        raise CheckoutError(f"{entry.repo}: commit {entry.commit} is not in the mirror") from exc
    absent = _absent_paths(target, entry.commit)
    reviewed = sorted(set(absent) & set(entry.files))
    if reviewed:
        raise CheckoutError(f"{entry.repo}: the mirror lacks reviewed files {reviewed[:3]}")
    if absent:
        patterns = "/*\n" + "".join(_sparse_pattern(p) + "\n" for p in absent)
        _git("sparse-checkout", "set", "--no-cone", "--stdin", cwd=target, stdin=patterns)
    _git(
        "-c",
        "advice.detachedHead=false",
        "checkout",
        "--quiet",
        "--force",
        entry.commit,
        cwd=target,
    )
    return absent


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="checkout.py", description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", required=True, type=Path, help="folder of git mirrors")
    parser.add_argument("--corpus", required=True, type=Path, help="folder to check out into")
    parser.add_argument("--repo", action="append", default=[], help="only this owner/name")
    parser.add_argument("--manifest", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        entries = load_manifest(args.manifest)
    except CorpusError as exc:
        print(f"checkout: {exc}", file=sys.stderr)
        return 1
    entries = [e for e in entries if not args.repo or e.repo in args.repo]
    args.corpus.mkdir(parents=True, exist_ok=True)
    failed = 0
    for entry in entries:
        try:
            absent = materialise(entry, args.mirrors, args.corpus)
        except CheckoutError as exc:
            print(f"{entry.repo}: FAILED: {exc}")
            failed += 1
            continue
        state, problems = verify_checkout(entry, args.corpus / entry.dirname)
        note = f" ({len(absent)} large files left out)" if absent else ""
        print(f"{entry.repo}: {state} at {entry.commit[:12]}{note}")
        for problem in problems[:5]:
            print(f"    {problem}")
        failed += state != "ok"
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

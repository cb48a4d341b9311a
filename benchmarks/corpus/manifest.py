"""Read ``manifest.toml`` and ``labels/*.toml`` into typed values; check a checkout against them.

Every problem is a ``CorpusError`` naming the file and entry, so a broken corpus fails loudly
instead of scoring against the wrong code.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

from .scoring import EXHAUSTIVE, RECALL_ONLY, Expect, Label, is_test_path

__all__ = [
    "CheckoutState",
    "CorpusError",
    "RepoEntry",
    "load_labels",
    "load_manifest",
    "sha256_file",
    "verify_checkout",
]

CORPUS_DIR = Path(__file__).resolve().parent
_SHA = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_EXPECT: tuple[Expect, ...] = ("flag", "clean", "either")
_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv"}


class CorpusError(ValueError):
    """The manifest or a label file is malformed or disagrees with itself."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RepoEntry:
    """One pinned repository: what was reviewed (``files``) and how to run its tests."""

    repo: str
    commit: str
    licence: str
    style: str
    scope: tuple[str, ...]
    exclude: tuple[str, ...]
    scan: tuple[str, ...]
    files: dict[str, str]
    has_tests: bool
    tests: str = ""
    notes: str = ""

    @property
    def dirname(self) -> str:
        """The checkout folder name: ``owner+name``."""
        return self.repo.replace("/", "+")

    def in_scope(self, path: str) -> bool:
        """A non-test Python file matched by ``scope`` and not by ``exclude`` (fnmatch, ``*``
        crosses ``/``)."""
        if not path.endswith(".py") or is_test_path(path):
            return False
        if any(fnmatchcase(path, pattern) for pattern in self.exclude):
            return False
        return any(fnmatchcase(path, pattern) for pattern in self.scope)


def _text(raw: dict[str, Any], key: str, where: str, *, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or (default is None and not value):
        raise CorpusError(f"{where}: '{key}' must be a non-empty string")
    return value


def _strings(
    raw: dict[str, Any], key: str, where: str, default: tuple[str, ...]
) -> tuple[str, ...]:
    value = raw.get(key, list(default))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CorpusError(f"{where}: '{key}' must be a list of strings")
    return tuple(value)


def _files(raw: dict[str, Any], where: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for item in raw.get("file", []):
        path = _text(item, "path", where)
        sha = _text(item, "sha256", f"{where} file {path}")
        if not _SHA.match(sha):
            raise CorpusError(f"{where} file {path}: sha256 must be 64 lowercase hex digits")
        if path in files:
            raise CorpusError(f"{where}: file {path} is listed twice")
        files[path] = sha
    return files


def _entry(raw: dict[str, Any], index: int) -> RepoEntry:
    where = f"manifest repo #{index + 1}"
    repo = _text(raw, "repo", where)
    where = f"manifest repo {repo}"
    commit = _text(raw, "commit", where)
    if not _COMMIT.match(commit):
        raise CorpusError(f"{where}: commit must be 40 lowercase hex digits")
    has_tests = raw.get("has_tests", False)
    if not isinstance(has_tests, bool):
        raise CorpusError(f"{where}: has_tests must be true or false")
    entry = RepoEntry(
        repo=repo,
        commit=commit,
        licence=_text(raw, "licence", where),
        style=_text(raw, "style", where),
        scope=_strings(raw, "scope", where, ()),
        exclude=_strings(raw, "exclude", where, ()),
        scan=_strings(raw, "scan", where, (".",)),
        files=_files(raw, where),
        has_tests=has_tests,
        tests=_text(raw, "tests", where, default=""),
        notes=_text(raw, "notes", where, default=""),
    )
    if not entry.scope:
        raise CorpusError(f"{where}: scope lists no pattern")
    stray = [p for p in entry.files if not entry.in_scope(p)]
    if stray:
        raise CorpusError(f"{where}: files outside the scope: {', '.join(stray[:5])}")
    return entry


def load_manifest(path: Path | None = None) -> list[RepoEntry]:
    """The repositories of ``manifest.toml`` (default: the one beside this module)."""
    source = path or CORPUS_DIR / "manifest.toml"
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CorpusError(f"cannot read {source}: {exc}") from exc
    entries = [_entry(raw, i) for i, raw in enumerate(data.get("repo", []))]
    names = [e.repo for e in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CorpusError(f"{source}: repositories listed twice: {', '.join(twice)}")
    return entries


def _label(raw: dict[str, Any], where: str, entry: RepoEntry) -> Label:
    rule = _text(raw, "rule", where)
    if rule not in EXHAUSTIVE + RECALL_ONLY:
        raise CorpusError(f"{where}: unknown rule {rule!r}")
    expect = _text(raw, "expect", where)
    if expect not in _EXPECT:
        raise CorpusError(f"{where}: expect must be one of {', '.join(_EXPECT)}")
    path = _text(raw, "path", where)
    if path not in entry.files:
        raise CorpusError(f"{where}: {path} is not a reviewed file of {entry.repo}")
    line, span = raw.get("line"), raw.get("span")
    if not isinstance(line, int) or not (
        isinstance(span, list) and len(span) == 2 and all(isinstance(n, int) for n in span)
    ):
        raise CorpusError(f"{where}: line must be an integer and span [start, end]")
    start, end = span
    if not 1 <= start <= line <= end:
        raise CorpusError(f"{where}: span {span} must hold line {line}")
    return Label(
        rule=rule,
        path=path,
        line=line,
        start=start,
        end=end,
        expect=expect,
        symbol=_text(raw, "symbol", where, default=""),
        why=_text(raw, "why", where),
        kind=_text(raw, "kind", where, default=""),
    )


def load_labels(entry: RepoEntry, folder: Path | None = None) -> list[Label]:
    """The labels of one repository from ``labels/<owner>+<name>.toml``."""
    source = (folder or CORPUS_DIR / "labels") / f"{entry.dirname}.toml"
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CorpusError(f"cannot read {source}: {exc}") from exc
    if data.get("repo") != entry.repo or data.get("commit") != entry.commit:
        raise CorpusError(f"{source}: repo/commit disagree with the manifest entry {entry.repo}")
    labels = [
        _label(raw, f"{source.name} label #{i + 1}", entry)
        for i, raw in enumerate(data.get("label", []))
    ]
    seen: set[tuple[str, str, int]] = set()
    for lab in labels:
        key = (lab.rule, lab.path, lab.line)
        if lab.expect == "flag" and key in seen:
            raise CorpusError(f"{source}: two flag labels for {lab.rule} at {lab.path}:{lab.line}")
        seen.add(key)
    return labels


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


CheckoutState = Literal["ok", "missing", "wrong-commit", "drifted"]


def _head(folder: Path) -> str | None:
    if not (folder / ".git").exists():
        return None
    done = subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def _python_files(folder: Path) -> list[str]:
    found = []
    for base, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        rel = Path(base).relative_to(folder)
        found += [(rel / n).as_posix() for n in names if n.endswith(".py")]
    return found


def verify_checkout(entry: RepoEntry, folder: Path) -> tuple[CheckoutState, list[str]]:
    """Whether ``folder`` holds the repository at the pinned commit with every reviewed file
    unchanged; the second value explains any difference."""
    if not folder.is_dir():
        return "missing", [f"no checkout at {folder}"]
    head = _head(folder)
    if head is not None and head != entry.commit:
        return "wrong-commit", [f"HEAD is {head or 'unreadable'}, manifest pins {entry.commit}"]
    problems = []
    for path, sha in sorted(entry.files.items()):
        target = folder / path
        if not target.is_file():
            problems.append(f"missing {path}")
        elif sha256_file(target) != sha:
            problems.append(f"changed {path}")
    unlisted = [p for p in _python_files(folder) if entry.in_scope(p) and p not in entry.files]
    problems += [f"unlisted in-scope file {p}" for p in sorted(unlisted)]
    return ("drifted" if problems else "ok"), problems

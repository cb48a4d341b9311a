"""A content-hash cache of scan records, so an unchanged file is never parsed twice.

One JSON file per cache directory holds, for each absolute path, its ``(mtime_ns, size)``, the
BLAKE2 digest of its bytes and its record: result, summary for the project index, and the digest
of the environment it was analysed in (the runner re-analyses it when the project gives it a
different one). A file whose stat is unchanged is not even read; one whose stat changed but
whose digest matches is not parsed. The cache is dropped whole when the analysis sources (hashed
at import) or the configuration's fingerprint change.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .analysis.summary import Summary
from .findings import FileResult

__all__ = ["ANALYZER_VERSION", "Record", "ScanCache", "digest"]

_FILE = "scan.json"
_HERE = Path(__file__).resolve().parent


def _analyzer_version() -> str:
    """A digest of the analysis sources: any change to the rules, or to which modules the runner
    analyses, invalidates every cache."""
    sources = sorted([*_HERE.glob("analysis/*.py"), *_HERE.glob("rules/*.py")])
    names = ("scanner.py", "runner.py", "suppress.py", "findings.py", "modules.py")
    sources += [_HERE / n for n in names]
    return digest(b"".join(p.read_bytes() for p in sources))


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


ANALYZER_VERSION = _analyzer_version()


@dataclass(frozen=True, slots=True)
class Record:
    """One file's analysis: its result, its summary (``None`` when not analysed) and the
    digest of the environment it was analysed in."""

    result: FileResult
    summary: Summary | None = None
    env: str = ""
    digest: str = ""


class ScanCache:
    """Load once, look up many times, save once (atomically)."""

    def __init__(self, directory: Path | None, salt: str) -> None:
        self.directory = directory
        self.salt = f"{ANALYZER_VERSION}:{salt}"
        self.entries: dict[str, list[Any]] = {}
        #: a digest of every file's content at the end of the last complete run
        self.project = ""
        self.dirty = False
        if directory is not None:
            with contextlib.suppress(OSError, ValueError):
                data = json.loads((directory / _FILE).read_text())
                if data.get("salt") == self.salt:
                    self.entries = data["entries"]
                    self.project = data.get("project", "")

    def by_stat(self, path: str, stat: os.stat_result) -> Record | None:
        entry = self.entries.get(path)
        if entry and entry[0] == stat.st_mtime_ns and entry[1] == stat.st_size:
            return self._record(path, entry)
        return None

    def by_digest(self, path: str, stat: os.stat_result, hexdigest: str) -> Record | None:
        entry = self.entries.get(path)
        if entry and entry[2] == hexdigest:
            entry[0], entry[1] = stat.st_mtime_ns, stat.st_size
            self.dirty = True
            return self._record(path, entry)
        return None

    def fingerprint(self, paths: list[str]) -> str:
        """A digest of the cached content digests of ``paths`` (empty if one is missing)."""
        digests = [self.entries[p][2] if p in self.entries else "" for p in paths]
        return "" if "" in digests else digest("\0".join([*paths, *digests]).encode())

    def store(self, record: Record, stat: os.stat_result) -> None:
        result = record.result
        if result.error is not None and result.error.startswith("internal"):
            return
        payload = result.to_dict() if (result.findings or result.error or result.skipped) else None
        entry = [stat.st_mtime_ns, stat.st_size, record.digest, payload, record.summary]
        self.entries[result.path] = [*entry, record.env]
        self.dirty = True

    def save(self) -> None:
        if self.directory is None or not self.dirty:
            return
        with contextlib.suppress(OSError):
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by guardkit scan\n*\n")
            tmp = self.directory / f"{_FILE}.{os.getpid()}.tmp"
            data = {"salt": self.salt, "project": self.project, "entries": self.entries}
            tmp.write_text(json.dumps(data))
            tmp.replace(self.directory / _FILE)

    @staticmethod
    def _record(path: str, entry: list[Any]) -> Record:
        payload = entry[3]
        if payload is None:
            result = FileResult(path=path, cached=True)
        else:
            result = FileResult.from_dict({**payload, "path": path}, cached=True)
        return Record(result, entry[4], entry[5], entry[2])

"""A content-hash cache of scan results, so an unchanged file is never parsed twice.

One JSON file per cache directory holds, for each absolute path, its ``(mtime_ns, size)``, the
BLAKE2 digest of its bytes and its result. A file whose stat is unchanged is not even read; one
whose stat changed but whose digest matches is not parsed. The cache is dropped whole when the
analyzer version or the configuration's fingerprint changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .findings import FileResult  # noqa: TID251

__all__ = ["ANALYZER_VERSION", "ScanCache", "digest"]

ANALYZER_VERSION = "1"
_FILE = "scan.json"


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class ScanCache:
    """Load once, look up many times, save once (atomically)."""

    def __init__(self, directory: Path | None, salt: str) -> None:
        self.directory = directory
        self.salt = f"{ANALYZER_VERSION}:{salt}"
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        if directory is not None:
            with contextlib.suppress(OSError, ValueError):
                data = json.loads((directory / _FILE).read_text())
                if data.get("salt") == self.salt:
                    self.entries = data["entries"]

    def by_stat(self, path: str, stat: os.stat_result) -> FileResult | None:
        entry = self.entries.get(path)
        if entry and entry[0] == stat.st_mtime_ns and entry[1] == stat.st_size:
            return self._result(path, entry[3])
        return None

    def by_digest(self, path: str, stat: os.stat_result, hexdigest: str) -> FileResult | None:
        entry = self.entries.get(path)
        if entry and entry[2] == hexdigest:
            entry[0], entry[1] = stat.st_mtime_ns, stat.st_size
            self.dirty = True
            return self._result(path, entry[3])
        return None

    def store(self, result: FileResult, stat: os.stat_result, hexdigest: str) -> None:
        if result.error is not None and result.error.startswith("internal"):
            return
        payload = result.to_dict() if (result.findings or result.error) else None
        self.entries[result.path] = [stat.st_mtime_ns, stat.st_size, hexdigest, payload]
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
            tmp.write_text(json.dumps({"salt": self.salt, "entries": self.entries}))
            tmp.replace(self.directory / _FILE)

    @staticmethod
    def _result(path: str, payload: dict[str, Any] | None) -> FileResult:
        if payload is None:
            return FileResult(path=path, cached=True)
        return FileResult.from_dict({**payload, "path": path}, cached=True)

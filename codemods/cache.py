"""A content-hash cache of scan results, so an unchanged file is never parsed twice.

One JSON file per cache directory holds, for each absolute path, its ``(mtime_ns, size)``, the
BLAKE2 digest of its bytes and its result. A file whose stat is unchanged is not even read; one
whose stat changed but whose digest matches is not parsed. The cache is dropped whole when the
analysis sources (hashed at import) or the configuration's fingerprint change.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .findings import FileResult

__all__ = ["ANALYZER_VERSION", "ScanCache", "digest"]

_FILE = "scan.json"
_HERE = Path(__file__).resolve().parent


def _analyzer_version() -> str:
    """A digest of the analysis sources: any change to the rules invalidates every cache."""
    sources = sorted([*_HERE.glob("analysis/*.py"), *_HERE.glob("rules/*.py")])
    sources += [_HERE / "scanner.py", _HERE / "suppress.py", _HERE / "findings.py"]
    return digest(b"".join(p.read_bytes() for p in sources))


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


ANALYZER_VERSION = _analyzer_version()


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

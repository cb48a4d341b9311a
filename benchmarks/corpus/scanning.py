"""Run a scanner over one checkout and reduce its findings to ``Reported`` values.

In-process through ``guardkit.codemods.scan`` by default; with a command (``--scan-cmd``) the
command is run in the checkout with the scan targets appended and must print guardkit's JSON
report (``{"findings": [{"path", "line", "rule", "symbol"}, ...], "errors": [...]}``), with
paths absolute or relative to the checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .scoring import Reported

__all__ = ["ScanError", "ScanRun", "scan_command", "scan_inprocess"]


class ScanError(RuntimeError):
    """The scanner could not be run or its output could not be read."""


@dataclass(slots=True)
class ScanRun:
    findings: list[Reported] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _relative(path: str, root: Path) -> str:
    absolute = Path(path) if os.path.isabs(path) else root / path
    try:
        return absolute.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _reported(raw: dict[str, Any], root: Path) -> Reported:
    return Reported(
        path=_relative(str(raw["path"]), root),
        line=int(raw["line"]),
        rule=str(raw["rule"]),
        symbol=str(raw.get("symbol", "")),
    )


def scan_inprocess(root: Path, targets: Sequence[str]) -> ScanRun:
    """``guardkit.codemods.scan`` over ``targets`` (relative to ``root``), default settings."""
    from guardkit.codemods import scan  # type: ignore[import-not-found,unused-ignore]

    run = ScanRun()
    for result in scan([str(root / t) for t in targets]):
        if result.error is not None:
            run.errors.append(f"{_relative(result.path, root)}: {result.error}")
        run.findings += [_reported(f.to_dict(), root) for f in result.findings]
    return run


def scan_command(command: Sequence[str], root: Path, targets: Sequence[str]) -> ScanRun:
    """Run ``command + targets`` in ``root`` and read guardkit's JSON report from stdout."""
    try:
        done = subprocess.run(
            [*command, *targets], cwd=root, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise ScanError(f"cannot run {command[0]}: {exc}") from exc
    try:
        report = json.loads(done.stdout)
        run = ScanRun(findings=[_reported(f, root) for f in report["findings"]])
    except (ValueError, KeyError, TypeError) as exc:
        tail = (done.stderr or done.stdout).strip()[-300:]
        raise ScanError(
            f"{' '.join(command)} (exit {done.returncode}) printed no JSON report: {tail}"
        ) from exc
    run.errors = [f"{_relative(e['path'], root)}: {e['error']}" for e in report.get("errors", [])]
    return run

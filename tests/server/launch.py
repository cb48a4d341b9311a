"""Start ``python -m guardkit.server`` as a real process and wait for its URL (one helper for all).

The process runs from its data directory, never from the checkout, so the ``guardkit`` it imports
is the installed one (editable or not) rather than the checkout's folder on ``sys.path``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def start_server_process(
    data_dir: Path,
    *args: str,
    env: dict[str, str] | None = None,
    stderr: int = subprocess.PIPE,
) -> tuple[subprocess.Popen[str], str]:
    """``guardkit.server --data-dir DATA_DIR --log-level warning ARGS``; returns (process, URL).

    ``GUARD_*`` variables of the test run are dropped; ``env`` adds the ones the test wants.
    """
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "guardkit.server", "--data-dir", str(data_dir)]
    proc = subprocess.Popen(
        [*command, "--log-level", "warning", *args],
        cwd=data_dir,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**environ, **(env or {})},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"on (http://\S+)", line)
    if match is None:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"server did not start: {line!r} {err}")
    proc.stdout.readline()  # where the admin token is
    return proc, match.group(1)

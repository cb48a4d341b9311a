import functools
import subprocess


def _lookup(ticket_id: str) -> str:
    return f"ticket {ticket_id}"


def _close(ticket_id: str, reason: str) -> str:
    return f"closed {ticket_id}: {reason}"


def _run(command: str, cwd: str) -> str:
    return subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True).stdout


HANDLERS = {
    "lookup": lambda ticket_id: _lookup(ticket_id),
    "close": _close,
    "run": functools.partial(_run, cwd="/srv"),
}

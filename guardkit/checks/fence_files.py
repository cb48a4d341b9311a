"""What a path-taking audit event changes on disk, resolved the way the kernel will resolve it.

The ``os``, ``shutil`` and ``open`` audit events carry each path as given and, for the ``*at()``
forms, the directory descriptor it is relative to (``-1`` when none). An operand is one of:

* a **file**: the file the path names after following symlinks (``open`` for writing,
  ``truncate``, ``chmod``, ``chown``, ``utime``, xattrs, the source of ``link``). Its real path and
  its own directory entry must lie under a write root, and a file with more than one hard link is
  refused: its other names may lie anywhere, and writing one writes them all;
* an **entry**: a name in a directory (``mkdir``, ``rmdir``, ``remove``, both sides of
  ``rename``/``replace``, the new name of ``symlink`` and ``link``, ``shutil.rmtree``...). The
  directory's real path must lie under a write root; the last component is not followed.

``os.open`` is the odd one out: its event does not carry ``dir_fd``. A relative path it opens for
writing must therefore pass against the working directory *and* every directory the process holds
open, the only bases the kernel could have used.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from guardkit.checks.paths import is_under

__all__ = ["OPERANDS", "file_problem", "open_problem", "operand_problem"]

_FILE, _ENTRY = "file", "entry"
#: event -> its operands: (index of the path, index of its dir_fd or None, kind).
OPERANDS: dict[str, tuple[tuple[int, int | None, str], ...]] = {
    "os.truncate": ((0, None, _FILE),),
    "os.chmod": ((0, 2, _FILE),),
    "os.chown": ((0, 3, _FILE),),
    "os.utime": ((0, 3, _FILE),),
    "os.chflags": ((0, None, _FILE),),
    "os.setxattr": ((0, None, _FILE),),
    "os.removexattr": ((0, None, _FILE),),
    "os.mkdir": ((0, 2, _ENTRY),),
    "os.rmdir": ((0, 1, _ENTRY),),
    "os.remove": ((0, 1, _ENTRY),),
    "os.rename": ((0, 2, _ENTRY), (1, 3, _ENTRY)),
    "os.symlink": ((1, 2, _ENTRY),),
    # A hard link to a file is a way to write it later: its source must be writable too.
    "os.link": ((0, 2, _FILE), (1, 3, _ENTRY)),
    "shutil.copyfile": ((1, None, _FILE),),
    "shutil.copymode": ((1, None, _FILE),),
    "shutil.copystat": ((1, None, _FILE),),
    "shutil.copytree": ((1, None, _ENTRY),),
    "shutil.move": ((0, None, _ENTRY), (1, None, _ENTRY)),
    "shutil.rmtree": ((0, 1, _ENTRY),),
    "shutil.unpack_archive": ((1, None, _ENTRY),),
    "shutil.make_archive": ((0, None, _ENTRY),),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def fd_path(fd: int) -> str | None:
    """The path an open descriptor names (Linux ``/proc``, macOS ``F_GETPATH``), or None."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    if sys.platform == "darwin":  # pragma: no cover - the suite runs on Linux
        import fcntl

        try:
            return os.fsdecode(fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024))).rstrip("\0")
        except OSError:
            return None
    return None


def _open_directories() -> list[str] | None:
    """Every directory this process holds a descriptor on; None when that can't be known."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    found = []
    for name in names:
        target = fd_path(int(name))
        if target is not None and target.startswith("/") and os.path.isdir(target):
            found.append(target)
    return found


def _base(dir_fd: Any) -> str | None:
    if dir_fd is None or (isinstance(dir_fd, int) and dir_fd < 0):
        return os.getcwd()
    return fd_path(dir_fd) if isinstance(dir_fd, int) else None


def _entry(path: str) -> str:
    """The real path of ``path``'s directory joined with its last component (not followed)."""
    head, tail = os.path.split(path.rstrip(os.sep) or os.sep)
    if tail in ("", ".", ".."):
        return os.path.realpath(path)
    return os.path.join(os.path.realpath(head), tail)


def _outside(path: str, roots: Sequence[str]) -> bool:
    return not any(is_under(path, root) for root in roots)


def file_problem(path: str, roots: Sequence[str]) -> str | None:
    """Why writing the file at absolute ``path`` is refused, or None."""
    real = os.path.realpath(path)
    for where in (real, _entry(path)):
        if _outside(where, roots):
            return f"{where}: outside the write roots"
    try:
        info = os.stat(real)
    except OSError:
        return None  # not there yet: creating it is writing its entry, checked above
    if not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1:
        return f"{real}: it has {info.st_nlink} hard links, and the others may be anywhere"
    return None


def _descriptor_problem(fd: int, roots: Sequence[str]) -> str | None:
    path = fd_path(fd)
    if path is None:
        return f"descriptor {fd}: which file it names can't be told here"
    if not path.startswith("/"):
        return None  # a pipe, socket or anonymous inode: no file to protect
    if _outside(path, roots):
        return f"{path}: outside the write roots"
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1:
        return f"{path}: it has {info.st_nlink} hard links, and the others may be anywhere"
    return None


def _text(path: Any) -> str | None:
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        return None


def _judge(text: str, bases: Iterable[str], kind: str, roots: Sequence[str]) -> str | None:
    for base in bases:
        full = os.path.join(base, text)
        why = file_problem(full, roots) if kind == _FILE else _entry_problem(full, roots)
        if why is not None:
            return why
    return None


def _entry_problem(path: str, roots: Sequence[str]) -> str | None:
    where = _entry(path)
    return f"{where}: outside the write roots" if _outside(where, roots) else None


def operand_problem(path: Any, dir_fd: Any, kind: str, roots: Sequence[str]) -> str | None:
    """Why one operand of an event is refused, or None."""
    if path is None:
        return None  # e.g. unpack_archive's default extract_dir: its writes raise ``open``
    if isinstance(path, int):
        return _descriptor_problem(path, roots)
    text = _text(path)
    if text is None:
        return f"{path!r}: not a path"
    if os.path.isabs(text):
        return _judge(text, ["/"], kind, roots)
    base = _base(dir_fd)
    if base is None:
        return f"{text}: relative to descriptor {dir_fd}, which names no directory seen here"
    return _judge(text, [base], kind, roots)


def open_problem(args: tuple[Any, ...], roots: Sequence[str]) -> str | None:
    """The ``open`` event (``open()``, ``io.open``, ``os.open``): refused when writing outside."""
    path, mode, flags = args[0], args[1], args[2]
    writing = (isinstance(mode, str) and any(ch in mode for ch in "wax+")) or (
        isinstance(flags, int) and flags & _WRITE_FLAGS
    )
    if not writing or isinstance(path, int):
        # An integer is a descriptor opened earlier; opening it was checked then (if fenced).
        return None
    text = _text(path)
    if text is None:
        return f"{path!r}: not a path"
    if mode is not None or os.path.isabs(text):
        return _judge(text, [os.getcwd()], _FILE, roots)
    # ``os.open``: its event leaves out ``dir_fd``, so judge against every possible base.
    directories = _open_directories()
    if directories is None:
        return f"{text}: a relative os.open whose directory can't be told here"
    return _judge(text, [os.getcwd(), *directories], _FILE, roots)

"""Path checks: resolve an argument the way the OS will and keep it under allowed roots.

Lexical checks lose to ``os.path.join("/safe", "/etc/passwd")``, prefix matches (``/safe_evil``)
and symlinks (CVE-2025-53110 and CVE-2025-53109 in the reference filesystem MCP server). So each
value is made absolute against ``base`` (an absolute value replaces it, as ``os.path.join`` does),
resolved with ``os.path.realpath`` (symlinks, ``..``, ``/proc/self/root`` and ``/dev/fd`` links),
compared component-wise with ``os.path.commonpath`` against each root's own real path, and matched
against the denied globs. ``/proc``, ``/dev`` and ``/sys`` are refused unless a root names them.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from guardkit.checks._rules import as_strings
from guardkit.decisions import Denial, DenyCode
from guardkit.errors import PolicyError

__all__ = ["PathRule", "check_path", "folds_at", "is_under", "resolve_path"]

_PSEUDO_ROOTS = ("/proc", "/dev", "/sys")
#: Filesystems that fold case (and, on macOS, Unicode normalisation) by default.
_FOLDS = sys.platform in ("darwin", "win32")


@dataclass(frozen=True, slots=True, kw_only=True)
class PathRule:
    """Where a path argument may point.

    >>> PathRule(allow=["/srv/reports"], deny=["*.pem", "*/.git/*"], must_exist=True)
    """

    #: Roots the resolved path must lie under (each resolved itself at check time).
    allow: Sequence[str]
    #: Globs (``fnmatch``, ``*`` crosses ``/``) the resolved path must not match; a glob with
    #: no ``/`` is also matched against the file name alone.
    deny: Sequence[str] = ()
    #: The path must exist when the call is made.
    must_exist: bool = False
    #: The tool writes here: the runtime hook lets it open files for writing under ``allow``.
    write: bool = False
    #: Directory relative values are joined to (the working directory if None).
    base: str | None = None

    def __post_init__(self) -> None:
        for name in ("allow", "deny"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError(f"PathRule.{name} is a list of strings, not one string")
            object.__setattr__(self, name, tuple(os.fspath(item) for item in value))
        if not self.allow:
            raise ValueError("PathRule.allow needs at least one root")

    @classmethod
    def from_policy(cls, data: Any, where: str) -> PathRule:
        """Read ``paths.<arg>`` from a policy's tool section."""
        if not isinstance(data, Mapping):
            raise PolicyError([(where, "must be a table/object")])
        unknown = set(data) - {"allow", "deny", "must_exist", "write", "base"}
        if unknown:
            raise PolicyError([(f"{where}.{sorted(unknown)[0]}", "unknown field")])
        flags = {key: data.get(key, False) for key in ("must_exist", "write")}
        if not all(isinstance(flag, bool) for flag in flags.values()):
            raise PolicyError([(where, "must_exist and write are true or false")])
        base = data.get("base")
        if base is not None and not isinstance(base, str):
            raise PolicyError([(f"{where}.base", "must be a string")])
        return cls(
            allow=as_strings(data.get("allow"), f"{where}.allow"),
            deny=as_strings(data.get("deny", ()), f"{where}.deny"),
            base=base,
            **flags,
        )


@functools.lru_cache(maxsize=512)
def folds_at(root: str) -> bool:
    """Whether the filesystem under ``root`` folds case: by platform, or probed on the root.

    A case-insensitive mount on Linux (vfat, an ext4 ``casefold`` directory, SMB) answers for
    the root's name with its case swapped; that probe is made once per root.
    """
    if _FOLDS:
        return True
    head, tail = os.path.split(root.rstrip(os.sep))
    swapped = tail.swapcase()
    if not tail or swapped == tail:
        return False
    try:
        return os.path.samefile(root, os.path.join(head, swapped))
    except OSError:
        return False


def _fold(path: str, folds: bool = _FOLDS) -> str:
    return unicodedata.normalize("NFC", path).casefold() if folds else path


def is_under(path: str, root: str) -> bool:
    """Whether normalised absolute ``path`` is ``root`` or inside it, component-wise."""
    folds = folds_at(root)
    path, root = _fold(path, folds), _fold(root, folds).rstrip(os.sep) or os.sep
    if root == os.sep:
        return path.startswith(os.sep)
    return path == root or path.startswith(root + os.sep)


def _joined(value: Any, rule: PathRule) -> str:
    """The absolute (not yet resolved) path; ValueError when ``value`` is no usable path."""
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"expected a path, got {type(value).__name__}")
    text = os.fsdecode(os.fspath(value))
    if not text or "\x00" in text:
        raise ValueError("empty path or NUL byte")
    return os.path.join(rule.base if rule.base is not None else os.getcwd(), text)


def resolve_path(value: Any, rule: PathRule) -> str:
    """The real path the OS would open for ``value``; ValueError/OSError when it can't be told."""
    return os.path.realpath(_joined(value, rule), strict=rule.must_exist)


def _candidates(value: Any) -> list[Any]:
    # A value that starts with ``~`` names one file if the tool passes it to ``open`` and another
    # if it calls ``expanduser`` first: both must pass.
    if isinstance(value, str) and value.startswith("~"):
        return [value, os.path.expanduser(value)]
    return [value]


def _problem(value: Any, rule: PathRule) -> tuple[str | None, str | None]:
    """``(resolved, None)`` when allowed, ``(resolved or None, why)`` otherwise."""
    try:
        resolved = resolve_path(value, rule)
    except (ValueError, OSError) as exc:
        return None, f"cannot resolve {value!r}: {exc}"
    # POSIX normpath keeps a leading "//"; the kernel treats it as "/".
    lexical = "/" + os.path.normpath(_joined(value, rule)).lstrip("/")
    roots = [os.path.realpath(root) for root in rule.allow]
    for pseudo in _PSEUDO_ROOTS:
        if (is_under(lexical, pseudo) or is_under(resolved, pseudo)) and not any(
            is_under(root, pseudo) for root in roots
        ):
            return resolved, f"{value!r} goes through {pseudo}"
    if not any(is_under(resolved, root) for root in roots):
        return resolved, f"{value!r} resolves to {resolved}, outside the allowed roots"
    name = os.path.basename(resolved)
    for glob in rule.deny:
        if fnmatch.fnmatchcase(_fold(resolved), _fold(glob)) or (
            "/" not in glob and fnmatch.fnmatchcase(_fold(name), _fold(glob))
        ):
            return resolved, f"{value!r} resolves to {resolved}, which matches denied {glob!r}"
    return resolved, None


def check_path(
    argument: str, value: Any, rule: PathRule, resolved: dict[str, Any]
) -> Denial | None:
    """Check one argument's value (or each item of a list); records resolved paths in place."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    found: list[str] = []
    for item in values:
        for candidate in _candidates(item):
            path, why = _problem(candidate, rule)
            if path is not None:
                found.append(path)
            if why is not None:
                return Denial(
                    reason={
                        "code": DenyCode.PATH_DENIED.value,
                        "argument": argument,
                        "path": path,
                        "message": why,
                    }
                )
    resolved[argument] = found[0] if len(found) == 1 else found
    return None

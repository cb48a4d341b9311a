"""Where a file sits in a project: its dotted module name, and whether it is test code.

``is_test_path`` is the one rule for "test module" that ``guardkit scan`` (tests are excluded
unless ``--include-tests``) and the pytest plugin's tool discovery share: a ``conftest.py``, a
file named like pytest's default ``python_files`` (``test_*.py``, ``*_test.py``), or any file
under a folder named ``tests`` or ``test`` below the scanned root.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from functools import lru_cache

__all__ = ["TEST_DIRS", "is_test_path", "module_name", "namespace_names", "unique_names"]

#: folder names whose contents are test code
TEST_DIRS = frozenset({"tests", "test"})


def is_test_path(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``path`` is test code (relative to ``root`` when given, so a project that lives
    under a folder called ``tests`` is not all test code).

    >>> is_test_path("pkg/tests/helpers.py"), is_test_path("pkg/agent.py")
    (True, False)
    """
    text = os.fspath(path).replace(os.sep, "/")
    if root is not None:
        base = os.fspath(root).replace(os.sep, "/").rstrip("/") + "/"
        if text.startswith(base):
            text = text[len(base) :]
    folder, _, name = text.rpartition("/")
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    return any(part in TEST_DIRS for part in folder.split("/"))


@lru_cache(maxsize=4096)
def _package_of(folder: str) -> tuple[str, ...]:
    """The dotted package a folder is: one with an ``__init__.py``, or a folder without one
    inside such a package (an implicit namespace subpackage, importable as ``pkg.sub``); empty
    for any other folder."""
    parent = os.path.dirname(folder)
    if parent == folder:
        return ()
    if os.path.isfile(os.path.join(folder, "__init__.py")):
        return (*_package_of(parent), os.path.basename(folder))
    above = _package_of(parent)
    return (*above, os.path.basename(folder)) if above else ()


def module_name(path: str) -> str:
    """The name a file is imported by: its packages (folders with ``__init__.py``) and stem.

    A file outside any package is a top-level module named by its stem, as a script's
    siblings see it.
    """
    folder, file = os.path.split(os.path.abspath(path))
    stem = file[:-3] if file.endswith(".py") else file
    parts = _package_of(folder)
    if stem == "__init__":
        return ".".join(parts) or os.path.basename(folder)
    return ".".join((*parts, stem))


def namespace_names(names: Mapping[str, str], read: Callable[[str], bytes]) -> dict[str, str]:
    """``names`` (path -> module name) with the files of a plain folder that the project imports
    as a package renamed to ``folder.stem``: a folder without ``__init__.py`` is an implicit
    namespace package (PEP 420) of whatever imports it so (``from os_computer_use.config import
    model`` beside ``os_computer_use/config.py``), not a folder of scripts. A module of the
    folder's own name keeps that import."""
    modules = set(names.values())
    folders: dict[bytes, list[str]] = {}
    for path, name in names.items():
        folder = os.path.dirname(path)
        base = os.path.basename(folder)
        plain = not os.path.isfile(os.path.join(folder, "__init__.py"))
        loose = "." not in name and base not in modules  # ``import agent`` of agent.py wins
        if plain and loose and base.isidentifier() and base.isascii():
            folders.setdefault(base.encode(), []).append(path)
    if not folders:
        return dict(names)
    words = b"|".join(re.escape(f) for f in sorted(folders))
    pattern = re.compile(
        rb"(?m)^[ \t]*(?:from[ \t]+(" + words + rb")[ \t]*(?:\.|import\b)"
        rb"|import[ \t]+(" + words + rb")\.)"
    )
    imported: set[bytes] = set()
    for path in names:
        try:
            source = read(path)
        except OSError:
            continue
        for match in pattern.finditer(source):
            imported.add(match.group(1) or match.group(2))
            if imported >= folders.keys():
                break
    renamed = dict(names)
    for package in imported:
        for path in folders[package]:
            renamed[path] = f"{package.decode()}.{names[path]}"
    return renamed


def source_roots(names: Mapping[str, str], read: Callable[[str], bytes]) -> dict[str, str]:
    """``names`` (path -> module name) with the modules of a top-level package renamed from
    inside it when its own files import them so (``from utils.llm_connection import ...`` in
    ``pilot/helpers/convo.py``, beside ``pilot/utils/llm_connection.py`` and with no top-level
    ``utils``): the app runs from that folder (its ``sys.path[0]``), whatever ``__init__.py``
    it holds for its tests. Only a dotted import of one of the package's own modules counts
    (``import json`` never re-roots a package that has a ``json.py``)."""
    modules = set(names.values())
    tops = {n.partition(".")[0] for n in modules}
    inner: dict[str, set[str]] = {}
    for name in modules:
        head, _, rest = name.partition(".")
        if "." in rest and rest.partition(".")[0] not in tops | _STDLIB:
            inner.setdefault(head, set()).add(rest)
    rooted: set[str] = set()
    for path, name in names.items():
        package = name.partition(".")[0]
        if package not in inner or package in rooted:
            continue
        try:
            source = read(path)
        except OSError:
            continue
        found = _DOTTED_IMPORT.findall(source)
        if any(m.decode() in inner[package] for pair in found for m in pair if m):
            rooted.add(package)
    renamed = dict(names)
    taken = set(modules)
    for path, name in names.items():
        head, _, rest = name.partition(".")
        if head in rooted and rest and rest not in taken:
            renamed[path] = rest
    return renamed


#: ``from a.b import`` / ``import a.b``: the dotted module an absolute import names
_DOTTED_IMPORT = re.compile(
    rb"(?m)^[ \t]*(?:from[ \t]+([A-Za-z_]\w*(?:\.\w+)+)[ \t]+import\b"
    rb"|import[ \t]+([A-Za-z_]\w*(?:\.\w+)+))"
)
_STDLIB = frozenset(sys.stdlib_module_names)


def unique_names(names: Mapping[str, str], read: Callable[[str], bytes]) -> dict[str, str]:
    """``names`` (path -> module name) with the loose scripts that share a name (``main.py``
    in each example folder) renamed apart (``main@<folder>``) unless a script of their own
    folder imports them by it (``from main import app``: a script's imports find its
    siblings): each is its own entry point, and what one hands a model is not another's."""
    paths: dict[str, list[str]] = {}
    for path, name in names.items():
        if "." not in name:
            paths.setdefault(name, []).append(path)
    shared = {n: p for n, p in paths.items() if len(p) > 1 and n.isidentifier()}
    if not shared:
        return dict(names)
    words = b"|".join(re.escape(n.encode()) for n in sorted(shared))
    pattern = re.compile(
        rb"(?m)^[ \t]*(?:from[ \t]+(" + words + rb")[ \t]+import\b"
        rb"|import[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*(" + words + rb")\b)"
    )
    folders = {os.path.dirname(p) for group in shared.values() for p in group}
    imported: set[tuple[str, str]] = set()
    for path in names:
        folder = os.path.dirname(path)
        if folder not in folders:
            continue
        try:
            source = read(path)
        except OSError:
            continue
        imported |= {(folder, (m[1] or m[2]).decode()) for m in pattern.finditer(source)}
    renamed = dict(names)
    for name, group in shared.items():
        for path in group:
            folder = os.path.dirname(path)
            if (folder, name) not in imported:
                renamed[path] = f"{name}@{folder.replace('.', '_')}"
    return renamed

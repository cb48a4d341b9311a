"""Add guardkit to the dependencies of the project ``guardkit fix`` changed.

In order of preference: ``[project].dependencies`` in ``pyproject.toml`` (unless listed as
``dynamic``), ``[tool.poetry.dependencies]``, ``requirements.txt``. The file is edited as text
(one line or one array element added) so its formatting and comments are kept. The requirement
carries the extras of the framework integrations the fix attached, and is pinned to the running
guardkit's minor version, which wrote the code (``guardkit[langchain]>=0.1``); when guardkit is
already listed, only the extras it lacks are added to that entry.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from guardkit._version import __version__

__all__ = ["PIN", "add_dependency", "requirement"]

_NAME = re.compile(r"^\s*guardkit\b", re.IGNORECASE)
#: a guardkit requirement line or string: its extras, and what follows them
_ENTRY = re.compile(
    r"^(?P<name>\s*guardkit\s*)(?:\[(?P<extras>[^\]]*)\])?(?P<rest>.*)$", re.I | re.S
)


#: the version the fixed code was written for: this guardkit's ``X.Y`` (``>=0.1``)
PIN = ">=" + ".".join(__version__.split(".")[:2])


def requirement(extras: Iterable[str] = ()) -> str:
    """``guardkit>=X.Y``, or ``guardkit[langchain,mcp]>=X.Y`` with extras."""
    names = sorted(set(extras))
    return (f"guardkit[{','.join(names)}]" if names else "guardkit") + PIN


def _listed(entries: Any) -> bool:
    return isinstance(entries, (list, dict)) and any(_NAME.match(str(e)) for e in entries)


def _with_extras(entry: str, extras: set[str]) -> str:
    """A listed requirement string with the missing ``extras`` added (unchanged if none)."""
    found = _ENTRY.match(entry)
    if found is None:
        return entry
    have = {e.strip() for e in (found["extras"] or "").split(",") if e.strip()}
    if extras <= have:
        return entry
    return f"{found['name'].rstrip()}[{','.join(sorted(have | extras))}]{found['rest']}"


def _add_to_array(text: str, extras: set[str]) -> str | None:
    """``dependencies = [...]`` inside ``[project]``, with one more element."""
    section = re.search(r"(?m)^\[project\]\s*$", text)
    if section is None:
        return None
    end = re.search(r"(?m)^\[", text[section.end() :])
    stop = section.end() + end.start() if end else len(text)
    found = re.search(r"(?m)^dependencies\s*=\s*\[", text[section.end() : stop])
    if found is None:
        header = section.end()
        return f'{text[:header]}\ndependencies = ["{requirement(extras)}"]{text[header:]}'
    start = section.end() + found.end()
    close = _closing_bracket(text, start)
    if close < 0:
        return None
    inside = text[start:close]
    # the host's own quotes: 'single' where its entries use them
    quote = "'" if re.match(r"\s*'", inside) else '"'
    entry = f"{quote}{requirement(extras)}{quote}"
    if "\n" not in inside:
        sep = ", " if inside.strip() else ""
        body = inside.rstrip().rstrip(",")
        return f"{text[:start]}{body}{sep}{entry}]{text[close + 1 :]}"
    indent = re.search(r"\n([ \t]+)\S", inside)
    pad = indent.group(1) if indent else "    "
    body = inside.rstrip()
    comma = "" if body.endswith(",") or not body.strip() else ","
    return f"{text[:start]}{body}{comma}\n{pad}{entry},\n{text[close:]}"


def _closing_bracket(text: str, start: int) -> int:
    """Index of the ``]`` closing the array that starts at ``start`` (strings, with their own
    brackets as in ``"crewai[tools]"``, and comments skipped); -1 when there is none."""
    quote = ""
    index = start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\" and quote == '"':
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline
        elif char == "]":
            return index
        index += 1
    return -1


def _add_to_poetry(text: str, extras: set[str]) -> str | None:
    section = re.search(r"(?m)^\[tool\.poetry\.dependencies\]\s*$", text)
    if section is None:
        return None
    value = f'"{PIN}"'
    if extras:
        listed = ", ".join(json.dumps(e) for e in sorted(extras))
        value = f'{{version = "{PIN}", extras = [{listed}]}}'
    # last in the table, where a new dependency goes (``python`` stays first)
    following = re.search(r"(?m)^\[", text[section.end() :])
    end = section.end() + following.start() if following else len(text)
    body = text[section.end() : end].rstrip()
    rest = text[section.end() + len(body) :] or "\n"
    return f"{text[: section.end()]}{body}\nguardkit = {value}{rest}"


def _extend_listed(text: str, entries: list[str], extras: set[str]) -> str | None:
    """``text`` with the listed guardkit requirement given the ``extras`` it lacks."""
    entry = next((e for e in entries if _NAME.match(e)), None)
    if entry is None or _with_extras(entry, extras) == entry:
        return None
    for quote in ('"', "'"):
        if f"{quote}{entry}{quote}" in text:
            new = f"{quote}{_with_extras(entry, extras)}{quote}"
            return text.replace(f"{quote}{entry}{quote}", new, 1)
    return None


def _parses_with_guardkit(text: str) -> bool:
    """Never write a file the next reader cannot parse, or that does not list guardkit."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    project = data.get("project", {})
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies")
    return _listed(project.get("dependencies")) or _listed(poetry)


def add_dependency(root: Path, extras: Iterable[str] = (), *, write: bool = True) -> Path | None:
    """Add guardkit (with ``extras``) to the project at ``root``; the file changed, or
    ``None``. With ``write=False`` nothing is written: the file that would change, or ``None``."""
    planned = _planned(root, set(extras))
    if planned is None:
        return None
    path, text = planned
    if write:
        path.write_text(text, encoding="utf-8")
    return path


def _planned(root: Path, wanted: set[str]) -> tuple[Path, str] | None:
    """The file to change and its new text, or ``None`` when nothing needs to change."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            data = {}  # not ours to repair: fall through to requirements.txt
        project = data.get("project", {})
        poetry = data.get("tool", {}).get("poetry", {}).get("dependencies")
        changed = None
        if _listed(project.get("dependencies")) or _listed(poetry):
            listed = project.get("dependencies")
            if isinstance(listed, list):
                changed = _extend_listed(text, [str(e) for e in listed], wanted)
            if changed is None:
                return None
        elif project and "dependencies" not in project.get("dynamic", []):
            changed = _add_to_array(text, wanted)
        elif poetry is not None:
            changed = _add_to_poetry(text, wanted)
        if changed is not None and _parses_with_guardkit(changed):
            return pyproject, changed
    requirements = root / "requirements.txt"
    if requirements.is_file():
        text = requirements.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        listed_at = next((i for i, line in enumerate(lines) if _NAME.match(line)), None)
        if listed_at is not None:
            if _with_extras(lines[listed_at], wanted) == lines[listed_at]:
                return None
            lines[listed_at] = _with_extras(lines[listed_at], wanted)
            return requirements, "".join(lines)
        newline = "" if not text or text.endswith("\n") else "\n"
        return requirements, f"{text}{newline}{requirement(wanted)}\n"
    return None

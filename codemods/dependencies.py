"""Add guardkit to the dependencies of the project ``guardkit fix`` changed.

In order of preference: ``[project].dependencies`` in ``pyproject.toml`` (unless listed as
``dynamic``), ``[tool.poetry.dependencies]``, ``requirements.txt``. The file is edited as text
(one line or one array element added) so its formatting and comments are kept; nothing is done
when guardkit is already listed.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["add_dependency"]

_NAME = re.compile(r"^\s*guardkit\b", re.IGNORECASE)
_REQUIREMENT = '"guardkit"'


def _listed(entries: Any) -> bool:
    return isinstance(entries, (list, dict)) and any(_NAME.match(str(e)) for e in entries)


def _add_to_array(text: str) -> str | None:
    """``dependencies = [...]`` inside ``[project]``, with one more element."""
    section = re.search(r"(?m)^\[project\]\s*$", text)
    if section is None:
        return None
    end = re.search(r"(?m)^\[", text[section.end() :])
    stop = section.end() + end.start() if end else len(text)
    found = re.search(r"(?m)^dependencies\s*=\s*\[", text[section.end() : stop])
    if found is None:
        header = section.end()
        return f"{text[:header]}\ndependencies = [{_REQUIREMENT}]{text[header:]}"
    start = section.end() + found.end()
    close = _closing_bracket(text, start)
    if close < 0:
        return None
    inside = text[start:close]
    if "\n" not in inside:
        sep = ", " if inside.strip() else ""
        body = inside.rstrip().rstrip(",")
        return f"{text[:start]}{body}{sep}{_REQUIREMENT}]{text[close + 1 :]}"
    indent = re.search(r"\n([ \t]+)\S", inside)
    pad = indent.group(1) if indent else "    "
    body = inside.rstrip()
    comma = "" if body.endswith(",") or not body.strip() else ","
    return f"{text[:start]}{body}{comma}\n{pad}{_REQUIREMENT},\n{text[close:]}"


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


def _add_to_poetry(text: str) -> str | None:
    section = re.search(r"(?m)^\[tool\.poetry\.dependencies\]\s*$", text)
    if section is None:
        return None
    return f'{text[: section.end()]}\nguardkit = "*"{text[section.end() :]}'


def _parses_with_guardkit(text: str) -> bool:
    """Never write a file the next reader cannot parse, or that does not list guardkit."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    project = data.get("project", {})
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies")
    return _listed(project.get("dependencies")) or _listed(poetry)


def add_dependency(root: Path) -> Path | None:
    """Add guardkit to the project at ``root``; the file changed, or ``None``."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            data = {}  # not ours to repair: fall through to requirements.txt
        project = data.get("project", {})
        poetry = data.get("tool", {}).get("poetry", {}).get("dependencies")
        if _listed(project.get("dependencies")) or _listed(poetry):
            return None
        changed = None
        if project and "dependencies" not in project.get("dynamic", []):
            changed = _add_to_array(text)
        elif poetry is not None:
            changed = _add_to_poetry(text)
        if changed is not None and _parses_with_guardkit(changed):
            pyproject.write_text(changed, encoding="utf-8")
            return pyproject
    requirements = root / "requirements.txt"
    if requirements.is_file():
        text = requirements.read_text(encoding="utf-8")
        if any(_NAME.match(line) for line in text.splitlines()):
            return None
        newline = "" if not text or text.endswith("\n") else "\n"
        requirements.write_text(f"{text}{newline}guardkit\n", encoding="utf-8")
        return requirements
    return None

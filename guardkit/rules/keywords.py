"""guardkit's JSON Schema keywords for arguments of a known kind: paths, URLs, shell commands.

Each keyword judges its value the way the existing checks do (``guardkit.checks``), never by
its text alone, and raises ``CannotJudge`` for a value it cannot judge exactly, so a rule never
guesses (the rule then refuses the call, see ``guardkit.rules``). Like JSON Schema's own
type-specific keywords, each ignores values of other types.

* ``"x-path-under": ["/etc", ...]``: the path, made absolute against ``"x-path-base"`` (a sibling
  keyword) and normalised (``/data/../etc/passwd`` is ``/etc/passwd``), is one of the roots or
  inside one, component by component (``/etcetera`` is not under ``/etc``).
* ``"x-url-host": ["example.com", "*.example.com"]``: the host an HTTP client would connect to
  (IDNA-mapped, numeric forms parsed, userinfo refused) is one of these.
* ``"x-shell": <schema>``: the command's argv (``guardkit.rules.shell``) satisfies the schema;
  ``"x-shell-compound": true`` beside it makes a command that cannot be judged satisfy it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from guardkit.checks.egress import url_host
from guardkit.checks.hosts import host_matches
from guardkit.checks.paths import is_under
from guardkit.decisions import JSONObject
from guardkit.rules.shell import CannotJudge, command_argv

__all__ = ["KEYWORDS", "SIBLINGS", "argv_of", "path_under", "url_matches"]


def path_under(value: str, roots: Sequence[str], base: str | None) -> bool:
    """Whether the normalised absolute ``value`` lies under one of ``roots``."""
    if not value or "\x00" in value:
        raise CannotJudge("an empty path or a NUL byte")
    if value.startswith("~"):
        raise CannotJudge(f"{value!r} starts with '~' (a home directory the guard cannot see)")
    if not value.startswith("/"):
        if base is None:
            raise CannotJudge(f"the relative path {value!r} (set x-path-base to judge it)")
        value = posixpath.join(base, value)
    # POSIX normpath keeps a leading "//"; the kernel treats it as "/".
    resolved = "/" + posixpath.normpath(value).lstrip("/")
    return any(is_under(resolved, root) for root in roots)


def url_matches(value: str, hosts: tuple[str, ...]) -> bool:
    """Whether the host an HTTP client would connect to for ``value`` is one of ``hosts``."""
    try:
        host = url_host(value)
    except (ValueError, UnicodeError) as exc:
        raise CannotJudge(f"the URL {value!r}: {exc}") from None
    return host_matches(host, hosts)


def argv_of(instance: Any, compound: bool) -> list[str] | None:
    """The argv ``x-shell`` judges, or None when the command satisfies it unjudged."""
    if isinstance(instance, list) and not all(isinstance(word, str) for word in instance):
        raise CannotJudge("a command list with words that are not strings")
    try:
        return command_argv(instance)
    except CannotJudge:
        if compound:
            return None
        raise


# -- the same keywords for the jsonschema package ----------------------------------------------

Keyword = Callable[[Any, Any, Any, JSONObject], Iterator[Any]]


def _x_path_under(validator: Any, roots: Any, instance: Any, schema: JSONObject) -> Iterator[Any]:
    from jsonschema import ValidationError

    base = schema.get("x-path-base")  # checked to be an absolute path when the policy loaded
    if isinstance(instance, str) and not path_under(
        instance, roots, base if isinstance(base, str) else None
    ):
        yield ValidationError(f"{instance!r} is not under {', '.join(roots)}")


def _x_url_host(validator: Any, hosts: Any, instance: Any, schema: JSONObject) -> Iterator[Any]:
    from jsonschema import ValidationError

    if isinstance(instance, str) and not url_matches(instance, tuple(hosts)):
        yield ValidationError(f"the host of {instance!r} is not one of {', '.join(hosts)}")


def _x_shell(validator: Any, argv_schema: Any, instance: Any, schema: JSONObject) -> Iterator[Any]:
    if not isinstance(instance, (str, list)):
        return
    argv = argv_of(instance, schema.get("x-shell-compound") is True)
    if argv is not None:
        yield from validator.descend(argv, argv_schema, schema_path="x-shell")


#: Keyword -> its jsonschema implementation.
KEYWORDS: dict[str, Keyword] = {
    "x-path-under": _x_path_under,
    "x-url-host": _x_url_host,
    "x-shell": _x_shell,
}
#: Keywords that only qualify a sibling (read by it, no check of their own).
SIBLINGS = {"x-path-base": "x-path-under", "x-shell-compound": "x-shell"}

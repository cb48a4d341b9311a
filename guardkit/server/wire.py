"""Request bodies in, JSON out: size-limited reads, field validation with clear 400s, errors.

Bodies are validated against the same field rules the OpenAPI document states (``openapi.py``):
an object, every required field present, every field of its type, nothing unknown; and, at any
depth, no integer beyond what Lineage's server holds (``-2**63``-``2**64-1``), no non-finite
number and no lone surrogate: each is a 400 naming the field (``input.items[2].qty``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from guardkit._canonical import json_problem, visible
from guardkit.errors import InvalidInput, PayloadTooLarge

__all__ = ["Field", "error_response", "header", "json_response", "read_body", "validate"]

_JSON = "application/json"


# Built once: ``json.dumps`` and ``json.loads`` with options build an encoder or decoder a call.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _dumps(value: Any) -> bytes:
    return _encode(value).encode()


def json_response(value: Any, status: int = 200) -> Response:
    return Response(_dumps(value), status_code=status, media_type=_JSON)


def error_response(status: int, code: str, message: str) -> Response:
    response = json_response({"error": visible(message), "code": code}, status)
    if status == 401:
        response.headers["www-authenticate"] = 'Bearer realm="guardkit"'
    return response


_SUSPECT = re.compile(rb"\d{20}|[eE][+-]?\d{3}|\\u[dD][89abcdefABCDEF]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_decode = json.JSONDecoder(parse_constant=_reject_constant).decode


def header(request: Request, name: bytes) -> str | None:
    """The request header ``name`` (lowercase), as ``request.headers.get`` gives it: read from
    the ASGI scope, whose names are lowercase, without building a ``Headers`` (four Python calls
    for a request's first header, three for each one after)."""
    for key, value in request.scope["headers"]:
        if key == name:
            text: str = value.decode("latin-1")
            return text
    return None


async def read_body(request: Request, limit: int) -> Any:
    """The request's JSON body (None when empty), at most ``limit`` bytes."""
    declared = header(request, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(limit)
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return None
    try:
        body = _decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))  # as json.loads
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"request body is not valid JSON: {exc}") from None
    if _SUSPECT.search(raw):
        # Only a body that might hold one pays for the walk: a long run of digits (an integer
        # beyond Lineage's u64/i64), a large exponent (a float that overflows), a surrogate escape.
        found = json_problem(body, "")
        if found is not None:
            raise InvalidInput(f"field '{found[0]}' {found[1]}")
    return body


@dataclass(frozen=True, slots=True)
class Field:
    """One body field: its JSON type(s) and whether it must be present."""

    kinds: tuple[str, ...]
    required: bool = False


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: (
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ),
    "object": lambda v: isinstance(v, dict),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "any": lambda v: True,
}


def validate(body: Any, fields: Mapping[str, Field], *, empty_ok: bool = False) -> dict[str, Any]:
    """Check a body against ``fields``; returns it as a dict or raises a 400 naming the field."""
    if body is None and empty_ok:
        body = {}
    if not isinstance(body, dict):
        raise InvalidInput("request body must be a JSON object")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}")
    for name, spec in fields.items():
        if name not in body:
            if spec.required:
                raise InvalidInput(f"missing field {name!r}")
            continue
        value = body[name]
        for kind in spec.kinds:
            if _CHECKS[kind](value):
                break
        else:
            raise InvalidInput(f"field {name!r} must be {' or '.join(spec.kinds)}")
        if isinstance(value, str) and "\x00" in value:
            # PostgreSQL text cannot hold NUL; refuse it on every store alike.
            raise InvalidInput(f"field {name!r} must not contain NUL characters")
    return body

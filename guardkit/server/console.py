"""The operator console: three static files served with a strict Content-Security-Policy.

The page holds no secret: it asks for the operator token and keeps it in ``sessionStorage``;
everything agent-controlled is written into the page with ``textContent``, never as HTML.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

__all__ = ["CSP", "console_routes"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

_FILES = {
    "/": ("console.html", "text/html; charset=utf-8"),
    "/console.js": ("console.js", "text/javascript; charset=utf-8"),
    "/console.css": ("console.css", "text/css; charset=utf-8"),
}


def _handler(body: bytes, media_type: str) -> Callable[[Request], Awaitable[Response]]:
    async def serve(request: Request) -> Response:
        return Response(
            body,
            media_type=media_type,
            headers={"content-security-policy": CSP, "cache-control": "no-store"},
        )

    return serve


def console_routes() -> list[BaseRoute]:
    static = resources.files("guardkit.server").joinpath("static")
    return [
        Route(path, _handler(static.joinpath(name).read_bytes(), media_type), methods=["GET"])
        for path, (name, media_type) in _FILES.items()
    ]

"""The guard server: Lineage's HTTP API over an engine and store, and the approvals console.

``create_app(ServerState.open(store, admin_token=..., backend_token=...))`` builds the ASGI app;
``guardkit serve`` (``guardkit.server.cli.serve``) runs it under uvicorn. Importing this package
imports nothing from the ``server`` extra until one of those names is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guardkit.server.app import create_app
    from guardkit.server.state import ServerLimits, ServerState

__all__ = ["ServerLimits", "ServerState", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from guardkit.server.app import create_app

        return create_app
    if name in ("ServerLimits", "ServerState"):
        from guardkit.server import state

        return getattr(state, name)
    raise AttributeError(name)

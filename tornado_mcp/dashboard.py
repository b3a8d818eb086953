"""Where the library meets its dashboard, for the servers this package starts.

The one module of ``tornado_mcp`` that imports :mod:`admin_ui`: the command line of
``python -m tornado_mcp demo`` and the example servers mount the dashboard through it.
Nothing else in the library depends on the dashboard, which reads the transport only
through its public API (:meth:`~tornado_mcp.Transport.snapshot` and friends).
"""

from __future__ import annotations

from typing import Any

from .transport import Transport


def dashboard_routes(transport: Transport, prefix: str, token: str) -> list[Any] | None:
    """The dashboard's routes for ``transport`` under ``prefix``; ``None`` when the
    dashboard package is not installed."""
    try:
        import admin_ui
    except ImportError:  # pragma: no cover - the dashboard ships with the library
        return None
    return list(admin_ui.routes(transport, prefix=prefix, token=token))

"""Where the library meets its dashboard, for the servers this package starts.

The one module of ``tornado_mcp`` that imports :mod:`admin_ui`: the command line of
``python -m tornado_mcp demo``, the example servers and the Jupyter Server extension
(:mod:`tornado_mcp.jupyter`, with Jupyter's own login) mount the dashboard through it.
Nothing else in the library depends on the dashboard, which reads the transport only
through its public API (:meth:`~tornado_mcp.Transport.snapshot` and friends).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tornado.web import RequestHandler

from .transport import Transport


def dashboard_routes(transport: Transport, prefix: str, token: str = "", *,
                     authenticate: Callable[[RequestHandler], str | Awaitable[str | None] | None]
                     | None = None,
                     login_url: str | None = None) -> list[Any] | None:
    """The dashboard's routes for ``transport`` under ``prefix``; ``None`` when the
    dashboard package is not installed.  ``authenticate`` and ``login_url`` put it behind
    the host application's login instead of ``token`` (see :func:`admin_ui.routes`)."""
    try:
        import admin_ui
    except ImportError:  # pragma: no cover - the dashboard ships with the library
        return None
    return list(admin_ui.routes(transport, prefix=prefix, token=token,
                                authenticate=authenticate, login_url=login_url))

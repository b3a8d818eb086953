"""The former home of :mod:`tornado_mcp.extensions.apps` (MCP Apps), kept so that
``from tornado_mcp.server.apps import AppError`` still works: it names the same objects.
New code imports from :mod:`tornado_mcp.extensions.apps`."""

from ..extensions.apps import (
    APP_MIME_TYPE,
    MAX_VIEW_BYTES,
    MAX_VIEWS,
    UI_EXTENSION,
    AppError,
    AppViews,
    View,
)

__all__ = ["APP_MIME_TYPE", "MAX_VIEWS", "MAX_VIEW_BYTES", "UI_EXTENSION", "AppError",
           "AppViews", "View"]

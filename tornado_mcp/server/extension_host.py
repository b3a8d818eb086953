"""What the extensions (skills, MCP Apps) use of the :class:`~tornado_mcp.Server` that
serves them, as a Protocol: they are registered by the server's registry, so they may not
name the server's class themselves."""

from __future__ import annotations

from typing import Any, Protocol

from .contract import Handler
from .primitives import Resource


class ExtensionHost(Protocol):
    """The server as :mod:`.skills`, :mod:`.skill_methods` and :mod:`.apps` use it."""

    @property
    def page_size(self) -> int | None: ...

    @property
    def ttl_ms(self) -> int: ...

    @property
    def cache_scope(self) -> str: ...

    def declare_extension(self, name: str, settings: dict[str, Any] | None = None) -> None: ...

    def declares_extension(self, name: str) -> bool: ...

    def get_resource(self, uri: str) -> Resource | None: ...

    def add_method(self, name: str, fn: Handler) -> None: ...

    def notify_resources_list_changed(self) -> None: ...

    def notify_resources_updated(self, uri: str) -> None: ...

    def listing_changed(self, kind: str) -> None: ...

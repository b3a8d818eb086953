"""What the extensions (skills, MCP Apps) use of the :class:`~tornado_mcp.Server` that
serves them, as a Protocol: the server composes them, so they may not name its class."""

from __future__ import annotations

from typing import Protocol

from ..server.registry import Registry


class ExtensionHost(Protocol):
    """The server as :mod:`.skills` and :mod:`.apps` use it: its
    registry (where they register what they serve), its listing policy, and its
    notifications."""

    @property
    def registry(self) -> Registry: ...

    @property
    def page_size(self) -> int | None: ...

    @property
    def ttl_ms(self) -> int: ...

    @property
    def cache_scope(self) -> str: ...

    def notify_resources_list_changed(self) -> None: ...

    def notify_resources_updated(self, uri: str) -> None: ...

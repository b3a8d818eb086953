"""What the extensions (skills, MCP Apps) use of the :class:`~tornado_mcp.Server` that
serves them, as a Protocol: the server composes them, so they may not name its class."""

from __future__ import annotations

from typing import Protocol

from ..server.builtins import Listing


class ExtensionHost(Listing, Protocol):
    """The server as :mod:`.skills` and :mod:`.apps` use it: its registry (where they
    register what they serve) and listing policy (:class:`~tornado_mcp.server.builtins.Listing`),
    and its notifications."""

    def notify_resources_list_changed(self) -> None: ...

    def notify_resources_updated(self, uri: str) -> None: ...

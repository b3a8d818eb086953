"""What the parts of a process's membership (:mod:`.rate_limit`, :mod:`.sessions`) use of
its :class:`~tornado_mcp.cluster.Cluster`, as a Protocol: the cluster module imports them,
so they name it by what it offers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..transport import Transport
    from .link import Link
    from .members import Members


class Member(Protocol):
    """One process's membership of a cluster."""

    id: str
    namespace: str
    closed: bool

    @property
    def link(self) -> Link: ...

    @property
    def members(self) -> Members: ...

    @property
    def transport(self) -> Transport: ...

    async def announce_drain(self) -> None:
        """Tell the others this process began to drain."""

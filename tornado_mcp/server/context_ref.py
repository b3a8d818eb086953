"""The ``ctx`` slot of a transport's request channel, holding the request's
:class:`~tornado_mcp.server.context.Context` weakly (:class:`HoldsContext`)."""

from __future__ import annotations

import weakref

from .context import Context


class HoldsContext:
    """The ``ctx`` of a transport's request channel: the context of the request dispatched
    on it, while anything (its handler, work it handed on) still holds that context.

    Held weakly: the context holds its channel, and a cycle would leave both (and what
    they reach: the HTTP handler, the request) to the garbage collector, whose full
    passes stall the loop, instead of freeing them when the request is done."""

    __slots__ = ("_ctx",)

    def __init__(self) -> None:
        self._ctx: weakref.ref[Context] | None = None

    @property
    def ctx(self) -> Context | None:
        ref = self._ctx
        return None if ref is None else ref()

    @ctx.setter
    def ctx(self, ctx: Context | None) -> None:
        self._ctx = None if ctx is None else weakref.ref(ctx)

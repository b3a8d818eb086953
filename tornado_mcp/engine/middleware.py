"""Middleware: code that runs around every request, and around every tool call.

A middleware is an ``async`` function of the request's :class:`~tornado_mcp.Context` and
``call_next``, the rest of the chain (the next middleware, then the server itself)::

    async def audit(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        log.info("%s by %s", ctx.method, ctx.principal.subject)
        return await call_next()

    transport = Transport(server, middleware=[audit])   # or transport.use(audit)

It sees the method (``ctx.method``), the params (``ctx.params``), the caller
(``ctx.principal``), the HTTP headers and address; it may return its own result instead
of calling ``call_next``, change what ``call_next`` returned, or refuse the request by
raising :class:`Refused` (a JSON-RPC error; over HTTP with the status the transport's
wire map gives it where the request is answered on its own) or any
:class:`~tornado_mcp.protocol.errors.MCPError`.  :func:`tool_middleware` makes one that runs
around ``tools/call`` only and is handed the tool's name and arguments::

    @tool_middleware
    async def no_deletes(ctx: Context, call: ToolCall, call_next: CallNext) -> dict[str, Any]:
        if call.name.startswith("delete_") and not ctx.principal.has_scopes("admin"):
            raise Refused("Forbidden: deleting needs the admin scope")
        return await call_next()

The chain runs in the order given, around every JSON-RPC request of both eras (batched
ones included) that the transport dispatches to the server; ``subscriptions/listen``
streams and client notifications do not pass through it.  With no middleware and no rate
limit the transport calls the server directly, at no cost.

Two ship with the library: :class:`RateLimit`, the per-principal rate limit behind the
``rate_limit_per_principal`` option (installed by every transport, idle until that option
is set), and :class:`tornado_mcp.engine.otel.OpenTelemetry`, a span per request.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol import RATE_LIMITED, TOOLS_CALL, Refusal
from ..protocol.errors import Refused as Refused
from ..protocol.identity import caller_key
from ..server.server import CallNext as CallNext
from ..server.server import Middleware as Middleware

if TYPE_CHECKING:
    from ..options import Options
    from ..server.context import Context


class SharedBuckets(Protocol):
    """Buckets kept elsewhere (a cluster's Redis: :mod:`tornado_mcp.cluster.rate_limit`):
    a Protocol because the cluster, a layer above, sets itself here."""

    async def take(self, key: str, local: RateLimit) -> float | None: ...

#: What the chain ends in: the request's handling, ``handle(method, params, ctx)``.
Handle = Callable[[str, dict[str, Any], "Context"], Awaitable[dict[str, Any]]]

#: Callers a :class:`RateLimit` keeps a bucket for at most.  A new caller past it takes the
#: place of a bucket that has refilled completely (a full bucket is the same as a new one,
#: so dropping it frees nobody early); when every bucket is still refilling, the new
#: caller is refused until the first of them is full.
MAX_RATE_BUCKETS = 10_000


@dataclass(frozen=True)
class ToolCall:
    """The tool a ``tools/call`` names and the arguments it was given."""

    name: str
    arguments: dict[str, Any]


ToolMiddleware = Callable[["Context", ToolCall, CallNext], Awaitable[dict[str, Any]]]


def tool_middleware(fn: ToolMiddleware) -> Middleware:
    """A middleware that runs ``fn(ctx, call, call_next)`` around ``tools/call`` only."""

    async def around_tools(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if ctx.method != TOOLS_CALL:
            return await call_next()
        name = ctx.params.get("name")
        arguments = ctx.params.get("arguments")
        call = ToolCall(name if isinstance(name, str) else "",
                        arguments if isinstance(arguments, dict) else {})
        return await fn(ctx, call, call_next)

    around_tools.__name__ = getattr(fn, "__name__", "tool_middleware")
    around_tools.__doc__ = fn.__doc__
    return around_tools


class Chain:
    """The middleware run in order around the server's ``handle``: the rate limit, then
    the server's own (``server.use``, every transport), then the transport's."""

    __slots__ = ("rate_limit", "shared", "user")

    def __init__(self, rate_limit: RateLimit, middleware: Sequence[Middleware] = (),
                 shared: Sequence[Middleware] = ()) -> None:
        self.rate_limit = rate_limit
        #: The middleware the transport was given, in order.
        self.user: list[Middleware] = list(middleware)
        #: The server's middleware (a live view: ``server.use`` after this is seen).
        self.shared = shared

    def active(self, options: Options) -> bool:
        """Whether a request must go through the chain at all."""
        return bool(self.user) or bool(self.shared) \
            or options.rate_limit_per_principal is not None

    async def run(self, ctx: Context, handle: Handle) -> dict[str, Any]:
        links: list[Middleware] = [self.rate_limit, *self.shared, *self.user]

        async def step(i: int) -> dict[str, Any]:
            if i == len(links):
                return await handle(ctx.method, ctx.params, ctx)
            return await links[i](ctx, lambda: step(i + 1))

        return await step(0)


class RateLimit:
    """At most ``rate_limit_per_principal`` requests per minute per caller.

    A token bucket per caller: it holds up to the limit, refills at limit/60 a second,
    and each request takes one token; a request finding less than one is refused with
    -32029 (``data.retryAfter``), HTTP 429 and ``Retry-After`` (whole seconds until a
    token is back).  The caller is the principal's subject when authenticated, else the
    client's address.  The option is read on every request, so a change applies at once.
    At most ``max_buckets`` callers are tracked (see :data:`MAX_RATE_BUCKETS`).
    In a cluster the buckets are shared through Redis (``shared``, set by the cluster).
    """

    #: Where the buckets live instead of here (a cluster's Redis), or None.
    shared: SharedBuckets | None = None

    def __init__(self, options: Options,
                 max_buckets: int = MAX_RATE_BUCKETS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options
        self.max_buckets = max_buckets
        self.clock = clock
        # key -> [tokens, at, full_at]: what the bucket held at ``at``, when it is full again
        self._buckets: dict[str, list[float]] = {}
        # (full_at, key), soonest full first; an entry whose full_at is no longer its
        # bucket's is stale and skipped
        self._full_at: list[tuple[float, str]] = []
        self._limit: float | None = None

    def __len__(self) -> int:
        return len(self._buckets)

    @staticmethod
    def key(ctx: Context) -> str:
        return caller_key(ctx.principal, ctx.remote_ip)

    def take(self, key: str, limit: int | None = None) -> float | None:
        """Take a token for ``key``: ``None`` when allowed, else seconds until allowed.
        ``limit`` replaces the option (a cluster's local share during a Redis outage)."""
        if limit is None:
            limit = self.options.rate_limit_per_principal
        if limit is None:
            return None
        now = self.clock()
        rate = limit / 60.0
        if limit != self._limit:  # when each bucket is full again depends on the limit
            self._limit = limit
            self._reorder(limit, rate)
        buckets = self._buckets
        bucket = buckets.get(key)
        if bucket is None:
            if len(buckets) >= self.max_buckets:
                busy = self._drop_a_full_bucket(now)
                if busy is not None:
                    return busy
            bucket = buckets[key] = [float(limit), now, now]
        else:
            bucket[0] = min(float(limit), bucket[0] + (now - bucket[1]) * rate)
            bucket[1] = now
        wait = None
        if bucket[0] >= 1.0:
            bucket[0] -= 1.0
        else:
            wait = (1.0 - bucket[0]) / rate
        bucket[2] = now + (limit - bucket[0]) / rate
        heapq.heappush(self._full_at, (bucket[2], key))
        if len(self._full_at) > 2 * len(buckets) + 64:
            self._reorder(limit, rate)  # drop the stale entries
        return wait

    def _drop_a_full_bucket(self, now: float) -> float | None:
        """Drop the bucket that is full soonest if it is full now (``None``); otherwise
        keep every bucket and answer the seconds until one is full."""
        heap = self._full_at
        while heap:
            full_at, key = heap[0]
            bucket = self._buckets.get(key)
            if bucket is None or bucket[2] != full_at:
                heapq.heappop(heap)  # stale
                continue
            if full_at > now:
                return full_at - now
            heapq.heappop(heap)
            del self._buckets[key]
            return None
        return None

    def _reorder(self, limit: float, rate: float) -> None:
        for bucket in self._buckets.values():
            bucket[0] = min(float(limit), bucket[0])
            bucket[2] = bucket[1] + (limit - bucket[0]) / rate
        self._full_at = [(b[2], k) for k, b in self._buckets.items()]
        heapq.heapify(self._full_at)

    async def __call__(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        shared = self.shared
        wait = self.take(self.key(ctx)) if shared is None \
            else await shared.take(self.key(ctx), self)
        if wait is None:
            return await call_next()
        seconds = max(1, math.ceil(wait))
        raise Refused(f"Too many requests: the limit is {self.options.rate_limit_per_principal}"
                      f" per minute; retry after {seconds} s", code=RATE_LIMITED,
                      retry_after=seconds, refusal=Refusal.RATE_LIMIT_PER_PRINCIPAL)

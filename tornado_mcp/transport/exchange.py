"""The transport's interfaces: what its parts use of one another, as Protocols.

One HTTP request is an :class:`Exchange` on an :class:`Endpoint` (the
:class:`~tornado_mcp.transport.core.Transport` it belongs to).  An exchange has two
implementations: :class:`~tornado_mcp.transport.handler.MCPHandler`, an ordinary Tornado
``RequestHandler`` (what an application that mounts the endpoint gets), and
:class:`~tornado_mcp.transport.fast.FastExchange`, an ``HTTPMessageDelegate`` answering
through ``HTTPConnection`` (the fast path of the library's own servers).  The era modules
(:mod:`.router`, :mod:`.legacy`, :mod:`.modern`, ...) are written against these, so both
implementations and the transport can import them at run time without being imported
back: the way ``tornado.httputil`` declares ``HTTPConnection`` and
``HTTPServerConnectionDelegate`` so that ``web``, ``http1connection`` and ``httpserver``
never import each other.

This module imports only what lies below the transport's own modules (SSE, the event
store, the engine, the server, the wire); where the interfaces need a type defined by a
module built on them (the request's stream, resumable streams), it is declared here as a
small Protocol too.  Each member is one the code uses; the concrete classes have more.
"""

from __future__ import annotations

from asyncio import Future
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import tornado.web
from tornado.httputil import HTTPServerRequest
from tornado.iostream import IOStream

from ..auth.resource import OAuthResource
from ..engine.engine import Channel, Engine
from ..engine.listen_index import NotificationHub
from ..engine.middleware import Chain
from ..introspection import ClusterSnapshot
from ..options import TransportOptions
from ..protocol import Refusal
from ..protocol.identity import ANONYMOUS, Principal
from ..server.server import Server
from ..server.session import Session, SessionStore
from ..tasks.manager import TaskManager
from .event_store import EventStore
from .security import RebindingGuard
from .sse import SSEChannel
from .wire import Reply

#: The host app's authentication hook (see :mod:`tornado_mcp.auth`).
Authenticate = Callable[[tornado.web.RequestHandler],
                        Principal | Awaitable[Principal | None] | None]


class ClusterMember(Protocol):
    """What a transport asks of the cluster it belongs to (:class:`tornado_mcp.cluster.Cluster`)."""

    id: str
    session_prefix: str

    async def find_session(self, h: Exchange, session_id: str,
                           body: bytes | None) -> Session | None: ...

    async def reserve(self, kind: str) -> bool: ...

    def remote_count(self, kind: str) -> int: ...

    def admitted(self) -> None: ...

    def snapshot(self) -> ClusterSnapshot: ...


class ResumableStreamLike(Protocol):
    """One POST's SSE stream that survives its connection
    (:class:`~tornado_mcp.transport.resume.ResumableStream`)."""

    @property
    def channel(self) -> SSEChannel | None: ...

    def send(self, message: dict[str, Any]) -> bool: ...

    def finish(self, response: dict[str, Any] | None) -> None: ...

    def close_connection(self, retry: int) -> bool: ...

    def detach(self, channel: SSEChannel | None) -> None: ...

    def start_replay(self) -> None: ...

    def take_over(self, channel: SSEChannel, replayed_up_to: int) -> None: ...

    def cancel_replay(self) -> None: ...


class ResumptionLike(Protocol):
    """An endpoint's resumable streams and their event store
    (:class:`~tornado_mcp.transport.resume.Resumption`)."""

    @property
    def enabled(self) -> bool: ...

    @property
    def store(self) -> EventStore: ...

    @property
    def live(self) -> Mapping[tuple[str, str], ResumableStreamLike]: ...

    def open(self, session: Session, channel: SSEChannel) -> ResumableStreamLike: ...


class RequestStreamLike(Channel, Protocol):
    """One HTTP request's way back to its client, the channel the engine dispatches on
    (:class:`~tornado_mcp.transport.request.RequestStream`)."""

    json_only: bool

    @property
    def handler(self) -> Exchange: ...

    @property
    def resumable(self) -> ResumableStreamLike | None: ...

    def disconnected(self) -> None: ...


class BodyDeadlinesLike(Protocol):
    """The transport's sweep over request bodies still arriving (a
    :class:`~tornado_mcp.transport.body_deadline.BodyDeadlines`)."""

    def arriving(self, exchange: Any, timeout: float | None) -> None: ...

    def complete(self, exchange: Any) -> None: ...


class Endpoint(Protocol):
    """What the handlers and the era modules use of their
    :class:`~tornado_mcp.transport.core.Transport`: its "for the handlers" section and
    the state it shares between requests."""

    @property
    def bodies(self) -> BodyDeadlinesLike: ...

    server: Server
    options: TransportOptions
    engine: Engine
    hub: NotificationHub
    middleware: Chain
    sessions: SessionStore
    tasks: TaskManager
    oauth: OAuthResource | None
    authenticate: Authenticate | None
    authenticates: bool
    cluster: ClusterMember | None
    rebinding: RebindingGuard
    refusals: Counter[str]
    requests_total: int
    started_at: float
    serves_legacy: bool
    serves_modern: bool
    modern_versions: list[str]

    @property
    def resumption(self) -> ResumptionLike: ...

    @property
    def closing(self) -> bool: ...

    def attach(self, handler: Exchange) -> None: ...

    def detach(self, handler: Exchange) -> None: ...

    def linger(self, stream: IOStream) -> None: ...

    def count_refusal(self, kind: Refusal) -> None: ...

    def open_session(self, version: str, params: dict[str, Any],
                     principal: Principal = ANONYMOUS,
                     session_id: str | None = None) -> Session | None: ...

    def admitted(self) -> None: ...

    def remote_count(self, kind: str) -> int: ...

    async def reserve(self, kind: str) -> bool: ...


class Exchange(Protocol):
    """What the era modules use of one HTTP request being served: the request, what
    authentication established, and the ways to answer (the last six are
    ``RequestHandler``'s response methods, which the fast path implements over
    ``HTTPConnection``)."""

    transport: Endpoint
    request: HTTPServerRequest
    principal: Principal
    on_disconnect: Callable[[], None] | None
    channel: SSEChannel | None
    log_message: Any

    @property
    def done(self) -> bool: ...

    @property
    def buffered_body_bytes(self) -> int: ...

    def get_principal(self) -> Principal | Awaitable[Principal | None] | None: ...

    def take_body(self) -> bytes: ...

    def single_header(self, name: str) -> str | None: ...

    def request_stream(self) -> RequestStreamLike: ...

    def open_channel(self, keepalive: Callable[[], float | None]) -> SSEChannel: ...

    async def stream(self, channel: SSEChannel) -> None: ...

    def drop_channel(self) -> None: ...

    def cancel_request(self) -> None: ...

    def write_reply(self, reply: Reply) -> None: ...

    def refuse_early(self, reply: Reply) -> None: ...

    def send_json(self, status: int, message: Any,
                  extra_headers: dict[str, str] | None = None) -> None: ...

    def send_sse(self, message: Any | None) -> None: ...

    def accepted(self) -> None: ...

    def set_status(self, status_code: int, reason: str | None = None) -> None: ...

    def set_header(self, name: str, value: str) -> None: ...

    def clear_header(self, name: str) -> None: ...

    def write(self, chunk: str | bytes | dict[str, Any]) -> None: ...

    def flush(self) -> Future[None]: ...

    def finish(self, chunk: str | bytes | dict[str, Any] | None = None) -> Future[None]: ...

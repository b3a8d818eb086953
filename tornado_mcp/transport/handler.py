"""The endpoint as an ordinary Tornado handler: :class:`MCPHandler`.

What an application that mounts the endpoint (``transport.routes()``, ``mount()``, the
Jupyter extension) serves it with, so it is one of the application's own handlers:
Tornado runs it as it runs any other (``prepare``, the HTTP method, ``on_finish``,
``write_error``, ``get_current_user``, in Tornado's order), and the application's
settings, output transforms, default headers, ``log_function`` and whatever
instrumentation wraps its handlers (OpenTelemetry, Sentry, Prometheus) see every MCP
request, refusals included.  The request's way through the endpoint is
:class:`~tornado_mcp.transport.flow.RequestFlow`'s; this class adds only Tornado's hooks.
"""

from __future__ import annotations

from asyncio import Future
from http.client import responses
from typing import TYPE_CHECKING, Any

import tornado.web
from tornado.iostream import StreamClosedError

from ..protocol import INTERNAL_ERROR, INVALID_REQUEST, jsonio
from ..protocol.identity import Principal
from ..protocol.jsonrpc import error_body
from .flow import NOT_ALLOWED, RequestFlow
from .gate import default_principal

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from .core import Transport

@tornado.web.stream_request_body
class MCPHandler(tornado.web.RequestHandler, RequestFlow):
    """The MCP endpoint. One instance per HTTP request; state lives on the transport.

    Subclass it to authenticate with the application's own login (override
    :meth:`get_principal`) or to add hooks of your own; serve the subclass with
    ``transport.routes(path, handler=...)`` or ``transport.mount(app, handler=...)``.
    """

    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD")

    #: The response is complete (set by :meth:`finish`).
    _answered = False
    #: The status line and headers were sent (set by :meth:`flush`).
    _sent_head = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.custom_principal = cls.get_principal is not MCPHandler.get_principal

    def initialize(self, transport: Transport) -> None:
        self.transport = transport
        self._chunks = []

    # -- Tornado's hooks ----------------------------------------------------------------------
    def check_xsrf_cookie(self) -> None:
        """MCP clients are not browsers with cookies; Origin checks guard this endpoint."""

    def check_trusted_origin(self, origin: str) -> bool:
        """Tornado 6.6's ``cross_origin_protection`` trusts what the endpoint allows: an
        origin in ``cors_allowed_origins`` or ``allowed_origins`` (each checked again by
        the endpoint's own Origin rule), besides the application's ``trusted_origins``."""
        opts = self.transport.options
        lowered = origin.strip().lower()
        if lowered in opts.cors_allowed_origins or lowered in opts.allowed_origins:
            return True
        return bool(super().check_trusted_origin(origin))

    def prepare(self) -> Awaitable[None] | None:
        """Checks that need no body; a refusal is answered before the body is read.

        Synchronous (no coroutine to create and await per request) unless the endpoint
        authenticates: then authentication runs last, still before the body is read.  A
        subclass overriding it calls ``super().prepare()`` and awaits what it returns, as
        with any ``RequestHandler``.
        """
        return self.begin()

    def get_principal(self) -> Principal | Awaitable[Principal | None] | None:
        """Who is calling, by the host application's own authentication; ``None`` is a 401.

        Override it to protect the endpoint with the app's login (it may be ``async``)::

            class AppMCPHandler(MCPHandler):
                def get_principal(self):
                    user = self.get_current_user()
                    return Principal.of(user, scopes=["notes"]) if user else None

        By default it is the transport's ``authenticate=`` hook; without one, the
        anonymous principal (or ``None`` when the endpoint takes OAuth bearer tokens).
        """
        return default_principal(self, self.transport)  # type: ignore[return-value]

    def data_received(self, chunk: bytes) -> None:
        self.receive(chunk)

    def on_connection_close(self) -> None:
        self.client_left()
        super().on_connection_close()

    def on_finish(self) -> None:
        self.forget()

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, StreamClosedError):
            return  # the client left: nothing went wrong here
        super().log_exception(typ, value, tb)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every error is a JSON-RPC error body; never a traceback."""
        self.set_header("Content-Type", "application/json")
        if status_code == 405:
            self.set_header("Allow", self.allowed_methods)
            body = error_body(None, INVALID_REQUEST, NOT_ALLOWED)
        elif status_code >= 500:
            body = error_body(None, INTERNAL_ERROR, "Internal server error")
        else:
            reason = self.log_reason or responses.get(status_code, "Bad request")
            body = error_body(None, INVALID_REQUEST, reason)
        self.finish(jsonio.dumps(body))

    # -- the HTTP methods ---------------------------------------------------------------------
    def post(self) -> Awaitable[None]:
        return self.serve(self.post_work)

    def get(self) -> Awaitable[None]:
        return self.serve(self.get_work)

    def delete(self) -> Awaitable[None]:
        return self.serve(self.delete_work)

    def options(self) -> Awaitable[None]:
        return self.serve(self.options_work)

    def put(self) -> Awaitable[None]:  # PATCH and HEAD too: 405, with the Allow header
        return self.serve(self.not_allowed)

    patch = head = put

    # -- the response -------------------------------------------------------------------------
    def flush(self, include_footers: bool = False) -> Future[None]:
        self._sent_head = True
        return super().flush(include_footers)

    def finish(self, chunk: str | bytes | dict[str, Any] | None = None) -> Future[None]:
        """Finish the response; one finished before its request's body was read (Tornado
        then closes the connection) says ``Connection: close``, so a keep-alive client
        does not send its next request into a closing connection."""
        if not self._sent_head and not self._body_in:
            self.set_header("Connection", "close")
        self._answered = True
        return super().finish(chunk)

    def respond(self, content_type: str, body: bytes) -> None:
        self.set_header("Content-Type", content_type)
        self.finish(body)

    @property
    def done(self) -> bool:
        return self._answered

    @property
    def started(self) -> bool:
        return self._sent_head

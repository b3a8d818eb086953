"""Serving the endpoint's handler without Tornado's generic handler machinery.

Tornado runs a ``RequestHandler`` through its ``_HandlerDelegate`` and the coroutine
``RequestHandler._execute``.  For a ``stream_request_body`` handler like
:class:`~tornado_mcp.transport.handler.MCPHandler` that is a task started when the headers
arrive, which runs ``prepare`` one loop turn later, resolves a future the connection
waits on before it reads the body, then waits on another future for the body and wakes
again when it is complete; and every request pays for work the endpoint never needs
(path arguments decoded, the XSRF and cross-origin hooks, the debug-mode caches).
Together that is about a third of what a bare Tornado handler costs per request.

:class:`DirectRoute` is a route target (a :class:`tornado.routing.Router`) that serves the
very same handler class, with the same hooks in the same order, and none of that:
``prepare`` runs as the headers arrive, the body goes to ``data_received`` as it is read,
and the HTTP method runs in one task started when the body is complete.  When ``prepare``
is asynchronous (the endpoint authenticates) it keeps Tornado's order exactly: one task
runs ``prepare``, waits for the body and runs the method, and the body is not read before
``prepare`` is done.

A router is not told which ``Application`` it serves, and a handler needs it (settings,
the access log, output transforms).  :class:`DirectRoute` learns it per HTTP server and
host name (applications behind one server may be routed by host): it declines the first
request for each, the ordinary rule listed after it serves that request, and the handler
tells the route its application (:func:`learn`) once the request's Host passed the
endpoint's checks.  It also declines what only the ordinary path does: methods the
handler does not support, path arguments, applications whose settings ask for
per-request work of Tornado's (``xsrf_cookies``, ``cross_origin_protection``, debug
mode's template and static caches), and a ``RequestHandler`` whose methods an agent
wrapped (:func:`~tornado_mcp.transport.lean.as_shipped`).
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import tornado.routing
import tornado.web
from tornado import httputil
from tornado.iostream import StreamClosedError
from tornado.log import app_log

from .lean import as_shipped, execute_as_shipped

#: The attribute a declined request carries, naming the route that wants its application.
LEARN = "_tornado_mcp_direct_route"


def learn(handler: tornado.web.RequestHandler) -> None:
    """Called by the handler as it prepares: if a :class:`DirectRoute` declined this
    request to learn its application, tell it."""
    route: DirectRoute | None = handler.request.__dict__.get(LEARN)
    if route is not None:
        route.learn(handler.request, handler.application)


#: Host names remembered per HTTP server (past it, the longest known is learnt again).
MAX_HOSTS = 64
_NO_HOSTS: dict[str, Any] = {}
_UNKNOWN: Any = object()


def eligible(application: tornado.web.Application) -> bool:
    """An application whose settings ask for no per-request work of Tornado's own."""
    settings = application.settings
    return not (settings.get("xsrf_cookies") or settings.get("cross_origin_protection")
                or not settings.get("compiled_template_cache", True)
                or not settings.get("static_hash_cache", True))


def endpoint_rules(path: str, handler_class: type[tornado.web.RequestHandler],
                   kwargs: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The rules serving ``handler_class`` at ``path``: a :class:`DirectRoute`, then the
    ordinary rule for what it declines (the same handler class, the same ``kwargs``)."""
    return [(path, DirectRoute(handler_class, kwargs)), (path, handler_class, kwargs)]


class DirectRoute(tornado.routing.Router):
    """Serves ``handler_class`` (with ``kwargs``) directly; see the module docstring.

    List it before an ordinary rule for the same path and handler, which serves what this
    declines (:meth:`Transport.routes <tornado_mcp.transport.core.Transport.routes>` does)."""

    def __init__(self, handler_class: type[tornado.web.RequestHandler],
                 kwargs: dict[str, Any]) -> None:
        self.handler_class = handler_class
        self.kwargs = kwargs
        self._methods = frozenset(handler_class.SUPPORTED_METHODS)
        #: Each HTTP server's connection parameters (one object per server) -> the
        #: application serving each host name it was asked for there (several
        #: applications may share a server, routed by host), None where not eligible.
        self._apps: weakref.WeakKeyDictionary[Any, dict[str, tornado.web.Application | None]] \
            = weakref.WeakKeyDictionary()
        self._last: tuple[Any, str, tornado.web.Application | None] = (None, "", None)

    def find_handler(self, request: httputil.HTTPServerRequest,
                     **target_params: Any) -> httputil.HTTPMessageDelegate | None:
        if request.method not in self._methods or target_params.get("path_args") \
                or target_params.get("path_kwargs") or not execute_as_shipped():
            return None
        server = getattr(request.connection, "params", None)
        host = request.host_name
        last_server, last_host, app = self._last
        if server is not last_server or host != last_host or server is None:
            if server is None:
                return None
            app = self._apps.get(server, _NO_HOSTS).get(host, _UNKNOWN)
            if app is _UNKNOWN:
                setattr(request, LEARN, self)  # the ordinary rule serves it, and tells us
                return None
            self._last = (server, host, app)
        if app is None:
            return None
        return _Delegate(app, request, self.handler_class, self.kwargs)

    def learn(self, request: httputil.HTTPServerRequest,
              application: tornado.web.Application) -> None:
        server = getattr(request.connection, "params", None)
        if server is None:
            return
        hosts = self._apps.get(server)
        if hosts is None:
            hosts = self._apps[server] = {}
        elif len(hosts) >= MAX_HOSTS:  # the host name is the client's to choose: bounded
            del hosts[next(iter(hosts))]  # the longest known goes
        direct = eligible(application) and as_shipped(self.handler_class)
        hosts[request.host_name] = application if direct else None


class _Delegate(httputil.HTTPMessageDelegate):
    """One request, from its headers to its handler's method (the ``stream_request_body``
    flow of Tornado's ``_HandlerDelegate`` and ``RequestHandler._execute``)."""

    __slots__ = ("application", "context", "handler", "handler_class", "kwargs", "request",
                 "serving")

    def __init__(self, application: tornado.web.Application,
                 request: httputil.HTTPServerRequest,
                 handler_class: type[tornado.web.RequestHandler], kwargs: dict[str, Any]) -> None:
        self.application = application
        self.request = request
        self.handler_class = handler_class
        self.kwargs = kwargs
        self.handler: tornado.web.RequestHandler | None = None
        #: An asynchronous ``prepare``'s task, which runs the method itself.
        self.serving = False
        #: The request's own context: ``prepare`` and the method share it, as they share
        #: ``_execute``'s task on the ordinary path, apart from the connection's.
        self.context = contextvars.copy_context()

    def headers_received(self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
                         headers: httputil.HTTPHeaders) -> Awaitable[None] | None:
        request = self.request
        request._body_future = asyncio.get_running_loop().create_future()
        app = self.application
        h = self.handler = self.handler_class(app, request, **self.kwargs)
        h._transforms = [t(request) for t in app.transforms] if app.transforms else []
        h.path_args, h.path_kwargs = [], {}  # the route has no groups (or it declined)
        try:  # synchronous unless the endpoint authenticates
            prepared = self.context.run(h.prepare)
        except Exception as exc:
            self.context.run(_answering, h._handle_request_exception, exc)
            return None
        if prepared is None:
            return None
        # Asynchronous prepare: Tornado's order, in one task; the body is read once it is done.
        self.serving = True
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        task = asyncio.get_running_loop().create_task(self._serve(prepared, ready),
                                                      context=self.context)
        task.add_done_callback(_retrieve)
        return ready

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        assert self.handler is not None
        return self.handler.data_received(chunk)

    def finish(self) -> None:
        body: asyncio.Future[None] = self.request._body_future
        if body.done():
            return
        body.set_result(None)
        h = self.handler
        assert h is not None
        if h._finished or self.serving:
            return  # answered in prepare, or an asynchronous prepare's task runs the method
        # The task's errors are answered by _run_method; only a cancellation ends it.
        asyncio.get_running_loop().create_task(_run_method(h), context=self.context)

    def on_connection_close(self) -> None:
        if self.handler is not None:
            self.handler.on_connection_close()

    async def _serve(self, prepared: Awaitable[None], ready: asyncio.Future[None]) -> None:
        h = self.handler
        assert h is not None
        try:
            try:
                await prepared
            finally:
                if not ready.done():
                    ready.set_result(None)
            if h._finished:
                return
            try:
                await self.request._body_future
            except StreamClosedError:  # the peer left mid-body: nothing to answer
                return
        except Exception as exc:
            _answering(h._handle_request_exception, exc)
            return
        await _run_method(h)


async def _run_method(h: tornado.web.RequestHandler) -> None:
    """Run the request's HTTP method on ``h`` and finish the response if it did not (what
    ``RequestHandler._execute`` does once the body is in)."""
    try:
        method = getattr(h, h.request.method.lower())
        result = method()
        if result is not None:
            await result
        if h._auto_finish and not h._finished:
            h.finish()
    except (Exception, asyncio.CancelledError) as exc:
        task = asyncio.current_task()
        if isinstance(exc, asyncio.CancelledError) and task is not None and task.cancelling():
            # This request's own task was cancelled: answer, so the connection is not
            # left hanging, and let the cancellation propagate.
            if not h._finished:
                _answering(h.send_error, 500)
            raise
        _answering(h._handle_request_exception, exc)


def _answering(answer: Callable[[Any], None], failure: Any) -> None:
    """Answer a failure as ``RequestHandler._execute`` does (``_handle_request_exception``
    or ``send_error``), never letting an exception raised by the answer escape."""
    try:
        answer(failure)
    except Exception:
        app_log.error("Exception in exception handler", exc_info=True)


def _retrieve(task: asyncio.Future[None]) -> None:
    """A request's task never fails (its errors are answered); retrieve any that does."""
    if not task.cancelled():
        task.exception()

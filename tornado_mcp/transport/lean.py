"""A ``RequestHandler`` that does less per request: :class:`LeanHandler`.

Tornado's ``RequestHandler`` does work on every request that a handler answering JSON
never needs: it builds the template namespace (``ui``) in its constructor, formats the
``Date`` header anew each time, and finishes every response through the general
``finish`` and ``flush`` (output transforms, ETags for GET, cookies, a ``Content-Length``
summed from the write buffer) and the access log (the line's fields computed even when
nobody logs them).  :class:`LeanHandler` keeps the class's behaviour and API and skips
that work where it changes nothing: ``ui`` is built on first use, the ``Date`` is
formatted once a second, :meth:`LeanHandler.respond` writes a complete response in one
go when nothing asks for ``finish``'s general case, and the access line is skipped when
it would not be logged.  No ``Server`` header is sent (less to write, nothing to leak).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import tornado.web
from tornado import httputil
from tornado.log import access_log
from tornado.util import ObjectDict
from tornado.web import _UIModuleNamespace

_RH = tornado.web.RequestHandler
#: The ``RequestHandler`` methods the lean paths stand in for, as Tornado defined them.
_SHIPPED = {name: _RH.__dict__[name]
            for name in ("__init__", "_execute", "clear", "write", "flush", "finish")}
#: None of them came wrapped (by an agent patching Tornado before this import).
_SHIPPED_CLEAN = not any(hasattr(f, "__wrapped__") for f in _SHIPPED.values())


def as_shipped(handler_class: type[tornado.web.RequestHandler]) -> bool:
    """Whether the lean paths may stand in for Tornado's own for ``handler_class``:
    nothing (an APM or tracing agent, say) wrapped the ``RequestHandler`` methods they
    replace, and ``handler_class`` overrides none of ``_execute``, ``write`` or ``flush``."""
    return _SHIPPED_CLEAN and all(_RH.__dict__[name] is fn for name, fn in _SHIPPED.items()) \
        and all(getattr(handler_class, name) is _SHIPPED[name]
                for name in ("_execute", "write", "flush"))


class LeanHandler(tornado.web.RequestHandler):
    """``RequestHandler`` with less work per request; see the module docstring."""

    #: The ``finish`` methods :meth:`respond` does the work of: a subclass overriding
    #: ``finish`` adds its own here when ``respond`` also does what it adds.
    lean_finishes: tuple[Any, ...] = (_RH.finish,)
    # Which lean versions stand for this class (set per class: a base listed after this
    # one in a subclass's bases, overriding the same method, keeps its own).
    _lean_init = _lean_clear = _lean_log = _lean_respond = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        mro = cls.__mro__
        later = {name for base in mro[mro.index(LeanHandler) + 1:mro.index(_RH)]
                 for name in vars(base)}
        cls._lean_init = "__init__" not in later
        cls._lean_clear = "clear" not in later
        cls._lean_log = "_log" not in later
        finishes = [vars(base)["finish"] for base in mro[:mro.index(_RH)]
                    if "finish" in vars(base)]
        cls._lean_respond = all(f in cls.lean_finishes for f in finishes) \
            and as_shipped(cls)

    def __init__(self, application: tornado.web.Application,
                 request: httputil.HTTPServerRequest, **kwargs: Any) -> None:
        """``RequestHandler``'s, less building the template namespace, which a handler
        answering JSON does not use (:attr:`ui` builds it on first use)."""
        if not self._lean_init or _RH.__dict__["__init__"] is not _SHIPPED["__init__"] \
                or not _SHIPPED_CLEAN:
            super().__init__(application, request, **kwargs)  # overridden or wrapped: run it
            return
        super(_RH, self).__init__()  # what RequestHandler's own does first (mixins after it)
        self.application = application
        self.request = request
        self._headers_written = False
        self._finished = False
        self._auto_finish = True
        self._prepared_future = None
        self.clear()
        request.connection.set_close_callback(self.on_connection_close)  # type: ignore[union-attr]
        self.initialize(**kwargs)

    @property
    def ui(self) -> Any:
        """The template namespace, as ``RequestHandler`` builds it (on first use here)."""
        ui = self.__dict__.get("_ui")
        if ui is None:
            app = self.application
            ui = ObjectDict((n, self._ui_method(m)) for n, m in app.ui_methods.items())
            ui["_tt_modules"] = ui["modules"] = _UIModuleNamespace(self, app.ui_modules)
            self.__dict__["_ui"] = ui
        return ui

    @ui.setter
    def ui(self, value: Any) -> None:
        self.__dict__["_ui"] = value

    def clear(self) -> None:
        """Resets all headers and content: ``RequestHandler``'s, with no ``Server`` header
        (less to write, nothing to leak) and the ``Date`` formatted once a second."""
        if not self._lean_clear:
            super().clear()
            return
        self._headers = hdrs = httputil.HTTPHeaders()
        hdrs["Content-Type"] = "text/html; charset=UTF-8"
        hdrs["Date"] = _http_date()
        self.set_default_headers()
        self._write_buffer: list[bytes] = []
        self._status_code = 200
        self._reason = "OK"

    def respond(self, content_type: str, body: bytes) -> None:
        """Finish with the complete ``body``: ``finish(body)`` with the ``Content-Type``,
        written in one go when nothing asks for ``finish``'s general case (an output
        transform, cookies, a body not read to its end, a response already started)."""
        if not self._lean_respond or self._headers_written or self._write_buffer \
                or self._transforms or "_new_cookie" in self.__dict__ \
                or body_unread(self.request) or self._status_code in (204, 304) \
                or self.request.method == "HEAD" or not _writes_as_shipped():
            self.set_header("Content-Type", content_type)
            self.finish(body)
            return
        hdrs = self._headers
        hdrs["Content-Type"] = content_type
        hdrs["Content-Length"] = str(len(body))
        connection = self.request.connection
        assert connection is not None
        connection.set_close_callback(None)  # type: ignore[attr-defined]
        self._headers_written = True
        connection.write_headers(httputil.ResponseStartLine("", self._status_code, self._reason),
                                 hdrs, body)
        connection.finish()
        self._log()
        self._finished = True
        self.on_finish()
        self._break_cycles()

    def _log(self) -> None:
        """Log the access line, unless nobody would see it (no ``log_function``, the
        application's own ``log_request``, the access log off at this status's level)."""
        if not self._lean_log:
            super()._log()
            return
        app = self.application
        if "log_function" not in app.settings and _LOG_REQUEST is type(app).log_request \
                and not access_log.isEnabledFor(log_level(self._status_code)):
            return
        app.log_request(self)


_LOG_REQUEST = tornado.web.Application.log_request


def _writes_as_shipped() -> bool:
    """``RequestHandler``'s ``write``, ``flush`` and ``finish`` not wrapped since (an agent
    instrumenting Tornado once the handler classes exist): ``respond`` stands for them."""
    methods = _RH.__dict__
    return methods["finish"] is _SHIPPED["finish"] and methods["flush"] is _SHIPPED["flush"] \
        and methods["write"] is _SHIPPED["write"]


def execute_as_shipped() -> bool:
    """``RequestHandler._execute`` not wrapped (tracing agents wrap it)."""
    return _RH.__dict__["_execute"] is _SHIPPED["_execute"]


_date: tuple[int, str] = (0, "")


def _http_date() -> str:
    """The ``Date`` header's value for now, formatted once a second."""
    global _date
    now = int(time.time())
    if now != _date[0]:
        _date = (now, httputil.format_timestamp(now))
    return _date[1]


def body_unread(request: Any) -> bool:
    """Tornado is still reading this streamed request's body (it never finishes one whose
    peer left, and closes the connection after a response sent before it)."""
    body = getattr(request, "_body_future", None)
    return body is not None and not body.done()


def log_level(status: int) -> int:
    """The level Tornado logs a request's access line at."""
    return logging.INFO if status < 400 else logging.WARNING if status < 500 else logging.ERROR

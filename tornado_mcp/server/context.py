"""The per-request context handed to handlers that ask for it.

A handler asks by declaring a parameter annotated :class:`Context` (or named ``ctx``)::

    @server.tool()
    async def slow(steps: int, ctx: Context) -> str:
        for i in range(steps):
            ctx.report_progress(i, steps)
            await asyncio.sleep(0.1)
        return "done"

Everything here is scoped to the one request: progress and log messages travel on the
request's own response stream, questions for the client (:meth:`Context.sample`,
:meth:`Context.elicit`, :meth:`Context.list_roots`) are server-to-client requests
correlated with it in a legacy session and input-required rounds at 2026-07-28, and
:attr:`Context.cancelled` turns true when the client cancels it.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol import (
    ELICITATION_COMPLETE,
    ELICITATION_CREATE,
    INPUT_METHODS,
    INPUT_UNAVAILABLE,
    INTERNAL_ERROR,
    LOG_LEVELS,
    LOG_MESSAGE,
    PING,
    PROGRESS,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
)
from ..protocol.errors import MCPError, MissingClientCapability
from ..protocol.identity import ANONYMOUS, Principal
from .input import (
    MAX_INPUT_ROUNDS,
    STATE_INPUTS_KEY,
    InputRequired,
    NeedsInput,
    check_elicitation_schema,
)

if TYPE_CHECKING:
    from .request_state import RequestStateCodec
    from .session import Session

_LEVEL_RANK = {name: i for i, name in enumerate(LOG_LEVELS)}
#: The client capabilities that mean "the server may ask me" (see ``client_supports``).
_INPUT_CAPABILITIES = frozenset({"sampling", "elicitation", "roots"})


class HTTPRequestFacts(Protocol):
    """What a ``Context`` reads of the HTTP request: Tornado's request object (this layer
    never imports Tornado), or what a task kept of its creating request."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def remote_ip(self) -> str | None: ...


_NO_HEADERS: Mapping[str, str] = types.MappingProxyType({})


class ContextServer(Protocol):
    """What a ``Context`` uses of its :class:`~tornado_mcp.Server`."""

    @property
    def request_state(self) -> RequestStateCodec: ...

    def notify_resources_updated(self, uri: str) -> None: ...


class RequestChannel(Protocol):
    """What the transport offers a request: its own stream, and the way back to the client.
    Implemented above this layer: by an HTTP request's ``RequestStream``, a stdio request's
    channel, and a task run's channel."""

    def emit(self, message: dict[str, Any]) -> bool:
        """Send a request-scoped notification; False when it could not be sent."""

    async def send_request(self, method: str, params: dict[str, Any] | None,
                      timeout: float | None) -> dict[str, Any]:
        """Send a server-to-client request and wait for its result (legacy era)."""

    def notify_resources_updated(self, uri: str) -> None:
        """Tell subscribers of ``uri`` that it changed."""

    @property
    def requests_unavailable(self) -> str | None:
        """Why :meth:`send_request` cannot work on this channel, or ``None``."""

    def close_stream(self) -> bool:
        """Close the request's connection without ending its stream (SSE polling)."""


class _Logging:
    """``notifications/message`` for a request: honours the client's level (legacy
    ``logging/setLevel``, or the 2026-07-28 ``_meta`` log level)."""

    __slots__ = ()
    modern: bool
    envelope: dict[str, Any] | None
    session: Session | None
    _channel: RequestChannel | None

    def log_enabled(self, level: str) -> bool:
        if self.modern:
            assert self.envelope is not None
            wanted = self.envelope.get("log_level")
            if wanted is None:
                return False  # 2026-07-28: no logLevel in _meta, no notifications/message
        else:
            wanted = self.session.log_level if self.session else None
            if wanted is None:
                return True
        return _LEVEL_RANK.get(level, 0) >= _LEVEL_RANK.get(wanted, 0)

    def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send ``notifications/message`` at ``level`` if the client asked for that level."""
        if level not in _LEVEL_RANK:
            raise ValueError(f"unknown log level {level!r}")
        if self._channel is None or not self.log_enabled(level):
            return False
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        return self._channel.emit({"jsonrpc": "2.0", "method": LOG_MESSAGE,
                                   "params": params})

    def debug(self, data: Any, logger: str | None = None) -> bool:
        return self.log("debug", data, logger)

    def info(self, data: Any, logger: str | None = None) -> bool:
        return self.log("info", data, logger)

    def warning(self, data: Any, logger: str | None = None) -> bool:
        return self.log("warning", data, logger)

    def error(self, data: Any, logger: str | None = None) -> bool:
        return self.log("error", data, logger)



class Context(_Logging):
    """Request-scoped helpers and facts; see the module docstring."""

    __slots__ = (
        "__weakref__",  # a request's stream refers to its context weakly
        "_asked",
        "_cancelled",
        "_channel",
        "_http",
        "_state_data",
        "envelope",
        "listen_served",
        "method",
        "modern",
        "params",
        "principal",
        "progress_token",
        "request_id",
        "served_versions",
        "server",
        "session",
        "task",
    )

    def __init__(self, server: ContextServer, method: str, params: dict[str, Any],
                 request_id: Any, channel: RequestChannel | None, *,
                 session: Session | None = None, envelope: dict[str, Any] | None = None,
                 listen_served: bool = True,
                 served_versions: tuple[str, ...] | None = None,
                 principal: Principal = ANONYMOUS,
                 http: HTTPRequestFacts | None = None) -> None:
        self.server = server
        self.method = method
        self.params = params
        self.request_id = request_id
        self.session = session
        self.envelope = envelope  # the validated 2026-07-28 ``_meta`` envelope, if modern
        self.modern = envelope is not None
        self.listen_served = listen_served
        #: The protocol versions the transport serves (``server/discover`` lists these).
        self.served_versions = served_versions
        #: Who is calling (:data:`~tornado_mcp.protocol.identity.ANONYMOUS` without authentication).
        self.principal = principal
        self._http = http
        self._channel = channel
        self._cancelled = False
        self._state_data: Any = None  # the answers of input rounds so far (2026-07-28)
        self._asked = 0  # questions asked by this run of the handler (2026-07-28)
        self.task: asyncio.Task[Any] | None = None
        meta = params.get("_meta")
        self.progress_token = meta.get("progressToken") if isinstance(meta, dict) else None

    # -- facts about the HTTP request ---------------------------------------------------
    @property
    def headers(self) -> Mapping[str, str]:
        """The request's HTTP headers, read-only (names are case-insensitive)."""
        if self._http is None:
            return _NO_HEADERS
        return types.MappingProxyType(self._http.headers)

    @property
    def remote_ip(self) -> str | None:
        """The client's address, as the HTTP server saw it."""
        return self._http.remote_ip if self._http is not None else None

    # -- facts about the client -------------------------------------------------------
    @property
    def protocol_version(self) -> str | None:
        if self.envelope is not None:
            return str(self.envelope["protocol_version"])
        return self.session.protocol_version if self.session else None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        if self.envelope is not None:
            caps: dict[str, Any] = self.envelope["client_capabilities"]
            return caps
        return self.session.client_capabilities if self.session else {}

    @property
    def client_info(self) -> dict[str, Any] | None:
        if self.envelope is not None:
            info: dict[str, Any] | None = self.envelope.get("client_info")
            return info
        return self.session.client_info if self.session else None

    def require_client_capability(self, *path: str) -> None:
        """Raise -32021 (HTTP 400 at 2026-07-28) unless the client declared ``path``."""
        if not self.client_supports(*path):
            required: dict[str, Any] = {}
            node = required
            for key in path[:-1]:
                node[key] = {}
                node = node[key]
            node[path[-1]] = {}
            raise MissingClientCapability(required)

    # -- cancellation ------------------------------------------------------------------
    @property
    def cancelled(self) -> bool:
        """True once the client cancelled the request or went away (2026-07-28)."""
        return self._cancelled

    def cancel(self) -> None:
        """Mark the request cancelled and cancel its handler if it is still running."""
        if self._cancelled:
            return
        self._cancelled = True
        if self.task is not None and not self.task.done():
            self.task.cancel()

    # -- request-scoped notifications ---------------------------------------------------
    def report_progress(self, progress: float, total: float | None = None,
                        message: str | None = None) -> bool:
        """Send ``notifications/progress``; a no-op unless the request carried a token."""
        if self.progress_token is None or self._channel is None:
            return False
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self._channel.emit({"jsonrpc": "2.0", "method": PROGRESS,
                                   "params": params})

    def notify_resources_updated(self, uri: str) -> None:
        """Tell every subscriber of ``uri`` it changed: this request's session (on its GET
        stream, or this request's own stream when it has none) and matching listen streams."""
        if self._channel is not None:
            self._channel.notify_resources_updated(uri)
        else:
            self.server.notify_resources_updated(uri)

    def close_sse_stream(self) -> bool:
        """Close this request's connection now, without ending its stream (SSE polling).

        Only on a resumable legacy stream (the ``resumable_streams`` option): the client
        waits the stream's ``retry`` and reconnects with ``GET`` + ``Last-Event-ID``; what
        the handler sends meanwhile, its result included, is replayed to it then.  Use it
        to avoid holding a connection through a long call.  False (and nothing happens)
        where the stream cannot be resumed.
        """
        return self._channel is not None and self._channel.close_stream()

    def elicitation_complete(self, elicitation_id: str) -> bool:
        """Send ``notifications/elicitation/complete`` for a URL-mode elicitation whose
        out-of-band interaction finished: on this request's stream while it is open,
        else on the session's GET stream.  False when neither can carry it."""
        params = {"elicitationId": elicitation_id}
        message = {"jsonrpc": "2.0", "method": ELICITATION_COMPLETE, "params": params}
        if self._channel is not None and self._channel.emit(message):
            return True
        return self.session is not None and \
            self.session.send_notification(ELICITATION_COMPLETE, params)

    # -- asking the client: sampling, elicitation, roots (both eras) --------------------------
    def input_unavailable(self) -> str | None:
        """Why this request cannot ask its client for input (sampling, elicitation, roots),
        or ``None`` when it can: as server-to-client requests in a legacy session, as
        input-required rounds at 2026-07-28."""
        return _input_unavailable(self, self._channel)

    def require_input(self) -> None:
        """Raise ``INPUT_UNAVAILABLE`` (-32031, ``data.mode`` naming why) unless this
        request can ask its client for input."""
        reason = self.input_unavailable()
        if reason is not None:
            raise MCPError(INPUT_UNAVAILABLE, reason, {"mode": _input_mode(self)})

    def client_supports(self, *path: str) -> bool:
        """True when the client declared the capability at ``path`` (e.g. "elicitation").

        For ``sampling``, ``elicitation`` and ``roots`` it is also false when this request
        cannot ask the client at all (stateless legacy mode, JSON-response mode), so a
        handler that checks it first never calls something that cannot work."""
        if path and path[0] in _INPUT_CAPABILITIES and self.input_unavailable() is not None:
            return False
        node: Any = self.client_capabilities
        for key in path:
            if not isinstance(node, Mapping) or key not in node:
                return False
            node = node[key]
        return True

    async def send_request(self, method: str, params: dict[str, Any] | None = None,
                           timeout: float | None = None) -> dict[str, Any]:
        """Send a JSON-RPC request to the client and return its result (legacy era).

        2026-07-28 has no server-to-client requests: use :meth:`sample`, :meth:`elicit`
        and :meth:`list_roots`, which work in both eras.  Raises :class:`MCPError` when the
        client returns an error, the request times out (``server_to_client_request_timeout``
        unless ``timeout`` is given), or no stream can carry it.
        """
        if self.modern:
            raise MCPError(INTERNAL_ERROR,
                           f"The server cannot send {method} to a 2026-07-28 client: that era "
                           "has no server-to-client requests (use ctx.sample, ctx.elicit or "
                           "ctx.list_roots, which become input-required results)")
        self.require_input()
        assert self._channel is not None  # require_input: a channel that carries requests
        return await self._channel.send_request(method, params, timeout)

    async def _ask(self, kind: str, method: str, params: dict[str, Any],
                   timeout: float | None, *capability: str) -> dict[str, Any]:
        """One question for the client, in either era (see :meth:`sample`)."""
        self.require_input()
        self.require_client_capability(*capability)
        if not self.modern:
            return await self.send_request(method, params, timeout)
        return _input_round(self, kind, method, params)

    async def sample(self, messages: list[dict[str, Any]], max_tokens: int,
                     timeout: float | None = None, **extra: Any) -> dict[str, Any]:
        """``sampling/createMessage``: the client's model answers ``messages``.

        Needs the client's ``sampling`` capability.  Works in both eras: in a legacy session
        it is a server-to-client request; at 2026-07-28 the call answers with an
        input-required result, the client retries with the answer, and the handler runs
        again from the start, this await now returning at once.  So whatever the handler
        does before it awaits (side effects included) happens once per round.
        """
        return await self._ask("sampling", SAMPLING_CREATE_MESSAGE,
                               {"messages": messages, "maxTokens": max_tokens, **extra},
                               timeout, "sampling")

    async def elicit(self, message: str, requested_schema: dict[str, Any],
                     timeout: float | None = None) -> dict[str, Any]:
        """``elicitation/create`` in form mode (both eras, like :meth:`sample`); needs the
        client's ``elicitation`` capability.  ``requested_schema`` must be a flat object of
        primitive properties (:class:`~tornado_mcp.ElicitationSchemaError` otherwise)."""
        check_elicitation_schema(requested_schema)
        return await self._ask(
            "elicitation", ELICITATION_CREATE,
            {"mode": "form", "message": message, "requestedSchema": requested_schema},
            timeout, "elicitation")

    async def elicit_url(self, message: str, url: str, elicitation_id: str,
                         timeout: float | None = None) -> dict[str, Any]:
        """``elicitation/create`` in URL mode (both eras); needs ``elicitation.url``."""
        return await self._ask(
            "elicitation", ELICITATION_CREATE,
            {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id},
            timeout, "elicitation", "url")

    async def list_roots(self, timeout: float | None = None) -> dict[str, Any]:
        """``roots/list`` (both eras, like :meth:`sample`); needs the ``roots`` capability."""
        return await self._ask("roots", ROOTS_LIST, {}, timeout, "roots")

    async def ping(self, timeout: float | None = None) -> dict[str, Any]:
        """A ``ping`` to the client (legacy era only)."""
        return await self.send_request(PING, None, timeout)

    # -- input-required results (2026-07-28) ---------------------------------------------
    @property
    def input_responses(self) -> dict[str, Any]:
        """The ``inputResponses`` of a retried request (empty on a first attempt)."""
        value = self.params.get("inputResponses")
        return value if isinstance(value, dict) else {}

    def input_response(self, key: str) -> Any:
        """The client's answer to the input request named ``key`` (``None`` if absent)."""
        return self.input_responses.get(key)

    @property
    def request_state(self) -> Any:
        """The raw ``requestState`` string the client sent back, if any."""
        return self.params.get("requestState")

    def seal_state(self, data: Any) -> str:
        """Seal ``data`` into a ``requestState`` bound to this method and these params."""
        return self.server.request_state.seal(data, self.method, self.params, _caller(self))

    def open_state(self) -> Any:
        """The data sealed by :meth:`seal_state` on an earlier round, or ``None`` if the
        request carries no state; -32602 when it was tampered with or expired."""
        if self.request_state is None:
            return None
        data = self.server.request_state.open(self.request_state, self.method, self.params,
                                             _caller(self))
        if isinstance(data, dict) and set(data) == {STATE_INPUTS_KEY}:
            return None  # the answers ctx.sample / elicit / list_roots carry, not yours
        return data


def _input_mode(ctx: Context) -> str:
    """The ``data.mode`` of an INPUT_UNAVAILABLE error (see :meth:`Context.require_input`)."""
    if ctx.modern:
        return "method"
    if ctx._channel is None:
        return "task"
    if ctx.session is None:
        return "stateless"
    reason = getattr(ctx._channel, "requests_unavailable", None) or ""
    return "json_response" if reason.startswith("JSON response mode") else "batch"


def _input_unavailable(ctx: Context, channel: RequestChannel | None) -> str | None:
    if ctx.modern:
        if ctx.method in INPUT_METHODS:
            return None
        return (f"{ctx.method} cannot ask the client for input at 2026-07-28; only "
                "tools/call, prompts/get and resources/read can (as input-required results)")
    if channel is None:
        return "this request has no way back to its client"
    if ctx.session is None:
        return ("Stateless mode does not support server-to-client requests (sampling, "
                "elicitation, roots): they need a legacy session, so serve this endpoint "
                "with stateless=False, or let the client use 2026-07-28")
    reason: str | None = getattr(channel, "requests_unavailable", None)
    return reason


def _input_round(ctx: Context, kind: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """2026-07-28: the answer to the handler's next question, from this request's
    ``inputResponses`` or the sealed ``requestState`` carrying earlier rounds' answers;
    when it is not there yet, :class:`NeedsInput` asks the client for it."""
    if ctx._state_data is None:
        carried: dict[str, Any] = {}
        if ctx.request_state is not None:
            opened = ctx.server.request_state.open(ctx.request_state, ctx.method, ctx.params,
                                               _caller(ctx))
            if isinstance(opened, dict) and isinstance(opened.get(STATE_INPUTS_KEY), dict):
                carried = dict(opened[STATE_INPUTS_KEY])
        ctx._state_data = {**carried, **ctx.input_responses}
    answers: dict[str, Any] = ctx._state_data
    key = f"{kind}-{ctx._asked}"  # deterministic: the handler asks in the same order
    ctx._asked += 1
    if key in answers:
        answer = answers[key]
        return answer if isinstance(answer, dict) else {}
    if len(answers) >= MAX_INPUT_ROUNDS:
        raise MCPError(INTERNAL_ERROR, "Too many input rounds: this call asked the client for "
                                       f"input more than {MAX_INPUT_ROUNDS} times")
    state = ctx.server.request_state.seal({STATE_INPUTS_KEY: answers}, ctx.method, ctx.params,
                                         _caller(ctx))
    raise NeedsInput(InputRequired({key: {"method": method, "params": params}}, state))


def _caller(ctx: Context) -> str:
    """Who sealed request state is for: the authenticated caller (anyone when anonymous)."""
    return ctx.principal.caller

"""The authorization server's endpoints, as Tornado handlers: metadata (RFC 8414), keys,
token, registration (RFC 7591), revocation (RFC 7009).  The authorization endpoint and
its consent page, which a browser visits, are :mod:`.pages`.

These endpoints are for programs: they answer JSON (errors too, never a traceback), read
at most :data:`MAX_FORM_BYTES` of body (a registration: ``oauth_max_client_metadata_bytes``)
and refuse a longer one before reading it (413), skip Tornado's XSRF check (no cookie is
involved), and allow any origin (CORS without credentials: a browser-based client, such as
the Inspector's web page, discovers and registers from its own origin).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import tornado.web
from tornado import httputil

from ..issuer.glue import Call
from ..issuer.store import StoreUnavailable
from ..protocol import Refusal

if TYPE_CHECKING:
    from . import SignIn

log = logging.getLogger("tornado_mcp.authserver")

#: The largest form a token or revocation request may send, in bytes.
MAX_FORM_BYTES = 16 * 1024


def call_of(handler: tornado.web.RequestHandler, url: str, body: bytes | None = None,
            form: dict[str, list[str]] | None = None) -> Call:
    """The request ``handler`` serves, as the issuer reads it; ``url`` is the endpoint's
    configured URL (the request's own Host decides nothing)."""
    request = handler.request
    query = {k: [v.decode("utf-8", "replace") for v in vs]
             for k, vs in request.query_arguments.items()}
    full = f"{url}?{request.query}" if request.query else url
    headers = {k: v for k, v in request.headers.get_all()}
    return Call(request.method or "GET", full, headers, query, form or {})


def reason(status: int) -> str:
    """The standard phrase of ``status`` (``Not Found``), or ``Error``."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


Method = TypeVar("Method", bound=Callable[..., Awaitable[None]])


def guarded(method: Method) -> Method:
    """An endpoint method that answers 503 (``Retry-After: 5``) when the store cannot be
    reached, instead of failing: nothing was written, the client may simply retry."""
    @functools.wraps(method)
    async def run(self: Any, *args: Any) -> None:
        try:
            await method(self, *args)
        except StoreUnavailable as exc:
            self.signin.outage.log(logging.WARNING, "the sign-in store cannot be reached "
                                   "(%s): answering 503", exc)
            self.set_header("Retry-After", "5")
            self.unavailable()
    return run  # type: ignore[return-value]


class JSONEndpoint(tornado.web.RequestHandler):
    """Base of the JSON endpoints: headers, CORS, errors as JSON."""

    methods: ClassVar[str] = "GET, OPTIONS"

    def initialize(self, signin: SignIn) -> None:
        self.signin = signin

    def set_default_headers(self) -> None:
        self.set_header("Cache-Control", "no-store")
        self.set_header("Pragma", "no-cache")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Access-Control-Allow-Origin", "*")
        self.set_header("Access-Control-Expose-Headers", "WWW-Authenticate, Retry-After")

    def check_xsrf_cookie(self) -> None:
        pass  # no cookie authenticates these requests

    def options(self, *args: Any) -> None:
        self.set_header("Access-Control-Allow-Methods", self.methods)
        self.set_header("Access-Control-Allow-Headers",
                        "Authorization, Content-Type, MCP-Protocol-Version")
        self.set_header("Access-Control-Max-Age", "600")
        self.set_status(204)
        self.finish()

    def unavailable(self) -> None:
        self.answer(503, {"error": "temporarily_unavailable", "error_description":
                          "the authorization server cannot reach its store; retry shortly"})

    def answer(self, status: int, body: dict[str, Any] | None,
               headers: list[tuple[str, str]] | None = None) -> None:
        self.set_status(status)
        for name, value in headers or ():
            if name.lower() != "content-type":
                self.set_header(name, value)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body or {}))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = {400: "invalid_request", 401: "invalid_client", 413: "invalid_request"}.get(
            status_code, "server_error" if status_code >= 500 else "invalid_request")
        self.answer(status_code, {"error": error, "error_description": reason(status_code)})


class MetadataHandler(JSONEndpoint):
    """``/.well-known/oauth-authorization-server``: the RFC 8414 document."""

    def get(self) -> None:
        self.set_header("Cache-Control", "max-age=300")
        self.answer(200, self.signin.issuer.metadata())


class JWKSHandler(JSONEndpoint):
    """The public keys access tokens are signed with (``jwks_uri``)."""

    @guarded
    async def get(self) -> None:
        await self.signin.issuer.ring.signer()  # the first key exists once asked for
        self.set_header("Cache-Control", "max-age=60")
        self.answer(200, self.signin.issuer.ring.jwks())


@tornado.web.stream_request_body
class BodyEndpoint(JSONEndpoint):
    """A POST endpoint whose body is bounded: refused (413) before it is read when its
    declared length is over :meth:`limit`, and as soon as it grows past it."""

    methods = "POST, OPTIONS"

    def limit(self) -> int:
        return MAX_FORM_BYTES

    def prepare(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.refused = False
        if self.request.method != "POST":
            return
        declared = self.request.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit():
            self.too_large()

    def data_received(self, chunk: bytes) -> None:
        if self.refused:
            return
        self.size += len(chunk)
        if self.size > self.limit():
            self.too_large()
            return
        self.chunks.append(chunk)

    def too_large(self) -> None:
        self.refused = True
        self.refused_large()
        self.answer(413, {"error": "invalid_request",
                          "error_description": f"the body exceeds {self.limit()} bytes"})

    def refused_large(self) -> None:
        """Count a body refused for its size (only where a live option bounds it)."""

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def form(self) -> dict[str, list[str]]:
        args: dict[str, list[bytes]] = {}
        ctype = self.request.headers.get("Content-Type", "")
        if ctype.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
            httputil.parse_body_arguments(ctype, self.body, args, {})
        return {k: [v.decode("utf-8", "replace") for v in vs] for k, vs in args.items()}


class TokenHandler(BodyEndpoint):
    """The token endpoint: a code (PKCE) or a refresh token for an access token."""

    @guarded
    async def post(self) -> None:
        issuer = self.signin.issuer
        answer = await issuer.token(call_of(self, issuer.urls["token"], form=self.form()))
        self.answer(answer.status, answer.body, answer.headers)


class RevokeHandler(BodyEndpoint):
    """The revocation endpoint (RFC 7009)."""

    @guarded
    async def post(self) -> None:
        issuer = self.signin.issuer
        self.answer(*await issuer.revoke(call_of(self, issuer.urls["revoke"],
                                                 form=self.form())))


class RegisterHandler(BodyEndpoint):
    """Dynamic client registration (RFC 7591), bounded by the live options."""

    def limit(self) -> int:
        return self.signin.issuer.options.oauth_max_client_metadata_bytes

    def refused_large(self) -> None:
        self.signin.count(Refusal.OAUTH_MAX_CLIENT_METADATA_BYTES)

    @guarded
    async def post(self) -> None:
        issuer = self.signin.issuer
        call = call_of(self, issuer.urls["register"])
        self.answer(*await issuer.register(call, self.body, self.request.remote_ip or ""))

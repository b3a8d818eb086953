"""A real OAuth 2.1 authorization server for the tests, built on authlib.

Everything OAuth here is authlib's: the authorization-code grant with PKCE (RFC 7636),
dynamic client registration (RFC 7591), JWT access tokens (RFC 9068) signed with an RSA
key from joserfc, token introspection (RFC 7662).  This module only adapts Tornado's
requests to authlib (what authlib's own Flask and Django integrations do) and keeps
clients, codes and tokens in memory.  The authorization endpoint approves at once for
the user named by ``AuthorizationServer.user`` (there is no login page to click).

RFC 8707: the ``resource`` a client names at the token endpoint becomes the token's
``aud`` (authlib leaves resource indicators to the integration).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import tornado.httpserver
import tornado.netutil
import tornado.web
from authlib.oauth2 import rfc6749, rfc7591, rfc7636, rfc7662, rfc9068
from authlib.oauth2.rfc6749 import grants
from joserfc.jwk import KeySet, RSAKey

os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")  # loopback http in tests

#: The resource a token request named (RFC 8707), for the token generator.
_resource: contextvars.ContextVar[str | None] = contextvars.ContextVar("resource", default=None)


class Client(rfc6749.ClientMixin):
    def __init__(self, info: dict[str, Any], metadata: dict[str, Any]) -> None:
        self.client_id: str = info["client_id"]
        self.client_secret: str | None = info.get("client_secret")
        self.metadata = metadata

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.metadata.get("redirect_uris") or []
        return uris[0] if uris else None

    def get_allowed_scope(self, scope: str) -> str:
        return scope or ""

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in (self.metadata.get("redirect_uris") or [])

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and secrets.compare_digest(
            client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if endpoint == "token":
            return method == self.metadata.get("token_endpoint_auth_method",
                                               "client_secret_basic")
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in (self.metadata.get("grant_types") or ["authorization_code"])


class Code(rfc6749.AuthorizationCodeMixin):
    def __init__(self, code: str, client_id: str, redirect_uri: str, scope: str, user: str,
                 challenge: str | None, method: str | None) -> None:
        self.code, self.client_id, self.redirect_uri = code, client_id, redirect_uri
        self.scope, self.user = scope, user
        self.code_challenge, self.code_challenge_method = challenge, method

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


class Token(rfc6749.TokenMixin):
    def __init__(self, data: dict[str, Any], client: Client, user: str | None,
                 audience: str | None) -> None:
        self.data, self.client, self.user, self.audience = data, client, user, audience
        self.issued_at = int(time.time())

    def check_client(self, client: Any) -> bool:
        return bool(client.get_client_id() == self.client.client_id)

    def get_scope(self) -> str:
        return str(self.data.get("scope", ""))

    def get_expires_in(self) -> int:
        return int(self.data.get("expires_in", 0))

    def is_expired(self) -> bool:
        return time.time() > self.issued_at + self.get_expires_in()

    def is_revoked(self) -> bool:
        return False

    def get_user(self) -> str | None:
        return self.user

    def get_client(self) -> Client:
        return self.client


class User:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_user_id(self) -> str:
        return self.name


class TornadoPayload(rfc6749.OAuth2Payload):
    def __init__(self, values: dict[str, str]) -> None:
        self._values = values

    @property
    def data(self) -> dict[str, str]:
        return self._values

    @property
    def datalist(self) -> dict[str, list[str]]:
        return {k: [v] for k, v in self._values.items()}


class TornadoRequest(rfc6749.OAuth2Request):
    def __init__(self, handler: tornado.web.RequestHandler) -> None:
        req = handler.request
        super().__init__(req.method or "GET", req.full_url(), headers=req.headers)
        self._args = {k: handler.get_query_argument(k) for k in req.query_arguments}
        self._form = {k: handler.get_body_argument(k) for k in req.body_arguments}
        self.payload = TornadoPayload({**self._args, **self._form})

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class JsonPayload(rfc6749.JsonPayload):
    def __init__(self, body: bytes) -> None:
        self._data = json.loads(body or b"{}")

    @property
    def data(self) -> Any:
        return self._data


class TornadoJsonRequest(rfc6749.JsonRequest):
    def __init__(self, handler: tornado.web.RequestHandler) -> None:
        req = handler.request
        super().__init__(req.method, req.full_url(), req.headers)
        self.payload = JsonPayload(req.body)


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    def save_authorization_code(self, code: str, request: Any) -> None:
        data = request.payload.data
        self.server.codes[code] = Code(code, request.client.get_client_id(),
                                       data.get("redirect_uri"), request.scope or "",
                                       request.user.get_user_id(), data.get("code_challenge"),
                                       data.get("code_challenge_method"))

    def query_authorization_code(self, code: str, client: Any) -> Code | None:
        found = self.server.codes.get(code)
        return found if found is not None and found.client_id == client.get_client_id() \
            else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        self.server.codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code: Code) -> User:
        return User(authorization_code.user)


class JWTTokens(rfc9068.JWTBearerTokenGenerator):
    def __init__(self, server: AuthorizationServer) -> None:
        super().__init__(issuer=server.issuer, alg="RS256")
        self.server = server

    def get_jwks(self) -> Any:
        return self.server.signing_key

    def get_audiences(self, client: Any, user: Any, scope: str) -> str:
        return _resource.get() or self.server.issuer

    def get_extra_claims(self, client: Any, grant_type: str, user: Any, scope: str
                         ) -> dict[str, Any]:
        return {}


class Registration(rfc7591.ClientRegistrationEndpoint):
    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration, as MCP clients expect

    def get_server_metadata(self) -> dict[str, Any]:
        return self.server.metadata()

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any],
                    request: Any) -> Client:
        client = Client(client_info, client_metadata)
        self.server.clients[client.client_id] = client
        return client


class Introspection(rfc7662.IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic"]

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        return self.server.tokens.get(token_string)

    def introspect_token(self, token: Token) -> dict[str, Any]:
        return {"active": True, "client_id": token.client.client_id,
                "token_type": "Bearer", "scope": token.get_scope(),
                "sub": token.user or token.client.client_id, "aud": token.audience,
                "iss": self.server.issuer, "exp": token.issued_at + token.get_expires_in(),
                "iat": token.issued_at}

    def check_permission(self, token: Token, client: Any, request: Any) -> bool:
        return bool(client.get_client_id() in self.server.resource_servers)


class AuthorizationServer(rfc6749.AuthorizationServer):
    """authlib's authorization server, in memory, answering through Tornado handlers."""

    def __init__(self, issuer: str) -> None:
        super().__init__(scopes_supported=None)
        self.issuer = issuer
        self.user = "alice"
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.tokens: dict[str, Token] = {}
        self.resource_servers: set[str] = set()
        self.keys: list[RSAKey] = []
        self.signing_key = self.rotate()
        self.register_grant(AuthorizationCodeGrant, [rfc7636.CodeChallenge(required=True)])
        self.register_token_generator("default", JWTTokens(self))
        self.register_endpoint(Registration)
        self.register_endpoint(Introspection)

    def rotate(self) -> RSAKey:
        """A new signing key (published beside the old ones)."""
        key = RSAKey.generate_key(2048, parameters={"kid": secrets.token_hex(4),
                                                    "use": "sig", "alg": "RS256"})
        self.keys.append(key)
        self.signing_key = key
        return key

    def jwks(self) -> dict[str, Any]:
        return KeySet(self.keys).as_dict(private=False)

    def add_resource_server(self, client_id: str, secret: str) -> None:
        self.clients[client_id] = Client({"client_id": client_id, "client_secret": secret},
                                         {"grant_types": []})
        self.resource_servers.add(client_id)

    def store_token(self, audience: str, user: str, scope: str = "mcp:tools") -> str:
        """An opaque token issued for ``user`` (as if by a grant), for introspection."""
        value = secrets.token_urlsafe(24)
        client = self.clients.setdefault("test-client", Client({"client_id": "test-client"}, {}))
        self.tokens[value] = Token({"access_token": value, "scope": scope, "expires_in": 300},
                                   client, user, audience)
        return value

    def metadata(self) -> dict[str, Any]:
        base = self.issuer.rstrip("/")
        return {"issuer": self.issuer, "authorization_endpoint": base + "/authorize",
                "token_endpoint": base + "/token", "registration_endpoint": base + "/register",
                "introspection_endpoint": base + "/introspect", "jwks_uri": base + "/jwks",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic",
                                                          "client_secret_post", "none"]}

    # -- authlib's framework hooks --------------------------------------------------------
    def query_client(self, client_id: str) -> Client | None:
        return self.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        user = request.user.get_user_id() if request.user is not None else None
        self.tokens[token["access_token"]] = Token(token, request.client, user, _resource.get())

    def create_oauth2_request(self, request: Any) -> TornadoRequest:
        return TornadoRequest(request)

    def create_json_request(self, request: Any) -> TornadoJsonRequest:
        return TornadoJsonRequest(request)

    def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, Any]:
        return status, body, headers

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass


class _Base(tornado.web.RequestHandler):
    def initialize(self, server: AuthorizationServer) -> None:
        self.server = server

    def check_xsrf_cookie(self) -> None:
        pass

    def answer(self, response: tuple[int, Any, Any]) -> None:
        status, body, headers = response
        self.set_status(status)
        for name, value in headers or []:
            self.set_header(name, value)
        if isinstance(body, dict | list):
            self.set_header("Content-Type", "application/json")
            body = json.dumps(body)
        self.finish(body or "")


class AuthorizeHandler(_Base):
    def get(self) -> None:
        token = _resource.set(self.get_query_argument("resource", None))
        try:
            self.answer(self.server.create_authorization_response(
                self, grant_user=User(self.server.user)))
        finally:
            _resource.reset(token)


class TokenHandler(_Base):
    def post(self) -> None:
        token = _resource.set(self.get_body_argument("resource", None))
        try:
            self.answer(self.server.create_token_response(self))
        finally:
            _resource.reset(token)


class RegisterHandler(_Base):
    def post(self) -> None:
        self.answer(self.server.create_endpoint_response("client_registration", self))


class IntrospectHandler(_Base):
    def post(self) -> None:
        self.answer(self.server.create_endpoint_response("introspection", self))


class MetadataHandler(_Base):
    def get(self) -> None:
        self.answer((200, self.server.metadata(), []))


class JWKSHandler(_Base):
    def get(self) -> None:
        self.server.jwks_requests = getattr(self.server, "jwks_requests", 0) + 1
        self.answer((200, self.server.jwks(), []))


@contextlib.asynccontextmanager
async def authorization_server() -> AsyncIterator[AuthorizationServer]:
    """An authorization server on an ephemeral loopback port for the block."""
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    port = sockets[0].getsockname()[1]
    server = AuthorizationServer(f"http://127.0.0.1:{port}")
    kw = {"server": server}
    app = tornado.web.Application([
        (r"/authorize", AuthorizeHandler, kw), (r"/token", TokenHandler, kw),
        (r"/register", RegisterHandler, kw), (r"/introspect", IntrospectHandler, kw),
        (r"/jwks", JWKSHandler, kw),
        (r"/\.well-known/oauth-authorization-server", MetadataHandler, kw),
    ])
    http = tornado.httpserver.HTTPServer(app)
    http.add_sockets(sockets)
    try:
        yield server
    finally:
        http.stop()
        await http.close_all_connections()


def authorize_url(server: AuthorizationServer, **params: str) -> str:
    return f"{server.issuer}/authorize?{urlencode(params)}"

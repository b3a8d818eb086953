"""authlib, adapted: the OAuth flows themselves are authlib's (the authorization-code grant
with PKCE, the refresh-token grant, RFC 7591 registration, RFC 7009 revocation, the RFC 9207
``iss`` parameter), run over plain request values, without a web framework.

authlib asks for its models synchronously (``query_client``, ``save_token``, ...), and the
store is asynchronous (it may be Redis).  So :class:`~tornado_mcp.issuer.server.Issuer`
loads what a request needs first, into a :class:`Pending` (the client, the code, the
grant, the user's scopes, the signing key), runs authlib over it, and writes what authlib
decided (a code, a token, a client, a revocation) once it returns.  The hooks below read
and write only that :class:`Pending`.
"""

from __future__ import annotations

import contextvars
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from authlib.oauth2 import rfc6749, rfc7009, rfc7591, rfc7636, rfc9207
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6750 import BearerTokenGenerator

from .policy import Policy, redirect_matches
from .records import Client, Code, Grant, digest
from .registration import AUTH_METHODS

#: The request being served (set around each synchronous call into authlib).
CURRENT: contextvars.ContextVar[Pending] = contextvars.ContextVar("tornado_mcp_issuer")


@dataclass
class Call:
    """One HTTP request, as authlib needs it: ``url`` is the endpoint's configured URL
    (never derived from the request's Host), ``query`` and ``form`` every value of
    each parameter."""

    method: str
    url: str
    headers: dict[str, str]
    query: dict[str, list[str]] = field(default_factory=dict)
    form: dict[str, list[str]] = field(default_factory=dict)
    json: dict[str, Any] | None = None


@dataclass
class Pending:
    """What one request loaded before authlib ran, and what authlib decided."""

    clients: dict[str, Client | None] = field(default_factory=dict)
    #: The scopes the user may grant (``None``: not asked; the code's scopes stand).
    allowed: frozenset[str] | None = None
    code: tuple[str, Code] | None = None
    grant: Grant | None = None
    grant_id: str = ""
    resource: str = ""
    signer: tuple[str, Any] | None = None
    refresh_token: str = ""
    metadata: dict[str, Any] | None = None
    revocable: Grant | None = None
    # -- what authlib decided --
    issued_code: tuple[str, Code] | None = None
    token: dict[str, Any] | None = None
    registered: tuple[Client, str | None] | None = None
    revoke: str | None = None


class Response:
    """authlib's answer: status, body and headers (a redirect's ``Location`` is
    :attr:`location`, which RFC 9207's ``iss`` parameter is added to)."""

    def __init__(self, status: int, body: Any, headers: list[tuple[str, str]]) -> None:
        self.status, self.body, self.headers = status, body, headers

    @property
    def location(self) -> str | None:
        return next((v for k, v in self.headers if k.lower() == "location"), None)

    @location.setter
    def location(self, value: str) -> None:
        self.headers = [(k, v) for k, v in self.headers if k.lower() != "location"]
        self.headers.append(("Location", value))


class User:
    def __init__(self, subject: str) -> None:
        self.subject = subject

    def get_user_id(self) -> str:
        return self.subject


class ClientModel(rfc6749.ClientMixin):
    """A :class:`~tornado_mcp.issuer.records.Client` as authlib sees it."""

    def __init__(self, client: Client, policy: Policy, supported: frozenset[str]) -> None:
        self.record, self.policy, self.supported = client, policy, supported

    def get_client_id(self) -> str:
        return self.record.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.record.redirect_uris
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        """What may be granted of ``scope`` (all offered when it is empty): never more
        than the server offers nor, when known, than the user may grant; unknown scopes
        (``offline_access``, ``openid``, ...) are left out rather than refused."""
        pending = CURRENT.get()
        asked = set(scope.split()) if scope else set(self.supported)
        kept = asked & self.supported
        if pending.allowed is not None:
            kept &= pending.allowed
        return " ".join(sorted(kept))

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return self.policy.redirect_refusal(redirect_uri) is None and any(
            redirect_matches(r, redirect_uri) for r in self.record.redirect_uris)

    def check_client_secret(self, client_secret: str) -> bool:
        known = self.record.secret_hash
        return known is not None and hmac.compare_digest(known, digest(client_secret))

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.record.auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in (self.record.metadata.get("grant_types") or ())


class Payload(rfc6749.OAuth2Payload):
    def __init__(self, values: dict[str, list[str]]) -> None:
        self._datalist = values
        self._data = {k: v[0] for k, v in values.items() if v}

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> dict[str, list[str]]:
        return self._datalist


class Request(rfc6749.OAuth2Request):
    def __init__(self, call: Call) -> None:
        super().__init__(call.method, call.url, headers=call.headers)
        self.call = call
        self.payload = Payload({**call.query, **call.form})

    @property
    def args(self) -> dict[str, str]:
        return {k: v[0] for k, v in self.call.query.items() if v}

    @property
    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in self.call.form.items() if v}


class JsonPayload(rfc6749.JsonPayload):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class JsonRequest(rfc6749.JsonRequest):
    def __init__(self, call: Call) -> None:
        super().__init__(call.method, call.url, call.headers)
        self.payload = JsonPayload(call.json or {})


class S256Only(rfc7636.CodeChallenge):
    """PKCE, required of every client and with S256 only (OAuth 2.1, MCP): a request
    without a challenge, or with ``plain`` or no method, is refused."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise rfc6749.InvalidRequestError("PKCE is required: send a code_challenge")
        if data.get("code_challenge_method") != "S256":
            raise rfc6749.InvalidRequestError("code_challenge_method must be S256")
        super().validate_code_challenge(grant, redirect_uri)


AUTH = list(AUTH_METHODS)


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH

    def save_authorization_code(self, code: str, request: Any) -> None:
        data = request.payload.data
        pending = CURRENT.get()
        pending.issued_code = (code, Code(
            request.client.get_client_id(), data.get("redirect_uri") or "",
            request.user.get_user_id(), tuple((request.scope or "").split()),
            pending.resource, data["code_challenge"], data["code_challenge_method"], 0))

    def query_authorization_code(self, code: str, client: Any) -> CodeModel | None:
        found = CURRENT.get().code
        if found is None or not hmac.compare_digest(found[0], digest(code)):
            return None
        return CodeModel(found[1]) if found[1].client_id == client.get_client_id() else None

    def delete_authorization_code(self, authorization_code: CodeModel) -> None:
        pass  # taken from the store, atomically, once authlib is done

    def authenticate_user(self, authorization_code: CodeModel) -> User:
        return User(authorization_code.code.subject)


class CodeModel(rfc6749.AuthorizationCodeMixin):
    """A :class:`~tornado_mcp.issuer.records.Code` as authlib sees it."""

    def __init__(self, code: Code) -> None:
        self.code = code
        self.code_challenge = code.code_challenge
        self.code_challenge_method = code.code_challenge_method

    def get_redirect_uri(self) -> str:
        return self.code.redirect_uri

    def get_scope(self) -> str:
        return " ".join(self.code.scopes)


class RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> Any:
        grant = CURRENT.get().grant
        if grant is None or not hmac.compare_digest(grant.refresh_hash, digest(refresh_token)):
            return None
        return GrantModel(grant)

    def authenticate_user(self, refresh_token: Any) -> User:
        return User(refresh_token.grant.subject)

    def revoke_old_credential(self, refresh_token: Any) -> None:
        pass  # rotated in the store, atomically, once authlib is done


class GrantModel(rfc6749.TokenMixin):
    """A grant as authlib's refresh and revocation endpoints see a token."""

    def __init__(self, grant: Grant) -> None:
        self.grant = grant

    def check_client(self, client: Any) -> bool:
        return bool(client.get_client_id() == self.grant.client_id)

    def get_scope(self) -> str:
        return " ".join(self.grant.scopes)

    def get_expires_in(self) -> int:
        return 0

    def is_expired(self) -> bool:
        return False

    def is_revoked(self) -> bool:
        return False


class Registration(rfc7591.ClientRegistrationEndpoint):
    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration, as MCP clients expect (bounded, rate-limited)

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        metadata = CURRENT.get().metadata
        assert metadata is not None  # validated (with authlib's claims) before authlib runs
        return metadata

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        if CURRENT.get().metadata.get("token_endpoint_auth_method") == "none":  # type: ignore[union-attr]
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def get_server_metadata(self) -> dict[str, Any]:
        return {}

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any],
                    request: Any) -> ClientModel:
        secret = client_info.get("client_secret")
        client = Client(client_info["client_id"], dict(client_metadata),
                        digest(secret) if secret else None, client_info["client_id_issued_at"])
        CURRENT.get().registered = (client, secret)
        server: AuthorizationServer = self.server
        return ClientModel(client, server.policy, server.supported)


class Revocation(rfc7009.RevocationEndpoint):
    CLIENT_AUTH_METHODS = AUTH

    def query_token(self, token_string: str, token_type_hint: str | None) -> Any:
        found = CURRENT.get().revocable
        return GrantModel(found) if found is not None else None

    def revoke_token(self, token: Any, request: Any) -> None:
        CURRENT.get().revoke = token.grant.grant_id


class IssuerParameter(rfc9207.IssuerParameter):
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def get_issuer(self) -> str:
        return self.issuer


class AuthorizationServer(rfc6749.AuthorizationServer):
    """authlib's authorization server over :class:`Pending` values."""

    def __init__(self, issuer: str, policy: Policy, supported: Iterable[str],
                 access_token: Callable[..., str], expires_in: Callable[[], int]) -> None:
        super().__init__(scopes_supported=None)
        self.issuer = issuer
        self.policy = policy
        self.supported = frozenset(supported)
        self.register_grant(CodeGrant, [S256Only(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Registration)
        self.register_endpoint(Revocation)
        self.register_extension(IssuerParameter(issuer))
        self.register_token_generator("default", BearerTokenGenerator(
            access_token, lambda **_: CURRENT.get().refresh_token,
            lambda client, grant_type: expires_in()))

    def query_client(self, client_id: str) -> ClientModel | None:
        found = CURRENT.get().clients.get(client_id)
        return ClientModel(found, self.policy, self.supported) if found is not None else None

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        CURRENT.get().token = token

    def validate_requested_scope(self, scope: str) -> None:
        pass  # unknown scopes are left out (ClientModel.get_allowed_scope), not refused

    def create_oauth2_request(self, request: Any) -> Request:
        return request if isinstance(request, Request) else Request(request)

    def create_json_request(self, request: Any) -> JsonRequest:
        return JsonRequest(request)

    def handle_response(self, status: int, body: Any, headers: Any) -> Response:
        return Response(status, body, list(headers or []))

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

"""The authorization server's flows, over any store: :class:`Issuer`.

Each public coroutine serves one endpoint.  It loads what the request needs from the
store, runs authlib over it (:mod:`.glue`), then writes what authlib decided, taking the
one-use things (a code, a refresh token) atomically only once authlib accepted the
request, so a request authlib refuses (a wrong PKCE verifier, another client's
credentials) costs the rightful client nothing:

* :meth:`Issuer.authorize` checks an authorization request for a logged-in user and
  returns what the consent page shows (or the error, as a redirect to the client once
  its redirect URI is known to be the client's, else as a page: never an open redirect);
* :meth:`Issuer.decide` honours the consent form (its signed ticket) with a code, or
  ``access_denied``;
* :meth:`Issuer.token` trades a code (PKCE S256) or a refresh token (rotated; one
  presented again ends its grant) for an access token meant for one resource (RFC 8707).

Registration, revocation and what the dashboard does are :class:`~.desk.Desk`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from authlib.common.urls import add_params_to_uri
from authlib.oauth2 import OAuth2Error

from ..options import Options
from ..protocol import Refusal
from .consent import Tickets
from .desk import Desk
from .glue import CURRENT, AuthorizationServer, Call, Pending, Request, Response, User
from .keys import KeyRing
from .policy import Policy
from .records import Client, Grant, digest, new_secret, now
from .registration import MetadataError
from .store import REUSED, ROTATED
from .tokens import IssuedTokens, claims_for, sign

log = logging.getLogger("tornado_mcp.authserver")

#: The authorization request parameters a consent ticket carries.
AUTHORIZE_PARAMS = ("response_type", "client_id", "redirect_uri", "scope", "state",
                    "code_challenge", "code_challenge_method", "resource")
_ALLOWED = {chr(c) for c in (*range(0x20, 0x22), *range(0x23, 0x5C), *range(0x5D, 0x7F))}


def clean(text: str) -> str:
    """``text`` in the characters an OAuth error description may hold (RFC 6749 §5.2)."""
    return "".join(c for c in text if c in _ALLOWED)[:300]


@dataclass
class Answer:
    """What an endpoint answers: ``body`` a JSON object (or ``None``), ``page`` when a
    browser should be shown an error page instead of JSON."""

    status: int
    body: dict[str, Any] | None = None
    headers: list[tuple[str, str]] | None = None
    page: bool = False

    @property
    def location(self) -> str | None:
        return next((v for k, v in self.headers or () if k.lower() == "location"), None)


@dataclass
class Consent:
    """What the consent page asks the user: may ``client`` have ``scopes`` of
    ``resource``, answering at ``redirect_uri``?"""

    client: Client
    scopes: list[str]
    #: Scopes the client asked for that the user may not grant (shown, not granted).
    withheld: list[str]
    redirect_uri: str
    resource: str
    ticket: str


class Issuer(Desk):
    """The authorization server of ``issuer`` (its URL) for ``resources`` (the canonical
    URLs of the endpoints it issues tokens for), offering ``scopes``."""

    def __init__(self, issuer: str, resources: Iterable[str], scopes: Mapping[str, str],
                 store: Any, policy: Policy, options: Options,
                 count: Callable[[Refusal], None], *, urls: Mapping[str, str],
                 ring: KeyRing, ca_certs: str | None = None) -> None:
        super().__init__(store, policy, options, count, ca_certs)
        self.issuer = issuer
        self.resources = list(resources)
        self.scopes = dict(scopes)
        self.urls = dict(urls)
        self.ring = ring
        self.tokens = IssuedTokens(issuer, ring, store)
        self.revocations = self.tokens.revocations
        self.tickets = Tickets(store.secret)
        self.oauth = AuthorizationServer(issuer, policy, self.scopes, self._access_token,
                                         lambda: policy.access_token_ttl)

    # -- helpers --------------------------------------------------------------------------
    def _access_token(self, client: Any, grant_type: str, user: Any, scope: str) -> str:
        pending = CURRENT.get()
        assert pending.signer is not None
        claims = claims_for(self.issuer, user.get_user_id(), client.get_client_id(),
                            scope.split(), pending.resource, pending.grant_id,
                            self.policy.access_token_ttl)
        return sign(claims, *pending.signer)

    async def allowed(self, subject: str) -> frozenset[str]:
        """The scopes ``subject`` may grant: the host's ``user_scopes`` answer, within what
        the server offers."""
        hook = self.policy.user_scopes
        if hook is None:
            return frozenset(self.scopes)
        found = hook(subject)
        if not isinstance(found, Iterable):
            found = await found
        return frozenset(s for s in found if s in self.scopes)

    def _resource(self, values: list[str] | None) -> str | None:
        """The endpoint an authorization request names (one ``resource``; none names the
        only endpoint there is), or ``None``.  A trailing slash names the same endpoint
        (MCP's canonical URIs have none; some clients add one)."""
        if not values:
            return self.resources[0] if len(self.resources) == 1 else None
        return next((r for r in self.resources if same_resource(values[0], r)), None) \
            if len(values) == 1 else None

    def _error(self, call: Call, exc: OAuth2Error) -> Answer:
        status, body, headers = exc(None)
        answer = Answer(status, body if isinstance(body, dict) else dict(body or {}),
                        list(headers or []), page=exc.redirect_uri is None)
        if answer.location is not None:  # RFC 9207: errors name the issuer too
            answer.headers = [("Location", add_params_to_uri(answer.location,
                                                             [("iss", self.issuer)]))]
        return answer

    async def _load_client(self, pending: Pending, client_id: str | None) -> None:
        if client_id:
            pending.clients[client_id] = await self.find_client(client_id)

    # -- the authorization endpoint -------------------------------------------------------
    async def authorize(self, call: Call, subject: str) -> Consent | Answer:
        """The consent to ask ``subject`` for, or the answer refusing ``call``."""
        pending = Pending()
        params = call.query
        try:
            await self._load_client(pending, (params.get("client_id") or [""])[0])
        except MetadataError as exc:
            if exc.refusal is not None:
                self.count(exc.refusal)
            return Answer(400, {"error": "invalid_client",
                                "error_description": clean(exc.description)}, page=True)
        pending.allowed = await self.allowed(subject)
        try:
            grant = self._run(pending, lambda: self.oauth.get_consent_grant(
                Request(call), end_user=User(subject)))
            client = pending.clients[grant.request.client.get_client_id()]
            assert client is not None
            refusal = self.policy.client_refusal(client)
            if refusal is not None:
                raise OAuth2Error(clean(refusal), error="access_denied",
                                  redirect_uri=grant.redirect_uri,
                                  state=grant.request.payload.state)
            resource = self._resource(params.get("resource"))
            if resource is None:
                raise OAuth2Error("resource must name one endpoint of this server",
                                  error="invalid_target", redirect_uri=grant.redirect_uri,
                                  state=grant.request.payload.state)
        except OAuth2Error as exc:
            return self._error(call, exc)
        asked = set((params.get("scope") or [""])[0].split())
        granted = sorted(set(grant.request.scope.split()))
        ticket = self.tickets.issue(subject, {k: v[0] for k, v in params.items()
                                              if k in AUTHORIZE_PARAMS and v})
        return Consent(client, granted, sorted((asked & set(self.scopes)) - set(granted)),
                       grant.redirect_uri, resource, ticket)

    async def decide(self, ticket: str, subject: str, approve: bool) -> Answer:
        """The answer to the consent form: a redirect with a code (or ``access_denied``),
        or an error page for a ticket that is not this user's or has expired."""
        params = self.tickets.open(ticket, subject)
        if params is None:
            return Answer(400, {"error": "invalid_request", "error_description":
                                "this consent form has expired or was not shown to you; "
                                "start again from your application"}, page=True)
        call = Call("GET", self.urls["authorize"] + "?" + urlencode(params), {},
                    query={k: [v] for k, v in params.items()})
        consent = await self.authorize(call, subject)
        if isinstance(consent, Answer):
            return consent
        pending = Pending(allowed=await self.allowed(subject), resource=consent.resource)
        pending.clients[consent.client.client_id] = consent.client

        def respond() -> Response:
            request = Request(call)
            grant = self.oauth.get_consent_grant(request, end_user=User(subject))
            user = User(subject) if approve else None
            result: Response = self.oauth.create_authorization_response(
                request, grant_user=user, grant=grant)
            return result

        try:
            done = self._run(pending, respond)
        except OAuth2Error as exc:
            return self._error(call, exc)
        answer = Answer(done.status, done.body if isinstance(done.body, dict) else None,
                        done.headers)
        if pending.issued_code is not None:
            code, record = pending.issued_code
            record.expires = now() + self.policy.code_ttl
            if not await self.store.add_code(digest(code), record):
                self.count(Refusal.OAUTH_PENDING_CODES)
                return self._error(call, OAuth2Error(
                    "too many sign-ins are under way; try again shortly",
                    error="temporarily_unavailable", redirect_uri=consent.redirect_uri,
                    state=params.get("state")))
            log.info("%s authorized client %s for %s", subject, consent.client.client_id,
                     " ".join(record.scopes) or "no scopes")
        return answer

    # -- the token endpoint ---------------------------------------------------------------
    async def token(self, call: Call) -> Answer:
        """The token endpoint's answer to ``call`` (a form POST)."""
        form = {k: v[0] for k, v in call.form.items() if v}
        pending = Pending(signer=await self.ring.signer())
        try:
            await self._load_client(pending, self.client_id_of(call))
        except MetadataError as exc:
            return Answer(400, {"error": "invalid_client",
                                "error_description": clean(exc.description)})
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            return await self._code(call, form, pending)
        if grant_type == "refresh_token":
            return await self._refresh(call, form, pending)
        return self._respond(call, pending)

    def _respond(self, call: Call, pending: Pending) -> Answer:
        done = self._endpoint(pending, lambda: self.oauth.create_token_response(
            Request(call)))
        return Answer(done.status, done.body if isinstance(done.body, dict) else None,
                      done.headers)

    async def _code(self, call: Call, form: dict[str, str], pending: Pending) -> Answer:
        key = digest(form.get("code") or "")
        record = await self.store.code(key)
        if record is None:
            earlier = await self.store.code_replayed(key)
            if earlier is not None:
                return await self._replayed(earlier, "authorization code")
        elif not same_resource(form.get("resource", record.resource), record.resource):
            return invalid_target()
        else:
            pending.code = (key, record)
            pending.resource = record.resource
        pending.grant_id = new_secret(12)
        pending.refresh_token = f"{pending.grant_id}.{new_secret()}"
        answer = self._respond(call, pending)
        if answer.status != 200 or record is None or pending.token is None:
            return answer
        if not await self.store.take_code(key, pending.grant_id, self.policy.code_ttl):
            earlier = await self.store.code_replayed(key)
            return await self._replayed(earlier or "", "authorization code")
        t = now()
        refresh = pending.token.get("refresh_token")
        grant = Grant(pending.grant_id, record.subject, record.client_id,
                      tuple(str(pending.token.get("scope", "")).split()), record.resource, t,
                      t + self.policy.refresh_token_ttl, digest(refresh) if refresh else "")
        pushed = await self.store.add_grant(grant)
        if pushed:
            await self.revoke_grants(pushed)
        await self.store.client_used(record.client_id, t)
        return answer

    async def _refresh(self, call: Call, form: dict[str, str], pending: Pending) -> Answer:
        presented = form.get("refresh_token") or ""
        grant_id = presented.partition(".")[0]
        grant = await self.store.grant(grant_id) if grant_id else None
        if grant is not None:
            if not same_resource(form.get("resource", grant.resource), grant.resource):
                return invalid_target()
            pending.grant, pending.resource = grant, grant.resource
            pending.allowed = await self.allowed(grant.subject)
        pending.grant_id = grant_id
        pending.refresh_token = f"{grant_id}.{new_secret()}"
        old_hash = digest(presented)
        current = grant is not None and grant.refresh_hash == old_hash
        if not current:
            pending.grant = None  # authlib refuses it; whether it was a rotated one, below
        answer = self._respond(call, pending)
        if grant is None:
            return answer
        if not current:  # not the current token (it never becomes so): was it a rotated one?
            outcome = await self.store.rotate_refresh(grant_id, old_hash, "", 0, ())
            return await self._replayed(grant_id, "refresh token") if outcome == REUSED \
                else answer
        if answer.status != 200 or pending.token is None:
            return answer
        scopes = tuple(str(pending.token.get("scope", "")).split())
        outcome = await self.store.rotate_refresh(
            grant_id, old_hash, digest(pending.refresh_token),
            now() + self.policy.refresh_token_ttl, scopes)
        if outcome == ROTATED:
            return answer
        if outcome == REUSED:  # presented twice at once: the loser is a reuse
            return await self._replayed(grant_id, "refresh token")
        return Answer(400, {"error": "invalid_grant",
                            "error_description": "refresh token is not valid"},
                      [("Cache-Control", "no-store")])

    async def _replayed(self, grant_id: str, what: str) -> Answer:
        """A one-use credential presented again: whatever it was traded for ends now."""
        if grant_id:
            await self.revoke_grants([grant_id])
        log.warning("a used %s was presented again: its grant %s is revoked", what,
                    grant_id or "(none issued)")
        return Answer(400, {"error": "invalid_grant",
                            "error_description": f"{what} was already used"},
                      [("Cache-Control", "no-store")])

    # -- metadata -------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """The authorization server's metadata (RFC 8414)."""
        methods = ["none", "client_secret_post", "client_secret_basic"]
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.urls["authorize"],
            "token_endpoint": self.urls["token"],
            "registration_endpoint": self.urls["register"],
            "revocation_endpoint": self.urls["revoke"],
            "jwks_uri": self.urls["jwks"],
            "scopes_supported": list(self.scopes),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": methods,
            "revocation_endpoint_auth_methods_supported": methods,
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }


def same_resource(given: str, resource: str) -> bool:
    """Whether ``given`` names ``resource``: the same URL, or it with a trailing slash."""
    return given == resource or given == resource + "/"


def invalid_target() -> Answer:
    return Answer(400, {"error": "invalid_target", "error_description":
                        "resource is not the one this code or grant was issued for"},
                  [("Cache-Control", "no-store")])


"""The authorization server's front desk: who the clients are, registering them (RFC 7591),
revoking what they hold (RFC 7009), and what an operator sees and ends on the dashboard.

Registration is open, as MCP clients expect, and bounded: at most
``oauth_registrations_per_minute`` per client address (429 past it, counted), metadata of
at most ``oauth_max_client_metadata_bytes`` naming at most ``oauth_max_redirect_uris``
redirect URIs, and ``oauth_max_clients`` clients kept (a client nobody ever authorized
makes room for a new one; when every one was, registration is refused with 503).
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import InvalidRequestError

from ..options import Options
from ..protocol import Refusal
from ..protocol.auth_errors import InvalidToken
from .cimd import MetadataDocuments, is_metadata_url
from .glue import CURRENT, AuthorizationServer, Call, Pending, Response
from .policy import Policy
from .records import Client, Grant, digest
from .registration import MetadataError, parse, validate
from .tokens import IssuedTokens, Revocations

log = logging.getLogger("tornado_mcp.authserver")

#: Seconds past an access token's lifetime a revoked grant stays listed (clock skew).
REVOCATION_MARGIN = 60.0


class Desk:
    """Clients, registration, revocation and the operator's view, over ``store``."""

    oauth: AuthorizationServer
    tokens: IssuedTokens
    revocations: Revocations

    def __init__(self, store: Any, policy: Policy, options: Options,
                 count: Callable[[Refusal], None], ca_certs: str | None = None) -> None:
        self.store = store
        self.policy = policy
        self.options = options
        self.count = count
        self.documents = MetadataDocuments(
            policy, lambda: self.options.oauth_max_client_metadata_bytes,
            lambda: self.options.oauth_max_redirect_uris, ca_certs=ca_certs)

    def _run(self, pending: Pending, fn: Callable[[], Any]) -> Any:
        """``fn`` (a call into authlib) over ``pending``.  authlib repeats some of the
        request's values in its error descriptions, and refuses (``ValueError``) to make an
        error whose description holds a character RFC 6749 forbids there (``"``, ``\\``):
        such a request is answered ``invalid_request`` instead."""
        token = CURRENT.set(pending)
        try:
            return fn()
        except ValueError as exc:
            if "forbidden characters" not in str(exc):
                raise
            raise InvalidRequestError("the request holds characters this server does "
                                      "not accept") from None
        finally:
            CURRENT.reset(token)

    def _endpoint(self, pending: Pending, fn: Callable[[], Any]) -> Response:
        """:meth:`_run` for the token, registration and revocation endpoints, which
        answer every refusal as JSON."""
        try:
            done: Response = self._run(pending, fn)
        except OAuth2Error as exc:
            status, body, headers = exc(None)
            return Response(status, dict(body), list(headers))
        return done

    # -- clients --------------------------------------------------------------------------
    async def find_client(self, client_id: str) -> Client | None:
        """The client ``client_id`` names: registered, or described by the metadata
        document at that URL (:class:`MetadataError` when that document will not do)."""
        if len(client_id) > 2048:
            return None
        if is_metadata_url(client_id):
            return await self.documents.client(client_id)
        found: Client | None = await self.store.client(client_id)
        return found

    @staticmethod
    def client_id_of(call: Call) -> str | None:
        """The client a token or revocation request is from: HTTP Basic, else the form."""
        auth = call.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "basic" and value:
            try:
                user = base64.b64decode(value.strip(), validate=True).decode().partition(":")[0]
            except (binascii.Error, UnicodeDecodeError, ValueError):
                return None
            return unquote(user) or None
        values = call.form.get("client_id")
        return values[0] if values else None

    # -- registration (RFC 7591) ----------------------------------------------------------
    async def register(self, call: Call, body: bytes, address: str) -> tuple[
            int, dict[str, Any], list[tuple[str, str]]]:
        """The registration endpoint's answer: status, JSON body, headers."""
        headers = [("Cache-Control", "no-store")]
        limit = self.options.oauth_registrations_per_minute
        if limit is not None and await self.store.hit(f"register:{address}", 60.0) > limit:
            self.count(Refusal.OAUTH_REGISTRATIONS_PER_MINUTE)
            return 429, {"error": "too_many_requests", "error_description":
                         f"at most {limit} registrations a minute from one address"}, \
                [*headers, ("Retry-After", "60")]
        try:
            data = parse(body, self.options.oauth_max_client_metadata_bytes)
            meta = validate(data, self.policy, self.options.oauth_max_redirect_uris)
        except MetadataError as exc:
            if exc.refusal is not None:
                self.count(exc.refusal)
            return 400, {"error": exc.error, "error_description": exc.description}, headers
        pending = Pending(metadata=meta)
        call.json = data
        done = self._endpoint(pending, lambda: self.oauth.create_endpoint_response(
            "client_registration", call))
        status, answer, extra = done.status, done.body, done.headers
        if status != 201 or pending.registered is None:
            return status, dict(answer or {}), [*headers, *extra]
        client = pending.registered[0]
        refusal = self.policy.client_refusal(client)
        if refusal is not None:
            return 400, {"error": "invalid_client_metadata",
                         "error_description": refusal}, headers
        if not await self.store.add_client(client, self.options.oauth_max_clients):
            self.count(Refusal.OAUTH_MAX_CLIENTS)
            return 503, {"error": "temporarily_unavailable", "error_description":
                         "this server keeps no more clients; try again later"}, \
                [*headers, ("Retry-After", "3600")]
        log.info("registered OAuth client %s (%s) from %s", client.client_id, client.name,
                 address)
        return 201, dict(answer), [*headers, *extra]

    # -- revocation (RFC 7009) ------------------------------------------------------------
    async def revoke(self, call: Call) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        """The revocation endpoint's answer: the token's grant ends (all its tokens)."""
        pending = Pending()
        client_id = self.client_id_of(call)
        if client_id:
            try:
                pending.clients[client_id] = await self.find_client(client_id)
            except MetadataError:
                pending.clients[client_id] = None
        token = (call.form.get("token") or [""])[0]
        pending.revocable = await self._grant_of(token) if token else None
        done = self._endpoint(pending, lambda: self.oauth.create_endpoint_response(
            "revocation", call))
        status, body, headers = done.status, done.body, done.headers
        if pending.revoke is not None:
            await self.revoke_grants([pending.revoke])
            log.info("client %s revoked its grant %s", client_id, pending.revoke)
        return status, dict(body or {}), list(headers)

    async def _grant_of(self, token: str) -> Grant | None:
        """The live grant ``token`` (a refresh token, or an access token of ours) is of."""
        if token.count(".") == 1:  # a refresh token: "<grant id>.<secret>"
            grant = await self.store.grant(token.partition(".")[0])
            return grant if grant is not None and grant.refresh_hash == digest(token) else None
        try:
            claims = await self.tokens.claims(token)
        except InvalidToken:
            return None
        gid = claims.get("gid")
        grant = await self.store.grant(gid) if isinstance(gid, str) else None
        return grant if grant is not None and grant.client_id == claims.get("client_id") \
            else None

    async def revoke_grants(self, grant_ids: list[str]) -> None:
        """End these grants now: their refresh tokens at once, their access tokens at the
        endpoint's next check (at once in this process)."""
        until = time.time() + self.policy.access_token_ttl + REVOCATION_MARGIN
        await self.store.revoke(grant_ids, until)
        self.revocations.note(grant_ids, until)

    # -- the operator's view --------------------------------------------------------------
    async def client_list(self) -> list[dict[str, Any]]:
        """Every registered client, with how many live grants it holds."""
        grants = await self.store.grants()
        return [{**c.public(), "grants": sum(g.client_id == c.client_id for g in grants)}
                for c in await self.store.clients()]

    async def consents(self, subject: str | None = None) -> list[dict[str, Any]]:
        """Who let which client in: one row per user and client, with its grants."""
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        names = {c.client_id: c.name for c in await self.store.clients()}
        for g in await self.store.grants():
            if subject is not None and g.subject != subject:
                continue
            row = rows.setdefault((g.subject, g.client_id), {
                "subject": g.subject, "client_id": g.client_id,
                "client_name": names.get(g.client_id, g.client_id), "scopes": [],
                "grants": 0, "created": g.created, "last_used": g.refreshed or g.created})
            row["grants"] += 1
            row["scopes"] = sorted(set(row["scopes"]) | set(g.scopes))
            row["created"] = min(row["created"], g.created)
            row["last_used"] = max(row["last_used"], g.refreshed or g.created)
        return sorted(rows.values(), key=lambda r: (r["subject"], r["client_name"]))

    async def revoke_consent(self, subject: str, client_id: str) -> int:
        """End everything ``subject`` gave ``client_id``; how many grants ended."""
        gids = [g.grant_id for g in await self.store.grants()
                if g.subject == subject and g.client_id == client_id]
        if gids:
            await self.revoke_grants(gids)
        return len(gids)

    async def remove_client(self, client_id: str) -> bool:
        """Forget a registered client and end every grant it holds."""
        gids = [g.grant_id for g in await self.store.grants() if g.client_id == client_id]
        if gids:
            await self.revoke_grants(gids)
        return bool(await self.store.remove_client(client_id)) or bool(gids)

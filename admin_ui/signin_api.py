"""The dashboard's view of the app's own authorization server (``tornado_mcp.authserver``):
which assistants registered, and which user let which client in, each revocable live.

Mounted with ``admin_ui.routes(transport, ..., signin=signin)``; without ``signin`` these
endpoints answer 404.  They use only the public methods of
:class:`tornado_mcp.authserver.SignIn` an operator needs.  Revoking a consent ends
every grant that user gave that client: its refresh tokens at once, its access tokens at
the endpoint's next check (at once in this process, within a second elsewhere in a
cluster).  Every change is logged and recorded in "Recent changes".
"""

from __future__ import annotations

from typing import Any

from .base import AdminHandler, ApiError, log

#: The longest subject or client id the API accepts (client ids may be URLs).
MAX_ID_CHARS = 2048


def _signin(handler: AdminHandler) -> Any:
    signin = handler.admin.signin
    if signin is None:
        raise ApiError(404, "This dashboard has no sign-in (mount it with signin=).")
    return signin


def _field(body: Any, name: str) -> str:
    value = body.get(name) if isinstance(body, dict) else None
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise ApiError(400, "Send subject and client_id.",
                       {name: f"must be a non-empty string of at most {MAX_ID_CHARS} "
                              "characters"})
    return value


class ClientsHandler(AdminHandler):
    """``GET api/oauth/clients``: every registered client (never a secret)."""

    async def get(self) -> None:
        self.write_json({"items": await _signin(self).clients(),
                         "read_only": self.admin.read_only})


class ClientHandler(AdminHandler):
    """``DELETE api/oauth/clients/<client_id>``: forget the client, ending all it holds."""

    async def delete(self, client_id: str) -> None:
        if len(client_id) > MAX_ID_CHARS:
            raise ApiError(400, "That client id is too long.")
        if not await _signin(self).remove_client(client_id):
            raise ApiError(404, "No such client.")
        actor = self.actor()
        log.info("admin: %s removed OAuth client %s", actor, client_id)
        self.admin.record(actor, "remove_client", {"client_id": client_id})
        self.write_json({"client_id": client_id, "removed": True})


class ConsentsHandler(AdminHandler):
    """``GET api/oauth/consents[?subject=]``: one row per user and client; ``DELETE`` with
    ``{"subject", "client_id"}`` takes that consent back."""

    async def get(self) -> None:
        subject = self.get_query_argument("subject", None) or None
        if subject is not None and len(subject) > MAX_ID_CHARS:
            raise ApiError(400, "Bad query.", {"subject": "too long"})
        self.write_json({"items": await _signin(self).consents(subject), "subject": subject,
                         "read_only": self.admin.read_only})

    async def delete(self) -> None:
        body = self.read_json()
        subject, client_id = _field(body, "subject"), _field(body, "client_id")
        ended = await _signin(self).revoke_consent(subject, client_id)
        if not ended:
            raise ApiError(404, "No such consent (it may have expired or been revoked).")
        actor = self.actor()
        log.info("admin: %s revoked what %s gave client %s (%d grants)", actor, subject,
                 client_id, ended)
        self.admin.record(actor, "revoke_consent", {"subject": subject,
                                                    "client_id": client_id, "grants": ended})
        self.write_json({"subject": subject, "client_id": client_id, "revoked": ended})

"""Sign in with the host app: its own login as the OAuth authorization server MCP clients use.

An app that embeds the endpoint already has users and a login page.  :class:`SignIn` turns
that login into an OAuth 2.1 authorization server beside the endpoint, so the assistants
people use (Claude, ChatGPT, VS Code, Cursor, the Inspector) connect the way the MCP
authorization spec says: they discover it from the endpoint's 401, register (RFC 7591, or
a Client ID Metadata Document), send the user's browser to the app's own login and a
consent page, and come back with a token the endpoint checks in-process::

    signin = SignIn("https://notes.example.com", login=BaseHandler,
                    scopes={"notes": "Read and write your notes"})
    transport = Transport(server, oauth=signin.protect("/mcp"))
    app = tornado.web.Application([*transport.routes("/mcp"), *signin.routes(transport)],
                                  login_url="/login", cookie_secret=...)

``login``: the app's base handler, whose ``get_current_user`` says who is logged in
(``subject`` turns that user into the name tokens carry; a string user is its own name).
Needs the ``authserver`` extra (``pip install '.[authserver]'``).  Walk-through,
per-client configuration and the bounds: ``docs/auth.md``, "Let your users' assistants in".
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import jinja2
import tornado.web

from ..auth.quietlog import Throttled
from ..auth.resource import OAuthResource, canonical_resource
from ..issuer.keys import KeyRing
from ..issuer.policy import Policy, is_loopback
from ..issuer.server import Issuer
from ..issuer.store import IssuerStore, MemoryStore
from ..options import Options
from ..protocol import Refusal
from .handlers import (
    JWKSHandler,
    MetadataHandler,
    RegisterHandler,
    RevokeHandler,
    TokenHandler,
)
from .pages import AuthorizePage, local_next

if TYPE_CHECKING:
    from ..transport import Transport

__all__ = ["Policy", "SignIn", "local_next"]

HERE = Path(__file__).resolve().parent
WELL_KNOWN = "/.well-known/oauth-authorization-server"


def default_subject(user: Any) -> str:
    """A user as the name tokens carry: a string is its own name."""
    if isinstance(user, bytes):
        user = user.decode()
    if isinstance(user, str) and user:
        return user
    raise TypeError(f"SignIn cannot name a user of type {type(user).__name__}: "
                    "pass subject=, a function returning the user's name")


class SignIn:
    """The host app's login as an OAuth authorization server (see the module's doc).

    ``base_url``: the app's public URL (``https://...``; ``http`` only on loopback); the
    issuer, and the base of every endpoint's URL (never taken from a request).
    ``scopes``: the scopes offered, with what each lets a client do (shown on the
    consent page).  ``policy``: the host's rules (:class:`Policy`: which scopes a user may
    grant, which clients are welcome, lifetimes).  ``store``: where clients, grants and
    keys are kept (:class:`~tornado_mcp.issuer.MemoryStore` by default; a
    :class:`~tornado_mcp.issuer.redis_store.RedisStore` in a cluster).  ``prefix``: where
    the endpoints are mounted.  ``algorithm`` and ``rotate_keys_after``: the signing keys.
    ``app_name``: what the consent page calls the app.  ``ca_certs``: CA bundle for
    fetching Client ID Metadata Documents (default: the system's).
    """

    def __init__(self, base_url: str, *, login: type[tornado.web.RequestHandler] = (
                 tornado.web.RequestHandler),
                 subject: Callable[[Any], str] = default_subject,
                 scopes: Mapping[str, str] | Iterable[str] = (), policy: Policy | None = None,
                 store: IssuerStore | None = None, prefix: str = "/oauth",
                 algorithm: str = "RS256", rotate_keys_after: float = 30 * 86400.0,
                 app_name: str | None = None, ca_certs: str | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query \
                or parts.fragment:
            raise ValueError(f"base_url must be the app's absolute URL, not {base_url!r}")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            raise ValueError("base_url must use https (plain http only on loopback): "
                             "OAuth needs TLS")
        if not prefix.startswith("/") or prefix.endswith("/"):
            raise ValueError("prefix must start with / and not end with it, e.g. /oauth")
        self.base_url = base_url.rstrip("/")
        self.base_path = parts.path.rstrip("/")
        self.prefix = prefix
        self.login = login
        self.subject = subject
        self.app_name = app_name or parts.hostname
        self.policy = policy or Policy()
        self.store: IssuerStore = store if store is not None else MemoryStore()
        #: Refusals counted before :meth:`routes` is given a transport (and without one).
        self.refusals: Counter[str] = Counter()
        #: Store outages are logged, one line a minute.
        self.outage = Throttled(logging.getLogger("tornado_mcp.authserver"))
        self._count: Callable[[Refusal], None] = self._count_here
        options = Options()
        offered = dict(scopes) if isinstance(scopes, Mapping) else dict.fromkeys(scopes, "")
        endpoint = self.base_url + prefix
        urls = {name: f"{endpoint}/{name}" for name in
                ("authorize", "token", "register", "revoke", "jwks")}
        policy_ = self.policy
        self.ring = KeyRing(self.store, algorithm, rotate_keys_after,
                            lambda: policy_.access_token_ttl + 60.0)
        self.issuer = Issuer(self.base_url, [], offered, self.store, self.policy, options,
                             self.count, urls=urls, ring=self.ring, ca_certs=ca_certs)
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(HERE / "templates")),
            autoescape=jinja2.select_autoescape(default=True),
            undefined=jinja2.StrictUndefined)

    def _count_here(self, kind: Refusal) -> None:
        self.refusals[kind.value] += 1

    def count(self, kind: Refusal) -> None:
        """Count a refusal: on the transport given to :meth:`routes` (its snapshot, the
        dashboard, ``/metrics``), else in :attr:`refusals`."""
        self._count(kind)

    @property
    def verifier(self) -> Any:
        """The endpoint's :class:`~tornado_mcp.auth.TokenVerifier` for this server's
        tokens (verified in-process)."""
        return self.issuer.tokens

    # -- mounting -------------------------------------------------------------------------
    def protect(self, path: str = "/mcp", **kwargs: Any) -> OAuthResource:
        """The :class:`~tornado_mcp.auth.OAuthResource` for the endpoint at ``path`` of
        this app (pass it as ``Transport(oauth=...)``): tokens from this server, meant for
        that endpoint.  ``kwargs`` are other :class:`OAuthResource` fields
        (``required_scopes``, ``resource_name``, ...)."""
        resource = canonical_resource(self.base_url + "/" + path.strip("/"))
        if resource not in self.issuer.resources:
            self.issuer.resources.append(resource)
        kwargs.setdefault("scopes_supported", list(self.issuer.scopes))
        return OAuthResource(self.verifier, [self.base_url], resource=resource, **kwargs)

    def routes(self, transport: Transport | None = None) -> list[tuple[Any, ...]]:
        """URL rules for the authorization server; with ``transport`` its live options
        bound registration and its refusal counters count what is refused."""
        if transport is not None:
            self.issuer.options = transport.options
            self._count = transport.count_refusal
        kw = {"signin": self}
        page = type("AuthorizeHandler", (AuthorizePage, self.login), {})
        p = self.base_path + self.prefix
        return [
            (WELL_KNOWN + self.base_path, MetadataHandler, kw),
            (p + "/authorize", page, kw),
            (p + "/token", TokenHandler, kw),
            (p + "/register", RegisterHandler, kw),
            (p + "/revoke", RevokeHandler, kw),
            (p + "/jwks", JWKSHandler, kw),
            (p + "/static/(signin\\.css)", tornado.web.StaticFileHandler,
             {"path": str(HERE / "static")}),
        ]

    @property
    def authorize_path(self) -> str:
        """The authorization endpoint's path (where the consent form posts: the same host
        the browser is on, whatever name it reached the app by)."""
        return f"{self.base_path}{self.prefix}/authorize"

    def render(self, name: str, **values: Any) -> str:
        """A page of this server (``consent.html``, ``error.html``)."""
        return self.templates.get_template(name).render(
            app_name=self.app_name, css_url=f"{self.base_path}{self.prefix}/static/signin.css",
            **values)

    # -- the operator's view (the dashboard) ----------------------------------------------
    async def clients(self) -> list[dict[str, Any]]:
        """Every registered client (never its secret)."""
        return await self.issuer.client_list()

    async def consents(self, subject: str | None = None) -> list[dict[str, Any]]:
        """Who let which client in, per user."""
        return await self.issuer.consents(subject)

    async def revoke_consent(self, subject: str, client_id: str) -> int:
        """End what ``subject`` gave ``client_id`` (its tokens stop working at once)."""
        return await self.issuer.revoke_consent(subject, client_id)

    async def remove_client(self, client_id: str) -> bool:
        """Forget a client and end everything it holds."""
        return await self.issuer.remove_client(client_id)

    async def rotate_keys(self) -> str:
        """Sign with a new key from now on (the old one verifies until its tokens
        expire); the new key's id."""
        return await self.ring.rotate()

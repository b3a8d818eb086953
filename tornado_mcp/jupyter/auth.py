"""Jupyter's login in front of the MCP endpoint and the dashboard.

Jupyter Server authenticates with its *identity provider* (``settings["identity_provider"]``:
the server's token, sent as ``Authorization: token <t>`` or ``Authorization: Bearer <t>``
or ``?token=``, and its login cookie) and authorizes with its *authorizer*
(``settings["authorizer"]``: may this user ``read``, ``write`` or ``execute`` on a
resource such as ``contents`` or ``kernels``).  This module asks both, exactly as
Jupyter's own handlers do, and turns the answer into a :class:`~tornado_mcp.Principal`:

* ``subject`` -- Jupyter's ``username``;
* ``scopes`` -- the permissions the authorizer grants, named ``"<resource>:<action>"``
  (:data:`SCOPES`), so a tool checks ``ctx.principal.has_scopes("kernels:execute")``;
* ``claims`` -- the user's ``name`` and ``display_name``;
* ``method`` -- ``"jupyter"``.

:class:`JupyterMCPHandler` refuses a request nobody is logged in for with 401 and a
JSON-RPC error, before its body is read.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from tornado.web import RequestHandler

from ..protocol import INVALID_REQUEST
from ..protocol.identity import Principal
from ..transport import MCPHandler
from ..transport.wire import Reply

if TYPE_CHECKING:
    from jupyter_server.auth import User

log = logging.getLogger("tornado_mcp.jupyter")

#: The permissions asked of Jupyter's authorizer for each request, as (resource, action);
#: each one granted becomes the scope ``"resource:action"``.
SCOPES: tuple[tuple[str, str], ...] = (
    ("contents", "read"), ("contents", "write"), ("kernels", "read"), ("kernels", "execute"),
)
#: The scope the dashboard needs: the permission Jupyter asks to shut the server down.
DASHBOARD_PERMISSION = ("server", "write")

T = TypeVar("T")


async def _resolved(value: T | Awaitable[T]) -> T:
    """``value``, awaited if it is awaitable (Jupyter's providers may be either)."""
    if inspect.isawaitable(value):
        return await value
    return value


class JupyterView:
    """A request handler as Jupyter's identity provider and authorizer expect to see it.

    They read a few attributes that only Jupyter's own handlers have (``token``,
    ``base_url``, ``log``); everything else is the real handler's, so cookies, arguments
    and headers are read and written on the real request.
    """

    def __init__(self, handler: RequestHandler) -> None:
        self._handler = handler
        self.token: str = getattr(handler.settings["identity_provider"], "token", "")
        self.base_url: str = handler.settings.get("base_url", "/")
        self.log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handler, name)


#: The subject of a request authenticated with the server's token.
TOKEN_HOLDER = "jupyter-token-holder"


async def jupyter_user(handler: RequestHandler) -> tuple[User | None, JupyterView]:
    """The Jupyter user logged in for this request (``None`` for nobody), and the view of
    the handler that Jupyter's authorizer is to be asked with."""
    view = JupyterView(handler)
    provider = handler.settings["identity_provider"]
    user: User | None = await _resolved(provider.get_user(view))
    return user, view


async def is_authorized(view: JupyterView, user: User, resource: str, action: str) -> bool:
    """What Jupyter's authorizer says (every user may do everything without one)."""
    authorizer = view.settings.get("authorizer")
    if authorizer is None:
        return True
    return bool(await _resolved(authorizer.is_authorized(view, user, action, resource)))


async def jupyter_principal(handler: RequestHandler) -> Principal | None:
    """The :class:`~tornado_mcp.Principal` of this request's Jupyter user, or ``None``."""
    user, view = await jupyter_user(handler)
    if user is None:
        return None
    scopes = [f"{resource}:{action}" for resource, action in SCOPES
              if await is_authorized(view, user, resource, action)]
    provider = handler.settings["identity_provider"]
    if provider.is_token_authenticated(view):
        # Jupyter names a token-authenticated request (without its login cookie) a new
        # anonymous user each time; the caller is the holder of the server's token, one
        # caller, so a legacy session opened with the token stays usable with it.
        return Principal.of(TOKEN_HOLDER, scopes, method="jupyter-token",
                            claims={"name": user.name, "display_name": user.display_name})
    return Principal.of(user.username, scopes, method="jupyter",
                        claims={"name": user.name, "display_name": user.display_name})


async def dashboard_user(handler: RequestHandler) -> str | None:
    """The dashboard's login under Jupyter: the user's name when Jupyter's authorizer lets
    them ``write`` the ``server`` (as for shutting it down), else ``None``."""
    user, view = await jupyter_user(handler)
    if user is None or not await is_authorized(view, user, *DASHBOARD_PERMISSION):
        return None
    return user.name or user.username


class JupyterMCPHandler(MCPHandler):
    """The MCP endpoint behind Jupyter's login.

    The base class's checks come first (Host/Origin, the body limit); then Jupyter is asked
    who is calling.  Nobody: 401 with ``WWW-Authenticate`` and a JSON-RPC error, and the
    body is never handled.
    """

    async def prepare(self) -> None:
        begun = super().prepare()
        if begun is not None:
            await begun
        if self.done or self.request.method == "OPTIONS" or self._deferred is not None:
            return  # answered, a CORS preflight (sent without credentials), or refused
        principal = await jupyter_principal(self)
        if self.done:  # the client went away meanwhile
            return
        if principal is None:
            self.refuse_early(Reply(401, INVALID_REQUEST,
                                    "Unauthorized: send Jupyter's token as "
                                    "'Authorization: Bearer <token>'",
                                    headers={"WWW-Authenticate": 'Bearer realm="jupyter"'}))
            return
        self.principal = principal

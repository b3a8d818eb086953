"""A Tornado app whose own login protects its MCP endpoint, for browsers and assistants.

    python examples/host_auth_app.py --port 8888

The app has users, a login form and a signed ``user`` cookie, like many Tornado apps;
``get_current_user`` reads the cookie.  Its MCP endpoint at ``/mcp`` uses the same login
two ways:

* the cookie: ``AppMCPHandler`` extends :class:`~tornado_mcp.MCPHandler` and turns the
  current user into the :class:`~tornado_mcp.Principal` every tool sees as
  ``ctx.principal``;
* OAuth, for the assistants people use (Claude, ChatGPT, VS Code, Cursor, the
  Inspector): :class:`~tornado_mcp.authserver.SignIn` makes the app's login an OAuth
  authorization server at ``/oauth``.  A client that gets 401 discovers it, registers,
  sends the user's browser to ``/login`` and a consent page, and comes back with a token
  naming the user and the scopes the user may grant (``notes``; ``notes:admin`` for
  admins only).

Each user has their own notes; only ``admin`` users may call ``delete_all_notes``
(``scopes=["notes:admin"]``), and only they see the dashboard at ``/admin`` (the app's
own login again), which lists the assistants that registered and who let which one in,
each revocable at once.

Once listening it prints ``MCP endpoint: http://127.0.0.1:PORT/mcp`` (``--port 0`` binds
an ephemeral port and that line reports it).  ``--base-url https://notes.example.com``
names the app's public URL when it is served behind a proxy (OAuth needs https there).
With ``--unix-socket PATH`` it serves on that Unix domain socket instead (cookie login
only) and prints ``MCP endpoint: http+unix://<PATH encoded>/mcp``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

import tornado.escape
import tornado.httpserver
import tornado.netutil
import tornado.web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import admin_ui
from tornado_mcp import Context, MCPHandler, Principal, Server, Transport
from tornado_mcp.authserver import Policy, SignIn, local_next
from tornado_mcp.transport import unixsocket

COOKIE = "user"
SALT = b"example-salt"


def _hash(password: str) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", password.encode(), SALT, 100_000)


#: The app's users: name -> (password hash, scopes its role grants).
USERS = {"ada": (_hash("lovelace"), ["notes"]),
         "root": (_hash("correct horse"), ["notes", "notes:admin"])}
NOTES: dict[str, list[str]] = {}


class BaseHandler(tornado.web.RequestHandler):
    """The app's own base handler: the current user comes from the signed cookie."""

    def get_current_user(self) -> str | None:
        raw = self.get_signed_cookie(COOKIE, max_age_days=1)
        name = raw.decode() if raw else None
        return name if name in USERS else None


class HomeHandler(BaseHandler):
    def get(self) -> None:
        who = self.current_user
        self.write(f"Hello {who}. MCP is at /mcp.\n" if who else "Please log in at /login.\n")


class LoginHandler(BaseHandler):
    """The login form.  ``next`` (where the sign-in page sends the browser back to) is
    followed only to a path on this app, never to another site."""

    def get(self) -> None:
        target = tornado.escape.xhtml_escape(local_next(self.get_query_argument("next", "/")))
        self.write('<form method="post">' + self.xsrf_form_html()
                   + f'<input type="hidden" name="next" value="{target}">'
                   + '<input name="name"><input name="password" type="password">'
                     '<button>Log in</button></form>')

    def post(self) -> None:
        name = self.get_body_argument("name", "")
        password = self.get_body_argument("password", "")
        user = USERS.get(name)
        if user is None or not hmac.compare_digest(user[0], _hash(password)):
            self.set_status(401)
            self.write("Wrong name or password.\n")
            return
        # Lax, not Strict: the browser comes back to /oauth/authorize from the assistant's
        # page, a cross-site navigation that must carry the login.
        self.set_signed_cookie(COOKIE, name, expires_days=1, httponly=True, samesite="Lax")
        self.redirect(local_next(self.get_body_argument("next", "/")))


class LogoutHandler(BaseHandler):
    def post(self) -> None:
        self.clear_cookie(COOKIE)
        self.redirect("/")


class AppMCPHandler(BaseHandler, MCPHandler):
    """The MCP endpoint, behind the app's login: the app's base handler (for its
    ``get_current_user``) combined with :class:`~tornado_mcp.MCPHandler`.

    ``get_principal`` runs before the request body is read; ``None`` answers 401.
    """

    def get_principal(self) -> Principal | None:
        name = self.get_current_user()
        if name is None:
            return None
        return Principal.of(name, scopes=USERS[name][1], method="cookie")


# --- the MCP server: tools that know who is calling -----------------------------------------
mcp = Server("notes-with-login", version="1.0.0")


@mcp.tool()
def whoami(ctx: Context) -> dict[str, object]:
    """Who is calling: the logged-in user and the scopes their role grants."""
    return ctx.principal.as_dict()


@mcp.tool()
def add_note(text: str, ctx: Context) -> str:
    """Add a note to the caller's own notes."""
    user = ctx.principal.subject or ""
    NOTES.setdefault(user, []).append(text)
    return f"{user} has {len(NOTES[user])} note(s)"


@mcp.tool()
def my_notes(ctx: Context) -> list[str]:
    """The caller's own notes (nobody else's)."""
    return NOTES.get(ctx.principal.subject or "", [])


@mcp.tool(scopes=["notes:admin"])
def delete_all_notes() -> str:
    """Delete every user's notes (admins only)."""
    NOTES.clear()
    return "deleted"


#: What each scope lets an assistant do (shown on the consent page).
SCOPES = {"notes": "Read and write your own notes",
          "notes:admin": "Delete everyone's notes"}


def sign_in(base_url: str) -> SignIn:
    """The app's login as the OAuth authorization server: a user may grant the scopes
    their role has, no more."""
    return SignIn(base_url, login=BaseHandler, scopes=SCOPES, app_name="Notes",
                  policy=Policy(user_scopes=lambda name: USERS[name][1] if name in USERS
                                else ()))


def make_app(cookie_secret: str, base_url: str | None = None) -> tornado.web.Application:
    """The app; with ``base_url`` (its public URL) assistants sign in through OAuth too."""
    return build(cookie_secret, sign_in(base_url) if base_url is not None else None)[0]


def admin_user(handler: tornado.web.RequestHandler) -> str | None:
    """Who may use the dashboard at /admin: a logged-in admin (the app's own login)."""
    raw = handler.get_signed_cookie(COOKIE, max_age_days=1)
    name = raw.decode() if raw else None
    return name if name in USERS and "notes:admin" in USERS[name][1] else None


def build(cookie_secret: str, signin: SignIn | None, **options: Any
          ) -> tuple[tornado.web.Application, Transport]:
    """The app and its MCP transport (``options``: transport options; the tools a caller
    may not call are hidden unless ``hide_unauthorized=False``), protected by the cookie
    and, with ``signin``, by the app's own OAuth authorization server too; admins see the
    dashboard at /admin, with who let which assistant in."""
    oauth = signin.protect("/mcp") if signin is not None else None
    transport = Transport(mcp, oauth=oauth, **{"hide_unauthorized": True, **options})
    app = tornado.web.Application(
        [(r"/", HomeHandler), (r"/login", LoginHandler), (r"/logout", LogoutHandler),
         *transport.routes("/mcp", handler=AppMCPHandler),
         *(signin.routes(transport) if signin is not None else ()),
         *admin_ui.routes(transport, "/admin", authenticate=admin_user, login_url="/login",
                          signin=signin)],
        cookie_secret=cookie_secret, xsrf_cookies=True, login_url="/login")
    return app, transport


async def main(port: int, unix_socket: str | None = None,
               base_url: str | None = None) -> None:
    unix = unixsocket.bind_or_exit(unix_socket) if unix_socket else None
    if unix is not None:  # the same app on a Unix domain socket (mode 0600), cookie only
        http = tornado.httpserver.HTTPServer(make_app(secrets.token_hex(32)))
        http.add_socket(unix[0])
        print(f"MCP endpoint: {unixsocket.url(unix_socket or '', '/mcp')}", flush=True)
    else:
        sockets = tornado.netutil.bind_sockets(port, "127.0.0.1")
        bound = sockets[0].getsockname()[1]
        http = tornado.httpserver.HTTPServer(make_app(
            secrets.token_hex(32), base_url or f"http://127.0.0.1:{bound}"))
        http.add_sockets(sockets)
        print(f"MCP endpoint: http://127.0.0.1:{bound}/mcp", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    http.stop()
    if unix is not None:
        unix[0].close()
        unixsocket.remove(unix_socket or "", unix[1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--unix-socket", default=None, metavar="PATH",
                        help="serve on this Unix domain socket instead of the port")
    parser.add_argument("--base-url", default=None, metavar="URL",
                        help="the app's public URL (default http://127.0.0.1:PORT)")
    args = parser.parse_args()
    asyncio.run(main(args.port, args.unix_socket, args.base_url))

"""Command-line plumbing shared by ``python -m tornado_mcp demo`` and the example servers.

Every transport option becomes a flag named after it (``--max-sessions 5``,
``--stateless true``, ``--session-idle-timeout none``), generated from
:data:`~tornado_mcp.options.OPTION_SPECS` so a new option is a new flag with no extra code.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import secrets
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

import tornado.web

from .auth.resource import OAuthResource
from .dashboard import dashboard_routes
from .options import OPTION_SPECS, OptionError, TransportOptions
from .server.server import Server
from .transport import Transport

log = logging.getLogger("tornado_mcp.cli")

#: The HTTP server's own bounds on the servers started here (see docs/limits.md).  A
#: client gets ``HEADER_TIMEOUT`` seconds for a whole header block (which is also how
#: long an idle keep-alive connection is kept) and ``BODY_TIMEOUT`` for a body; Tornado's
#: defaults are an hour and no limit, so a client trickling bytes would hold a
#: connection (and a file descriptor) for that long.
HEADER_TIMEOUT = 30.0
BODY_TIMEOUT = 60.0
#: Connections the kernel queues before the server accepts them (Tornado's default is
#: 128; Linux caps the value at ``net.core.somaxconn``, 4096 on current kernels).
BACKLOG = 4096


def add_option_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--host``, ``--port``, ``--path``, ``--admin-token``, and one flag per option."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/mcp", help="where the MCP endpoint is mounted")
    parser.add_argument("--admin-token", default=None,
                        help="dashboard token (never printed; a random one is generated "
                             "and printed when omitted)")
    parser.add_argument("--no-admin", action="store_true", help="do not mount the dashboard")
    parser.add_argument("--xheaders", action="store_true",
                        help="behind a reverse proxy you trust: take the client's address and "
                             "scheme from X-Real-IP/X-Forwarded-For and X-Forwarded-Proto "
                             "(Tornado's xheaders; the dashboard's cookie is then Secure "
                             "behind a TLS proxy). Never without such a proxy: clients "
                             "could name any address")
    parser.add_argument("--header-timeout", type=_seconds, default=HEADER_TIMEOUT,
                        metavar="SECONDS",
                        help="close a connection whose request headers take longer, or that "
                             f"stays idle between requests longer (default: {HEADER_TIMEOUT:g})")
    parser.add_argument("--body-timeout", type=_seconds, default=BODY_TIMEOUT,
                        metavar="SECONDS",
                        help="close a connection whose request body takes longer (the MCP "
                             "endpoint keeps this bound itself, without Tornado's "
                             f"per-request timer) (default: {BODY_TIMEOUT:g})")
    parser.add_argument("--backlog", type=int, default=BACKLOG,
                        help="listen backlog: connections the kernel queues before they are "
                             f"accepted (default: {BACKLOG}, capped by the kernel)")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--uvloop", action="store_true",
                        help="run on uvloop (pip install 'tornado-mcp[speed]')")
    parser.add_argument("--redis-url", default=None,
                        help="join the processes sharing this Redis (notifications, limits, "
                             "sessions, tasks, stream events, requestState key; "
                             "e.g. redis://127.0.0.1:6379/0); one process needs none")
    oauth = parser.add_argument_group("OAuth 2.1 resource server (needs tornado-mcp[oauth])")
    oauth.add_argument("--oauth-issuer", default=None, metavar="URL",
                       help="accept JWT bearer tokens from this authorization server")
    oauth.add_argument("--oauth-jwks-url", default=None, metavar="URL",
                       help="the issuer's JWKS (default: ISSUER/.well-known/jwks.json)")
    oauth.add_argument("--oauth-audience", default=None, metavar="AUD",
                       help="the audience tokens must name (default: the endpoint's own URL)")
    oauth.add_argument("--oauth-scopes", default=None, metavar="LIST",
                       help="comma-separated scopes every request needs")
    group = parser.add_argument_group("transport options ('none' removes a bound)")
    for spec in OPTION_SPECS:
        default = spec.default
        shown = "none" if default is None else (",".join(default)
                                                if isinstance(default, tuple) else default)
        group.add_argument(spec.flag, dest=f"opt_{spec.name}", default=None, metavar="VALUE",
                           help=f"{spec.help} (default: {shown})")


def _seconds(text: str) -> float | None:
    if text.strip().lower() == "none":
        return None  # no timeout: Tornado's default
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def http_server_bounds(args: argparse.Namespace) -> dict[str, Any]:
    """The ``HTTPServer`` keyword arguments for ``--header-timeout`` and
    ``--body-timeout`` (``idle_connection_timeout`` bounds the header block too)."""
    return {"idle_connection_timeout": args.header_timeout,
            "body_timeout": args.body_timeout}


def options_from_args(args: argparse.Namespace) -> TransportOptions:
    values = {spec.name: getattr(args, f"opt_{spec.name}") for spec in OPTION_SPECS
              if getattr(args, f"opt_{spec.name}") is not None}
    return TransportOptions(**values)


def serve(server: Server, args: argparse.Namespace,
          extra_routes: Callable[[Transport], list[Any]] | None = None) -> None:
    """Run ``server`` until SIGINT or SIGTERM, then close the transport gracefully."""
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        options = options_from_args(args)
    except OptionError as exc:
        for name, message in exc.errors.items():
            print(f"error: --{name.replace('_', '-')} {message}", file=sys.stderr)
        raise SystemExit(2) from None
    if getattr(args, "uvloop", False):
        try:
            import uvloop
        except ImportError:
            print("error: --uvloop needs uvloop (pip install 'tornado-mcp[speed]')",
                  file=sys.stderr)
            raise SystemExit(2) from None
        uvloop.run(_serve(server, options, args, extra_routes))
    else:
        asyncio.run(_serve(server, options, args, extra_routes))


async def _serve(server: Server, options: TransportOptions, args: argparse.Namespace,
                 extra_routes: Callable[[Transport], list[Any]] | None) -> None:
    task_store = None
    event_store = None
    if args.redis_url:  # tasks too are kept where every process sees them
        from .cluster.event_store import RedisEventStore
        from .cluster.task_store import RedisTaskStore
        task_store = RedisTaskStore(args.redis_url)
        event_store = RedisEventStore(args.redis_url)  # resumable streams' events
    transport = Transport(server, options=options, task_store=task_store,
                          event_store=event_store, oauth=oauth_from_args(args))
    routes: list[Any] = [*transport.routes(args.path)]
    if extra_routes is not None:
        routes.extend(extra_routes(transport))
    admin_line = ""
    if not args.no_admin:
        token = args.admin_token or secrets.token_urlsafe(18)
        admin_routes = dashboard_routes(transport, "/admin", token)
        if admin_routes is not None:
            routes.extend(admin_routes)
            # A generated token is printed (nobody else knows it); a given one never is.
            shown = "the --admin-token given" if args.admin_token else token
            admin_line = (f"dashboard: http://{_display(args.host)}:{{port}}/admin/"
                          f"  (token: {shown})")
    app = tornado.web.Application(routes)
    xheaders = bool(getattr(args, "xheaders", False))  # a trusted proxy's X-Forwarded-*
    http = app.listen(args.port, address=args.host, xheaders=xheaders,
                      backlog=args.backlog, **http_server_bounds(args))
    port = args.port
    if port == 0:
        port = next(iter(http._sockets.values())).getsockname()[1]
    cluster = None
    if args.redis_url:
        from .cluster import Cluster
        host = socket.getfqdn() if args.host in ("", "0.0.0.0", "::") else _display(args.host)
        cluster = Cluster(transport, args.redis_url,
                          advertise_url=f"http://{host}:{port}{args.path}")
        await cluster.start()
    print(f"MCP endpoint: http://{_display(args.host)}:{port}{args.path}", flush=True)
    if admin_line:
        print(admin_line.format(port=port), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    http.stop()
    await transport.close()
    if cluster is not None:
        await cluster.close()
    await http.close_all_connections()


def _display(host: str) -> str:
    return "127.0.0.1" if host in ("", "0.0.0.0") else (f"[{host}]" if ":" in host else host)


def oauth_from_args(args: argparse.Namespace) -> OAuthResource | None:
    """The JWT resource server ``--oauth-issuer`` and friends describe, if any."""
    issuer = getattr(args, "oauth_issuer", None)
    if not issuer:
        return None
    try:
        import jwt  # noqa: F401
    except ImportError:
        print("error: --oauth-issuer needs PyJWT (pip install 'tornado-mcp[oauth]')",
              file=sys.stderr)
        raise SystemExit(2) from None
    jwks = args.oauth_jwks_url or issuer.rstrip("/") + "/.well-known/jwks.json"
    scopes = [s for s in (args.oauth_scopes or "").split(",") if s.strip()]
    return OAuthResource.jwt(issuer, jwks, args.oauth_audience,
                             required_scopes=[s.strip() for s in scopes])

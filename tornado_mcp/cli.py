"""Command-line plumbing shared by ``python -m tornado_mcp demo`` and the example servers.

Every transport option becomes a flag named after it (``--max-sessions 5``,
``--stateless true``, ``--session-idle-timeout none``), generated from
:data:`~tornado_mcp.options.OPTION_SPECS` so a new option is a new flag with no extra code.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.iostream import IOStream

from .auth.dpop import DPoP
from .auth.resource import OAuthResource
from .dashboard import dashboard_routes
from .options import OPTION_SPECS, OptionError, Options
from .server.server import Server
from .transport import Transport, serving, unixsocket

log = logging.getLogger("tornado_mcp.cli")

#: The bounds on a client's time on the servers started here (see docs/limits.md).  A
#: client gets ``HEADER_TIMEOUT`` seconds for a whole header block (which is also how
#: long an idle keep-alive connection is kept; the HTTP server's ``idle_connection_timeout``)
#: and ``BODY_TIMEOUT`` for a body (the endpoint's ``body_timeout`` option, which it keeps
#: at no cost per request); Tornado's defaults are an hour and no limit, so a client
#: trickling bytes would hold a connection (and a file descriptor) for that long.
HEADER_TIMEOUT = 30.0
BODY_TIMEOUT = 60.0
#: After SIGTERM a process exits within ``shutdown_grace`` plus the bounded steps of its
#: close (each a few seconds: streams' last bytes, the task store, leaving the cluster);
#: this many seconds past ``shutdown_grace`` it is ended regardless, with an error logged
#: (that would be a bug: no step should take that long).
EXIT_MARGIN = 30.0
#: Seconds the connections still open at the end get to close.
CLOSE_CONNECTIONS_TIMEOUT = 5.0
#: Connections the kernel queues before the server accepts them (Tornado's default is
#: 128; Linux caps the value at ``net.core.somaxconn``, 4096 on current kernels).
BACKLOG = 4096
#: Bytes read from a connection at once (Tornado's ``chunk_size``; its default is 64 KiB).
#: Tornado zeroes a fresh buffer of this size for every read, two reads per small request
#: (the data, then the read that finds no more): 64 KiB of ``memset`` each time costs a
#: small JSON-RPC request more than all of its protocol work.  8 KiB holds a typical
#: request whole; a large body is read in more, cheaper, reads.
READ_CHUNK = 8192


def add_option_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--host``, ``--port``, ``--path``, ``--admin-token``, and one flag per option."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--unix-socket", default=None, metavar="PATH",
                        help="serve HTTP on this Unix domain socket (mode 0600, removed on "
                             "shutdown) instead of TCP; --host and --port are then unused")
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
    parser.add_argument("--backlog", type=int, default=BACKLOG,
                        help="listen backlog: connections the kernel queues before they are "
                             f"accepted (default: {BACKLOG}, capped by the kernel)")
    parser.add_argument("--read-chunk", type=_bytes, default=READ_CHUNK, metavar="BYTES",
                        help="bytes read from a connection at once, and the size of the "
                             f"chunks a body arrives in (default: {READ_CHUNK}; Tornado's "
                             "is 65536)")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--uvloop", action="store_true",
                        help="run on uvloop (pip install uvloop)")
    parser.add_argument("--redis-url", default=None,
                        help="join the processes sharing this Redis (notifications, limits, "
                             "sessions, tasks, stream events, requestState key; "
                             "e.g. redis://127.0.0.1:6379/0, or a primary kept by Sentinel: "
                             "redis+sentinel://HOST:PORT[,HOST:PORT...]/SERVICE[/DB]); "
                             "one process needs none")
    oauth = parser.add_argument_group("OAuth 2.1 resource server (needs tornado-mcp[oauth])")
    oauth.add_argument("--oauth-issuer", default=None, metavar="URL",
                       help="accept JWT bearer tokens from this authorization server")
    oauth.add_argument("--oauth-jwks-url", default=None, metavar="URL",
                       help="the issuer's JWKS (default: ISSUER/.well-known/jwks.json)")
    oauth.add_argument("--oauth-audience", default=None, metavar="AUD",
                       help="the audience tokens must name, the endpoint's canonical URL "
                            "(default: http://HOST:PORT/PATH of the bound address; "
                            "required when --host is a wildcard address)")
    oauth.add_argument("--oauth-scopes", default=None, metavar="LIST",
                       help="comma-separated scopes every request needs")
    oauth.add_argument("--oauth-subject-claim", default="sub", metavar="CLAIM",
                       help="the claim naming the user (default: sub; oid for Entra ID)")
    oauth.add_argument("--oauth-scope-claims", default=None, metavar="LIST",
                       help="comma-separated claims whose scopes are granted together "
                            "(default: scope, else scp; e.g. scope,permissions for Auth0)")
    oauth.add_argument("--oauth-strict-rfc9068", action="store_true",
                       help="accept only typ at+jwt (RFC 9068), required; by default JWT "
                            "and no typ are accepted too, as Keycloak, Entra ID, Auth0 and "
                            "Okta issue them")
    oauth.add_argument("--oauth-dpop", choices=("off", "on", "required"), default="off",
                       help="accept DPoP-bound tokens (RFC 9449); 'required': only those "
                            "(default: off; a DPoP-bound token is never accepted as Bearer)")
    group = parser.add_argument_group("transport options ('none' removes a bound)")
    for spec in OPTION_SPECS:
        default = SERVER_DEFAULTS.get(spec.name, spec.default)
        shown = "none" if default is None else ",".join(default) \
            if isinstance(default, tuple) else f"{default:g}" if isinstance(default, float) \
            else default
        group.add_argument(spec.flag, dest=f"opt_{spec.name}", default=None,
                           metavar=METAVARS.get(spec.kind, "VALUE"),
                           help=f"{spec.help} (default: {shown})")


def _seconds(text: str) -> float | None:
    if text.strip().lower() == "none":
        return None  # no timeout: Tornado's default
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def _bytes(text: str) -> int:
    value = int(text)
    if not 1024 <= value <= 1024 * 1024:
        raise argparse.ArgumentTypeError("must be between 1024 and 1048576 bytes")
    return value


#: What each kind of option's flag takes, as ``--help`` names it.
METAVARS = {"seconds": "SECONDS", "int": "N", "bool": "BOOL", "hosts": "LIST",
            "versions": "LIST", "tool_bounds": "JSON"}
#: Options whose default on the servers started here is not the library's own.
SERVER_DEFAULTS: dict[str, Any] = {"body_timeout": BODY_TIMEOUT}


def http_server_bounds(args: argparse.Namespace) -> dict[str, Any]:
    """The ``HTTPServer`` keyword arguments for ``--header-timeout``
    (``idle_connection_timeout`` bounds the header block too) and ``--read-chunk``."""
    return {"idle_connection_timeout": args.header_timeout, "chunk_size": args.read_chunk}


def options_from_args(args: argparse.Namespace,
                      server_defaults: bool = True) -> Options:
    """The options the flags set; the rest as on the servers started here
    (:data:`SERVER_DEFAULTS`), or as the library's own defaults (``server_defaults=False``,
    for an application that starts its own server)."""
    values = {spec.name: getattr(args, f"opt_{spec.name}") for spec in OPTION_SPECS
              if getattr(args, f"opt_{spec.name}") is not None}
    return Options(**{**(SERVER_DEFAULTS if server_defaults else {}), **values})


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
            print("error: --uvloop needs uvloop (pip install uvloop)",
                  file=sys.stderr)
            raise SystemExit(2) from None
    unix: tuple[socket.socket, int] | None = None
    path: str = getattr(args, "unix_socket", None) or ""
    if path:  # bound before anything starts: a bad path serves nothing
        unix = unixsocket.bind_or_exit(path, args.backlog)
    try:
        if getattr(args, "uvloop", False):
            uvloop.run(_serve(server, options, args, extra_routes, unix))
        else:
            asyncio.run(_serve(server, options, args, extra_routes, unix))
    finally:
        if unix is not None:
            unix[0].close()
            unixsocket.remove(path, unix[1])


async def _serve(server: Server, options: Options, args: argparse.Namespace,
                 extra_routes: Callable[[Transport], list[Any]] | None,
                 unix: tuple[socket.socket, int] | None = None) -> None:
    task_store = None
    event_store = None
    link = None
    if args.redis_url:  # tasks too are kept where every process sees them
        from .cluster.event_store import RedisEventStore
        from .cluster.link import Link
        from .cluster.task_store import RedisTaskStore
        link = Link(args.redis_url)  # one connection: the cluster's, shared by both stores
        task_store = RedisTaskStore(link=link)
        event_store = RedisEventStore(link=link)  # resumable streams' events
    # Bound first: the OAuth audience defaults to the endpoint's URL on the bound address
    # (configuration, never a request's Host header), and port 0 is known only now.
    sockets: list[socket.socket] = []
    bound_url: str | None = None  # on a Unix socket: none a token could name
    port = 0
    if unix is None:
        sockets = tornado.netutil.bind_sockets(args.port, address=args.host,
                                               backlog=args.backlog)
        port = sockets[0].getsockname()[1]
        bound_url = f"http://{_display(args.host)}:{port}{args.path}"
    try:
        oauth = oauth_from_args(args, bound_url)
    except SystemExit:
        for sock in sockets:
            sock.close()
        raise
    transport = Transport(server, options=options, task_store=task_store,
                          event_store=event_store, oauth=oauth)
    routes: list[Any] = [*transport.routes(args.path, fast=True), *transport.health_routes()]
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
            admin_line = f"dashboard: {{base}}/admin/  (token: {shown})"
    app = tornado.web.Application(routes, log_function=serving.log_request)
    xheaders = bool(getattr(args, "xheaders", False))  # a trusted proxy's X-Forwarded-*
    http = serving.http_server(app, xheaders=xheaders, **http_server_bounds(args))
    advertise: str | None = None
    if unix is not None:
        base = unixsocket.url(args.unix_socket, "")
    else:
        base = f"http://{_display(args.host)}:{port}"
        host = socket.getfqdn() if args.host in ("", "0.0.0.0", "::") else _display(args.host)
        advertise = f"http://{host}:{port}{args.path}"
    cluster = None
    if args.redis_url:  # a process on a Unix socket is no forwarding target (no URL)
        from .cluster import Cluster
        cluster = Cluster(transport, link=link, advertise_url=advertise)
        # Joined before serving: a session minted here names this process, which the
        # others must find in Redis (until now, connections wait in the listen queue).
        await cluster.start()
    if unix is not None:  # the same app, on the Unix socket only
        http.add_socket(unix[0])
    else:
        http.add_sockets(sockets)
    print(f"MCP endpoint: {base}{args.path}", flush=True)
    if admin_line:
        print(admin_line.format(base=base), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    grace = transport.options.shutdown_grace
    if grace is not None:
        exit_by(grace + EXIT_MARGIN)
    stop_accepting(http, [unix[0]] if unix is not None else sockets)
    await transport.close()
    if cluster is not None:
        await cluster.close()
    done, _ = await asyncio.wait([asyncio.ensure_future(http.close_all_connections())],
                                 timeout=CLOSE_CONNECTIONS_TIMEOUT)
    if not done:
        log.warning("connections still open %g s after the drain; exiting anyway",
                    CLOSE_CONNECTIONS_TIMEOUT)


def stop_accepting(http: tornado.httpserver.HTTPServer, sockets: list[socket.socket]) -> None:
    """Stop listening, serving first the connections the kernel completed and queued
    (closing a listening socket resets those, and a reverse proxy that sent a request on
    one answers 502: nginx does not retry a POST); then the sockets close at once, so
    nothing can queue in between."""
    for sock in sockets:
        sock.setblocking(False)  # as Tornado keeps it: an empty queue must not block
        while True:
            try:
                conn, address = sock.accept()
            except (BlockingIOError, InterruptedError, OSError):
                break
            conn.setblocking(False)
            http.handle_stream(IOStream(conn, max_buffer_size=http.max_buffer_size,
                                        read_chunk_size=http.read_chunk_size), address)
    http.stop()


def exit_by(seconds: float) -> None:
    """End the process if it is still running ``seconds`` from now (a daemon timer,
    which needs nothing of the event loop)."""
    def overdue() -> None:
        log.error("still running %g s after the shutdown began; exiting now", seconds)
        logging.shutdown()
        os._exit(70)
    timer = threading.Timer(seconds, overdue)
    timer.daemon = True
    timer.start()


def _display(host: str) -> str:
    return "127.0.0.1" if host in ("", "0.0.0.0") else (f"[{host}]" if ":" in host else host)


def oauth_from_args(args: argparse.Namespace, bound_url: str | None) -> OAuthResource | None:
    """The JWT resource server ``--oauth-issuer`` and friends describe, if any; its
    audience is ``--oauth-audience``, else ``bound_url`` (the endpoint on the bound
    address), which a wildcard ``--host`` or a Unix socket (``None``) cannot give."""
    issuer = getattr(args, "oauth_issuer", None)
    if not issuer:
        return None
    audience = args.oauth_audience
    if not audience and bound_url is None:
        print("error: --oauth-issuer with --unix-socket needs --oauth-audience "
              "(the endpoint's public URL, which tokens must name)", file=sys.stderr)
        raise SystemExit(2)
    if not audience and args.host in _WILDCARDS:
        shown = args.host or "''"
        print(f"error: --oauth-issuer with --host {shown} needs --oauth-audience "
              "(the endpoint's public URL, which tokens must name)", file=sys.stderr)
        raise SystemExit(2)
    try:
        import jwt  # noqa: F401
    except ImportError:
        print("error: --oauth-issuer needs PyJWT (pip install 'PyJWT[crypto]')",
              file=sys.stderr)
        raise SystemExit(2) from None
    jwks = args.oauth_jwks_url or issuer.rstrip("/") + "/.well-known/jwks.json"
    scopes = [s for s in (args.oauth_scopes or "").split(",") if s.strip()]
    dpop_mode = getattr(args, "oauth_dpop", "off")
    dpop = DPoP(required=dpop_mode == "required") if dpop_mode != "off" else None
    claims = [c.strip() for c in (getattr(args, "oauth_scope_claims", None) or "").split(",")
              if c.strip()]
    return OAuthResource.jwt(issuer, jwks, audience or bound_url,
                             required_scopes=[s.strip() for s in scopes], dpop=dpop,
                             subject_claim=getattr(args, "oauth_subject_claim", None) or "sub",
                             scope_claims=claims or None,
                             strict_rfc9068=bool(getattr(args, "oauth_strict_rfc9068", False)))


_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})

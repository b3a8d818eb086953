"""The CPU cost of authentication per request, as callgrind instruction counts.

Run: ``python -m bench.auth_cost [--requests 300] [--warmup 100]
[--configs off,jwt,cookie,signin,signin-fresh]
[--command "python examples/conformance_server.py ..."]
[--app-command "python examples/host_auth_app.py"]``.

Each configuration serves 2026-07-28 ``tools/call echo`` (the cheapest request, so the
relative cost of authentication is at its largest) from ``examples/conformance_server.py``
under callgrind, measured as :mod:`bench.callgrind` measures S1:

* ``off``: no authentication (compare against the same command on an older checkout to
  see what the authentication hooks cost an endpoint that does not use them);
* ``jwt``: ``--oauth-issuer`` / ``--oauth-jwks-url`` with every request carrying an RS256
  JWT (the JWKS is fetched once during warm-up, then cached): signature, ``iss``,
  ``aud``, ``exp`` checks and the principal built per request.

The app's own login (``examples/host_auth_app.py``, its sign-in at ``/oauth``) serves
2026-07-28 ``tools/call my_notes`` (as cheap: an empty list) for the configurations
below; a user logs in, a client registers, is allowed and trades its code (and, for
``signin-fresh``, refreshes for new tokens) during the warm-up, outside the count:

* ``cookie``: every request carries the app's signed login cookie (the host's own
  ``get_principal``, no OAuth);
* ``signin``: every request carries the app's own access token (RS256, verified
  in-process against the sign-in's key ring): the first request pays the signature, the
  others the verified-token cache and the revocation check;
* ``signin-fresh``: every request a token never seen before (the signature, ``iss``,
  ``aud``, ``exp``, the grant's revocation, the principal, every time).

The JWKS is served by this process (stdlib ``http.server`` in a thread).  Needs valgrind,
PyJWT (the ``oauth`` extra), authlib (the ``authserver`` extra) and httpx.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import html
import json
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bench.callgrind import (
    READY_TIMEOUT_S,
    _echo,
    callgrind_control,
    check_is_callgrind,
    dump_and_read,
    under_callgrind,
)
from bench.client import Connection, expect_result, modern_headers
from bench.scenarios.s1_throughput import MODES, echo_body
from bench.servers import DEFAULT_OURS, ours_target, start_server

KID = "bench-key"
#: The configurations served by the app with its own login, and the command serving it.
APP_CONFIGS = ("cookie", "signin", "signin-fresh")
APP_COMMAND = "python examples/host_auth_app.py"
REDIRECT = "http://127.0.0.1:9/callback"
#: Requests measured (and warm-up ones) for ``signin-fresh``: each needs a token of its own,
#: a refresh under callgrind.
FRESH_REQUESTS, FRESH_WARMUP = 40, 10


class JWKS:
    """An RSA key, its JWKS served over HTTP on a loopback port, and tokens it signs."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        body = json.dumps({"keys": [{**jwk, "kid": KID, "use": "sig", "alg": "RS256"}]})

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def token(self, audience: str) -> str:
        now = int(time.time())
        pem = self.key.private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())
        return jwt.encode({"iss": self.issuer, "sub": "bench", "aud": audience,
                           "scope": "mcp:tools", "iat": now, "exp": now + 3600},
                          pem, algorithm="RS256", headers={"kid": KID, "typ": "at+jwt"})

    def close(self) -> None:
        self.http.shutdown()


#: One measured request: ``send(conn, n)`` makes request ``n`` on the connection.
Send = Callable[[Connection, int], Awaitable[None]]


def counted(command: str, config: str, work_dir: Path, requests: int, warmup: int,
            prepare: Callable[[int], Send]) -> int:
    """Instructions per request: ``command`` serves under callgrind, ``prepare(port)``
    readies what the requests need and returns how to send one, ``warmup`` requests go
    uncounted, then ``requests`` counted ones."""
    mode = next(m for m in MODES if m.name == "modern")
    out_file = work_dir / f"callgrind.auth.{config}.out"
    server = start_server(under_callgrind(ours_target(command), out_file), mode.options,
                          log_dir=work_dir, ready_timeout=READY_TIMEOUT_S)
    try:
        check_is_callgrind(server.pid)
        send = prepare(server.port)

        async def drive() -> int:
            conn = Connection(server.port)
            try:
                for n in range(warmup):
                    await send(conn, n)
                callgrind_control(server.pid, "--instr=on")
                for n in range(warmup, warmup + requests):
                    await send(conn, n)
                callgrind_control(server.pid, "--instr=off")
                return dump_and_read(server.pid, out_file)
            finally:
                await conn.close()

        total = asyncio.run(drive())
        server.check_alive()
    finally:
        server.stop()
    return round(total / requests)


def measure(config: str, command: str, requests: int, warmup: int, work_dir: Path,
            jwks: JWKS) -> int:
    """``tools/call echo`` on the conformance server: ``off`` or ``jwt``."""
    mode = next(m for m in MODES if m.name == "modern")
    if config == "jwt":
        command += f" --oauth-issuer {jwks.issuer} --oauth-jwks-url {jwks.issuer}/jwks"

    def prepare(port: int) -> Send:
        headers = modern_headers("tools/call", "echo")
        if config == "jwt":
            headers["Authorization"] = "Bearer " + jwks.token(f"http://127.0.0.1:{port}/mcp")
        body = echo_body(mode, ours_target(command))
        return lambda conn, n: _echo(conn, "/mcp", headers, body, n)

    return counted(command, config, work_dir, requests, warmup, prepare)


def app_credentials(port: int, tokens: int) -> tuple[str, list[str]]:
    """Log in to the app at ``port`` as ada, register a client, allow it and trade the
    code (then refresh ``tokens - 1`` times): the login cookie and ``tokens`` tokens."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600.0) as http:
        form = http.get("/login").text
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form)
        assert xsrf is not None
        http.post("/login", data={"_xsrf": xsrf.group(1), "name": "ada",
                                  "password": "lovelace"})
        client = http.post("/oauth/register", json={
            "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"]}).json()["client_id"]
        page = http.get("/oauth/authorize", params={
            "response_type": "code", "client_id": client, "redirect_uri": REDIRECT,
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256", "scope": "notes"}).text
        ticket = re.search(r'name="ticket" value="([^"]+)"', page)
        assert ticket is not None, page
        back = http.post("/oauth/authorize", data={
            "_xsrf": http.cookies["_xsrf"], "ticket": html.unescape(ticket.group(1)),
            "decision": "approve"}).headers["location"]
        code = parse_qs(urlsplit(back).query)["code"][0]
        answer = http.post("/oauth/token", data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
            "client_id": client, "code_verifier": verifier}).json()
        found = [answer["access_token"]]
        for _ in range(tokens - 1):
            answer = http.post("/oauth/token", data={
                "grant_type": "refresh_token", "refresh_token": answer["refresh_token"],
                "client_id": client}).json()
            found.append(answer["access_token"])
        return str(http.cookies["user"]), found


async def _notes(conn: Connection, headers: dict[str, str], n: int) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call", "params": {
        "name": "my_notes", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    expect_result(await conn.request("POST", "/mcp", headers, body, 600.0), f"my_notes {n}")


def measure_app(config: str, command: str, requests: int, warmup: int,
                work_dir: Path) -> int:
    """``tools/call my_notes`` on the app with its own login: ``cookie``, ``signin`` or
    ``signin-fresh``."""
    fresh = config == "signin-fresh"

    def prepare(port: int) -> Send:
        cookie, tokens = app_credentials(port, warmup + requests if fresh else 1)

        async def send(conn: Connection, n: int) -> None:
            h = modern_headers("tools/call", "my_notes")
            if config == "cookie":
                h["Cookie"] = f"user={cookie}"
            else:
                h["Authorization"] = "Bearer " + tokens[n if fresh else 0]
            await _notes(conn, h, n)
        return send

    return counted(command, config, work_dir, requests, warmup, prepare)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--configs", default="off,jwt")
    parser.add_argument("--command", default=DEFAULT_OURS)
    parser.add_argument("--app-command", default=APP_COMMAND)
    args = parser.parse_args(argv)
    jwks = JWKS()
    rows = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-auth-") as tmp:
            for config in args.configs.split(","):
                if config in APP_CONFIGS:
                    fresh = config == "signin-fresh"
                    rows[config] = measure_app(
                        config, args.app_command,
                        min(args.requests, FRESH_REQUESTS) if fresh else args.requests,
                        min(args.warmup, FRESH_WARMUP) if fresh else args.warmup, Path(tmp))
                else:
                    rows[config] = measure(config, args.command, args.requests, args.warmup,
                                           Path(tmp), jwks)
                print(f"  {config:<12} {rows[config]:>10,} instr/request", flush=True)
    finally:
        jwks.close()
    for over, base in (("jwt", "off"), ("signin", "cookie"), ("signin-fresh", "cookie")):
        if over in rows and base in rows:
            print(f"  {over}/{base} {rows[over] / rows[base]:.3f}x "
                  f"(+{rows[over] - rows[base]:,} instructions per request)")


if __name__ == "__main__":
    main()

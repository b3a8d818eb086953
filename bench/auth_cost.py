"""The CPU cost of authentication per request, as callgrind instruction counts.

Run: ``python -m bench.auth_cost [--requests 300] [--warmup 100] [--configs off,jwt]
[--command "python examples/conformance_server.py ..."]``.

Each configuration serves 2026-07-28 ``tools/call echo`` (the cheapest request, so the
relative cost of authentication is at its largest) from ``examples/conformance_server.py``
under callgrind, measured as :mod:`bench.callgrind` measures S1:

* ``off``: no authentication (compare against the same command on an older checkout to
  see what the authentication hooks cost an endpoint that does not use them);
* ``jwt``: ``--oauth-issuer`` / ``--oauth-jwks-url`` with every request carrying an RS256
  JWT (the JWKS is fetched once during warm-up, then cached): signature, ``iss``,
  ``aud``, ``exp`` checks and the principal built per request.

The JWKS is served by this process (stdlib ``http.server`` in a thread).  Needs valgrind
and PyJWT (the ``oauth`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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
from bench.client import Connection, modern_headers
from bench.scenarios.s1_throughput import MODES, echo_body
from bench.servers import DEFAULT_OURS, ours_target, start_server

KID = "bench-key"


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


def measure(config: str, command: str, requests: int, warmup: int, work_dir: Path,
            jwks: JWKS) -> int:
    mode = next(m for m in MODES if m.name == "modern")
    if config == "jwt":
        command += f" --oauth-issuer {jwks.issuer} --oauth-jwks-url {jwks.issuer}/jwks"
    target = ours_target(command)
    out_file = work_dir / f"callgrind.auth.{config}.out"
    server = start_server(under_callgrind(target, out_file), mode.options, log_dir=work_dir,
                          ready_timeout=READY_TIMEOUT_S)
    try:
        check_is_callgrind(server.pid)
        headers = modern_headers("tools/call", "echo")
        if config == "jwt":
            headers["Authorization"] = "Bearer " + jwks.token(
                f"http://127.0.0.1:{server.port}/mcp")
        body = echo_body(mode, target)

        async def drive() -> int:
            conn = Connection(server.port)
            try:
                for n in range(warmup):
                    await _echo(conn, "/mcp", headers, body, n)
                callgrind_control(server.pid, "--instr=on")
                for n in range(warmup, warmup + requests):
                    await _echo(conn, "/mcp", headers, body, n)
                callgrind_control(server.pid, "--instr=off")
                return dump_and_read(server.pid, out_file)
            finally:
                await conn.close()

        total = asyncio.run(drive())
        server.check_alive()
    finally:
        server.stop()
    return round(total / requests)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--configs", default="off,jwt")
    parser.add_argument("--command", default=DEFAULT_OURS)
    args = parser.parse_args(argv)
    jwks = JWKS()
    rows = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-auth-") as tmp:
            for config in args.configs.split(","):
                rows[config] = measure(config, args.command, args.requests, args.warmup,
                                       Path(tmp), jwks)
                print(f"  {config:<4} {rows[config]:>10,} instr/request", flush=True)
    finally:
        jwks.close()
    if "off" in rows and "jwt" in rows:
        print(f"  jwt/off {rows['jwt'] / rows['off']:.3f}x "
              f"(+{rows['jwt'] - rows['off']:,} instructions per request)")


if __name__ == "__main__":
    main()

"""Property-based fuzzing of the MCP endpoint over real keep-alive sockets, both eras.

Hypothesis generates requests: methods, header sets of either protocol era (versions,
session ids, Mcp-Method / Mcp-Name, Origin, Accept, Content-Type), framing
(Content-Length or chunked) and bodies (JSON-RPC messages of both eras, batches, random
JSON, random bytes).  One client sends them one after another on a keep-alive connection
to a server running in a thread, and checks after each:

* the status is never 5xx, and no body carries a traceback;
* every request is answered; after a response that does not say ``Connection: close``
  the next request on the same connection is answered too, and a response that says it
  is followed by the close;
* a refused request (4xx) leaves no session behind; no stream and no request is left
  once the run ends; nothing is logged at ERROR and no log record carries a traceback.

``tests/reliability/test_fuzz.py`` runs a short seeded pass in the test command.  The long run::

    python -m tests.fuzz --requests 100000 [--seed N]

prints the figures recorded in docs/reliability.md.  ``subscriptions/listen`` and a GET
with a live session open streams that only end when the client leaves, so those two are
defused before sending (the method renamed, the session made bogus).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tornado.httpserver
import tornado.netutil
import tornado.web

from tornado_mcp import Server, Transport

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
TIMEOUT = 10.0

# -- the server under test -------------------------------------------------------------------


def build_server() -> Server:
    server = Server("fuzz", version="1.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def add(a: int, b: int = 0) -> int:
        return a + b

    @server.resource("test://doc", name="doc")
    def doc() -> str:
        return "a document"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    return server


class ThreadServer:
    """A transport and HTTP server on their own IOLoop in a thread, on a free port."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.port = 0
        self.transport: Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="fuzz-server", daemon=True)

    def __enter__(self) -> ThreadServer:
        self._thread.start()
        if not self._ready.wait(TIMEOUT):
            raise RuntimeError("the fuzz server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(TIMEOUT)

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the server's loop and return its result."""
        assert self._loop is not None
        async def run() -> Any:
            return fn()
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(TIMEOUT)

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self.transport = Transport(build_server(), **self.options)
        app = tornado.web.Application(self.transport.routes("/mcp"))
        http = tornado.httpserver.HTTPServer(app, idle_connection_timeout=30, body_timeout=30)
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        http.add_sockets(sockets)
        self.port = sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        http.stop()
        await self.transport.close()
        await http.close_all_connections()


# -- requests ---------------------------------------------------------------------------------

@dataclass
class Request:
    method: str
    headers: list[tuple[str, str]]
    body: bytes
    chunked: bool = False
    era: str = "none"

    def encode(self, port: int) -> bytes:
        lines = [f"{self.method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}"]
        lines += [f"{k}: {v}" for k, v in self.headers]
        if self.chunked:
            lines.append("Transfer-Encoding: chunked")
            payload = b""
            for i in range(0, len(self.body), 97):
                part = self.body[i:i + 97]
                payload += b"%x\r\n%s\r\n" % (len(part), part)
            payload += b"0\r\n\r\n"
        else:
            lines.append(f"Content-Length: {len(self.body)}")
            payload = self.body
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


#: A placeholder for the live legacy session id, filled in at send time.
LIVE_SESSION = "\x00live"

RPC_METHODS = ["initialize", "notifications/initialized", "ping", "tools/list", "tools/call",
               "resources/list", "resources/read", "resources/templates/list",
               "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
               "resources/subscribe", "server/discover", "notifications/cancelled",
               "subscriptions/list"]
header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=40)
#: Text with lone UTF-16 surrogates too: JSON can spell them (``"\ud800"``), UTF-8 cannot.
surrogate_text = st.text(st.characters(categories=["Cs"]) | st.characters(), max_size=12)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) \
    | st.text(max_size=30) | surrogate_text
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
request_ids = st.integers() | st.text(max_size=20) | surrogate_text | json_values


@st.composite
def rpc_message(draw: st.DrawFn, era: str) -> Any:
    method = draw(st.sampled_from(RPC_METHODS)) if draw(st.integers(0, 9)) \
        else draw(st.text(max_size=20))
    message: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0"]) | json_values)
    message["method"] = method if draw(st.integers(0, 9)) else draw(json_values)
    if draw(st.integers(0, 4)):
        message["id"] = draw(request_ids)
    params: Any
    if method == "initialize":
        params = {"protocolVersion": draw(st.sampled_from([LEGACY, MODERN, "2025-03-26"])
                                          | st.text(max_size=12)),
                  "capabilities": draw(json_values),
                  "clientInfo": {"name": draw(st.text(max_size=10)), "version": "1"}}
    elif method == "tools/call":
        params = {"name": draw(st.sampled_from(["echo", "add", "nope"])),
                  "arguments": draw(st.dictionaries(st.sampled_from(["text", "a", "b", "x"]),
                                                    json_values, max_size=3) | json_values)}
    elif method in ("resources/read", "resources/subscribe"):
        params = {"uri": draw(st.sampled_from(["test://doc", "test://none"]) | json_values)}
    elif method == "prompts/get":
        params = {"name": draw(st.sampled_from(["greet", "nope"])),
                  "arguments": draw(st.dictionaries(st.sampled_from(["name", "x"]),
                                                    json_values, max_size=2))}
    else:
        params = draw(st.dictionaries(st.text(max_size=10), json_values, max_size=3))
    if era == "modern" and isinstance(params, dict) and draw(st.integers(0, 5)):
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": draw(st.sampled_from([MODERN, LEGACY])),
            "io.modelcontextprotocol/clientCapabilities": draw(
                st.just({}) | st.dictionaries(st.text(max_size=8), json_values, max_size=2)),
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"}}
    if draw(st.integers(0, 5)):
        message["params"] = params if draw(st.integers(0, 9)) else draw(json_values)
    return message


def mostly(draw: st.DrawFn, usual: Any, others: list[Any]) -> Any:
    """``usual`` 8 times in 10; otherwise one of ``others`` or random header text."""
    roll = draw(st.integers(0, 9))
    if roll < 8:
        return usual
    if roll == 8 and others:
        return draw(st.sampled_from(others))
    return draw(header_text)


@st.composite
def requests(draw: st.DrawFn) -> Request:
    era = draw(st.sampled_from(["legacy", "modern", "legacy", "modern", "none"]))
    method = draw(st.sampled_from(["POST"] * 24 + ["GET", "DELETE", "PUT", "PATCH", "OPTIONS",
                                                    "HEAD", "BREW"]))
    headers: list[tuple[str, str]] = []
    ctype = mostly(draw, "application/json", [
        "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain",
        "application/jsonx", "", None])
    if ctype is not None:
        headers.append(("Content-Type", ctype))
    accept = mostly(draw, "application/json, text/event-stream", [
        "application/json", "text/event-stream", "*/*", "text/html",
        "application/*;q=0.5, text/*", None])
    if accept is not None:
        headers.append(("Accept", accept))
    usual = {"legacy": LEGACY, "modern": MODERN, "none": None}[era]
    version = mostly(draw, usual, ["2025-03-26", "1999-01-01", LEGACY, MODERN, None])
    if version is not None:
        headers.append(("MCP-Protocol-Version", version))
    if era == "legacy":
        session = mostly(draw, LIVE_SESSION, ["bogus", None])
        if session is not None:
            headers.append(("Mcp-Session-Id", session))
    elif draw(st.integers(0, 9)) == 0:
        headers.append(("Mcp-Session-Id", draw(st.sampled_from([LIVE_SESSION, "bogus"]))))
    if draw(st.integers(0, 12)) == 0:
        headers.append(("Origin", draw(st.sampled_from(["http://evil.example",
                                                         "http://127.0.0.1", "null"]))))
    shape = draw(st.integers(0, 9))
    body_value: Any = None
    if shape <= 6:
        body_value = draw(rpc_message(era))
        body = json.dumps(body_value).encode()
    elif shape == 7:
        body_value = draw(st.lists(rpc_message(era), max_size=3))
        body = json.dumps(body_value).encode()
    elif shape == 8:
        body = json.dumps(draw(json_values)).encode() if draw(st.booleans()) \
            else draw(st.binary(max_size=200))
    else:
        body = b""
    if era == "modern" and isinstance(body_value, dict):
        rpc_method = body_value.get("method")
        if draw(st.integers(0, 9)):
            headers.append(("Mcp-Method", rpc_method if isinstance(rpc_method, str)
                            and rpc_method.isprintable() and rpc_method.isascii()
                            else "tools/list"))
        params = body_value.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if draw(st.integers(0, 3)):
            headers.append(("Mcp-Name", name if isinstance(name, str) and name.isascii()
                            and name.isprintable() else draw(header_text)))
    chunked = method == "POST" and draw(st.integers(0, 9)) == 0
    return Request(method, headers, body, chunked, era)


def streams_forever(req: Request) -> bool:
    """Requests the generator must not send: they open streams that never end."""
    if req.method == "GET" and any(k == "Mcp-Session-Id" and v == LIVE_SESSION
                                   for k, v in req.headers):
        return True
    return b"subscriptions/listen" in req.body


# -- the client and its checks ----------------------------------------------------------------

class Unanswered(Exception):
    pass


@dataclass
class Figures:
    requests: int = 0
    by_status: Counter[int] = field(default_factory=Counter)
    by_era: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    tracebacks: int = 0
    unanswered: int = 0
    closed_with_notice: int = 0
    connections: int = 1
    sessions_left_by_refusals: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def report(self) -> str:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.by_status.items()))
        return (f"requests: {self.requests} ({dict(self.by_era)}) in {self.seconds:.1f} s\n"
                f"statuses: {statuses}\n"
                f"5xx: {self.server_errors}  tracebacks in bodies: {self.tracebacks}  "
                f"unanswered on an open connection: {self.unanswered}\n"
                f"closed with Connection: close: {self.closed_with_notice}  "
                f"connections: {self.connections}  "
                f"sessions left by refused requests: {self.sessions_left_by_refusals}")


class ErrorLog(logging.Handler):
    """Collects records at ERROR and above, and any record carrying a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


class FuzzClient:
    def __init__(self, server: ThreadServer, figures: Figures) -> None:
        self.server = server
        self.figures = figures
        self.sock: socket.socket | None = None
        self.buffer = b""
        self.live_session = ""

    def connect(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.server.port), TIMEOUT)
        self.sock.settimeout(TIMEOUT)
        self.buffer = b""

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def open_session(self) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": {"protocolVersion": LEGACY, "capabilities": {},
                                      "clientInfo": {"name": "fuzz", "version": "1"}}}).encode()
        status, headers, _ = self.exchange(Request("POST", [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream")], body))
        assert status == 200
        self.live_session = headers["mcp-session-id"]

    # -- reading ----------------------------------------------------------------------------
    def _fill(self) -> bool:
        assert self.sock is not None
        try:
            data = self.sock.recv(65536)
        except ConnectionError:
            return False
        if not data:
            return False
        self.buffer += data
        return True

    def _line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            if not self._fill():
                raise Unanswered("connection closed")
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            if not self._fill():
                raise Unanswered("connection closed inside a body")
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def read_reply(self, head: bool) -> tuple[int, dict[str, str], bytes]:
        status = int(self._line().split()[1])
        headers: dict[str, str] = {}
        while line := self._line():
            k, v = line.decode("latin-1").split(":", 1)
            headers[k.strip().lower()] = v.strip()
        if head or status in (204, 304):
            return status, headers, b""
        if "content-length" in headers:
            return status, headers, self._exactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int(self._line().split(b";")[0] or b"0", 16):
                parts.append(self._exactly(size))
                self._exactly(2)
            self._line()
            return status, headers, b"".join(parts)
        while self._fill():
            pass
        body, self.buffer = self.buffer, b""
        return status, headers, body

    # -- one request ------------------------------------------------------------------------
    def exchange(self, req: Request) -> tuple[int, dict[str, str], bytes]:
        if self.sock is None:
            self.connect()
            self.figures.connections += 1
        assert self.sock is not None
        headers = [(k, self.live_session if v == LIVE_SESSION else v) for k, v in req.headers]
        data = Request(req.method, headers, req.body, req.chunked).encode(self.server.port)
        try:
            self.sock.sendall(data)
            return self.read_reply(req.method == "HEAD")
        except (Unanswered, ConnectionError) as exc:
            raise Unanswered(str(exc)) from exc

    def check(self, req: Request) -> None:
        """Send ``req`` and check every invariant that holds after a single request."""
        f = self.figures
        assert self.server.transport is not None
        transport = self.server.transport
        sessions_before = self.server.call(lambda: len(transport.sessions))
        try:
            status, headers, body = self.exchange(req)
        except (Unanswered, TimeoutError) as exc:
            f.unanswered += 1
            f.problems.append(f"unanswered ({exc}): {req!r}")
            self.close()
            return
        f.requests += 1
        f.by_status[status] += 1
        f.by_era[req.era] += 1
        if status >= 500:
            f.server_errors += 1
            f.problems.append(f"{status} for {req!r}: {body[:300]!r}")
        if b"Traceback" in body or b'File "' in body:
            f.tracebacks += 1
            f.problems.append(f"traceback in the body for {req!r}")
        if status >= 400 and self.server.call(lambda: len(transport.sessions)) > sessions_before:
            f.sessions_left_by_refusals += 1
            f.problems.append(f"a {status} left a session behind: {req!r}")
        if "close" in headers.get("connection", "").lower():
            f.closed_with_notice += 1
            assert self.sock is not None
            rest = b""
            with contextlib.suppress(ConnectionError, TimeoutError):
                rest = self.sock.recv(1)
            if rest:
                f.problems.append(f"said Connection: close but sent more: {req!r}")
            self.close()


def defused(req: Request) -> Request:
    """``req`` without what would open a never-ending stream: a GET gets a bogus session,
    a ``subscriptions/listen`` becomes an unknown method (so every example is sent)."""
    headers = [(k, "bogus" if req.method == "GET" and v == LIVE_SESSION else v)
               for k, v in req.headers]
    body = req.body.replace(b"subscriptions/listen", b"subscriptions/lisn")
    return Request(req.method, headers, body, req.chunked, req.era)


def run(client: FuzzClient, req: Request) -> None:
    if streams_forever(req):
        req = defused(req)
    client.check(req)
    if req.method == "DELETE" or b"initialize" in req.body:
        t = client.server.transport
        assert t is not None
        if client.server.call(lambda: t.sessions.get(client.live_session)) is None:
            client.open_session()  # the fuzzed request ended the live session


def settle(server: ThreadServer, figures: Figures) -> None:
    """After a run: no request in progress, no stream, no refused connection lingering."""
    assert server.transport is not None
    t = server.transport
    deadline = time.monotonic() + TIMEOUT
    while True:
        left = server.call(lambda: (t.in_progress, len(t.listen_index), t.lingering))
        if left == (0, 0, 0):
            return
        if time.monotonic() > deadline:
            figures.problems.append(f"left after the run (requests, streams, lingering): {left}")
            return
        time.sleep(0.05)  # polled: the transport has no event for "idle"


def fuzz(examples: int, seed: int | None, derandomize: bool) -> tuple[Figures, ErrorLog]:
    figures = Figures()
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)
    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger("tornado.access").propagate = True
    try:
        with ThreadServer(max_sessions=None, max_request_bytes=64 * 1024) as server:
            client = FuzzClient(server, figures)
            client.connect()
            client.open_session()
            start = time.monotonic()

            @settings(max_examples=examples, derandomize=derandomize, deadline=None,
                      database=None, suppress_health_check=list(HealthCheck),
                      print_blob=False)
            @given(requests())
            def one(req: Request) -> None:
                run(client, req)

            if seed is not None:
                from hypothesis import seed as hseed
                one = hseed(seed)(one)
            one()
            figures.seconds = time.monotonic() - start
            client.close()
            settle(server, figures)
    finally:
        logging.getLogger().removeHandler(errors)
    return figures, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=None,
                        help="a seed for a reproducible run (default: random)")
    args = parser.parse_args(argv)
    figures, errors = fuzz(args.requests, args.seed, derandomize=False)
    print(figures.report())
    print(f"log records at ERROR or with a traceback: {len(errors.records)}")
    for problem in figures.problems[:20]:
        print("problem:", problem)
    for record in errors.records[:5]:
        print("error log:", record.getMessage())
    failed = figures.problems or errors.records
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

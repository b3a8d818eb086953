"""The servers the library starts bound slow clients: header and body timeouts, backlog.

A client that trickles its headers or its body holds a connection (and a file
descriptor) for as long as the HTTP server lets it; these run the demo and the example
servers as subprocesses and check that such clients are cut off at the configured time.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT, ServerFactory
from http_wire import WireConn
from mcp_http import Running, rpc

from tornado_mcp import cli

SERVERS = {
    "demo": ["-m", "tornado_mcp", "demo", "--no-admin"],
    "conformance": ["examples/conformance_server.py", "--no-admin"],
    "embed": ["examples/embed_in_app.py"],
}
DEADLINE = 10.0


async def trickle_until_closed(conn: WireConn, first: bytes, drip: bytes,
                               deadline: float = DEADLINE) -> float:
    """Send ``first``, then ``drip`` every 0.2 s, until the server closes; the seconds
    that took (fails after ``deadline``)."""
    start = time.monotonic()
    await conn.send(first)
    closed = asyncio.ensure_future(conn.at_eof(deadline))
    try:
        while not closed.done():
            if time.monotonic() - start > deadline:
                pytest.fail("the server kept a trickling client past the deadline")
            try:
                await conn.send(drip)
            except ConnectionError:
                break
            await asyncio.wait([closed], timeout=0.2)  # the trickle's pace
        assert await closed
    finally:
        closed.cancel()
        conn.close()
    return time.monotonic() - start


@pytest.mark.parametrize("name", list(SERVERS))
async def test_trickled_headers_are_cut_off_at_the_header_timeout(
        name: str, server_factory: ServerFactory) -> None:
    srv = server_factory([*SERVERS[name], "--header-timeout", "1", "--body-timeout", "1"])
    conn = await WireConn.open(srv.port)
    took = await trickle_until_closed(conn, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                                      b"X-Slow: 1\r\n")
    assert 0.8 <= took < 5.0


@pytest.mark.parametrize("name", list(SERVERS))
async def test_a_trickled_body_is_cut_off_at_the_body_timeout(
        name: str, server_factory: ServerFactory) -> None:
    srv = server_factory([*SERVERS[name], "--header-timeout", "30", "--body-timeout", "1"])
    conn = await WireConn.open(srv.port)
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "Content-Length: 1000000\r\n\r\n").encode()
    took = await trickle_until_closed(conn, head, b"          ")
    assert 0.8 <= took < 5.0


async def test_an_idle_keep_alive_connection_is_closed_at_the_header_timeout(
        server_factory: ServerFactory) -> None:
    srv = server_factory([*SERVERS["demo"], "--header-timeout", "1"])
    conn = await WireConn.open(srv.port)
    try:
        start = time.monotonic()
        assert await conn.at_eof(DEADLINE)
        assert 0.8 <= time.monotonic() - start < 5.0
    finally:
        conn.close()


@pytest.mark.parametrize("name", list(SERVERS))
def test_the_flags_and_their_defaults_are_documented(name: str) -> None:
    out = subprocess.run([sys.executable, *SERVERS[name], "--help"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    flat = " ".join(out.split())
    assert "--header-timeout SECONDS" in flat
    assert "--body-timeout SECONDS" in flat
    assert "--read-chunk BYTES" in flat
    assert f"(default: {cli.HEADER_TIMEOUT:g})" in flat
    assert f"(default: {cli.BODY_TIMEOUT:g})" in flat


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_the_listen_backlog_fits_a_burst(server_factory: ServerFactory) -> None:
    srv = server_factory([*SERVERS["demo"], "--backlog", "1000"])
    out = subprocess.run(["ss", "-ltnH", f"sport = :{srv.port}"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    # For a listening socket, ss reports the backlog as Send-Q (the third column).
    assert int(out.split()[2]) == 1000, out
    srv.stop()
    srv = server_factory(SERVERS["demo"])
    out = subprocess.run(["ss", "-ltnH", f"sport = :{srv.port}"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    assert int(out.split()[2]) == min(cli.BACKLOG, somaxconn) > 128, out


def test_the_timeouts_can_be_turned_off_with_none() -> None:
    import argparse

    from tornado_mcp import cli

    parser = argparse.ArgumentParser()
    cli.add_option_flags(parser)
    args = parser.parse_args(["--body-timeout", "none", "--header-timeout", "NONE"])
    assert cli.http_server_bounds(args) == {"idle_connection_timeout": None,
                                            "chunk_size": 8192}
    assert cli.options_from_args(args).body_timeout is None
    defaults = parser.parse_args([])
    assert cli.http_server_bounds(defaults) == {"idle_connection_timeout": 30.0,
                                                "chunk_size": cli.READ_CHUNK}
    # The body's bound is the endpoint's own option, 60 s on the servers started here.
    assert cli.options_from_args(defaults).body_timeout == cli.BODY_TIMEOUT == 60.0


@pytest.mark.parametrize(("value", "accepted"), [("1024", True), ("1023", False),
                                                 ("1048576", True), ("1048577", False),
                                                 ("lots", False)])
def test_the_read_size_is_bounded(value: str, accepted: bool) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    cli.add_option_flags(parser)
    if accepted:
        assert cli.http_server_bounds(parser.parse_args(["--read-chunk", value])
                                      )["chunk_size"] == int(value)
    else:
        with pytest.raises(SystemExit):
            parser.parse_args(["--read-chunk", value])


@pytest.mark.parametrize("name", list(SERVERS))
async def test_a_body_many_reads_long_arrives_whole(server_factory: ServerFactory,
                                                   name: str) -> None:
    """With the smallest read size, a 200 KB argument arrives in 200 reads and chunks,
    and the tool sees it whole; the default read size serves it too."""
    for flags in (["--read-chunk", "1024"], []):
        srv = server_factory([*SERVERS[name], *flags])
        client = Running.remote(srv.port)
        try:
            sid = await client.initialize()
            text = "x" * 200_000
            tool = "greet" if name == "embed" else "echo"
            arguments = {"name": text} if name == "embed" else {"text": text}
            reply = await client.post(rpc("tools/call", {"name": tool,
                                                         "arguments": arguments}, 2),
                                      session=sid)
            assert reply.status == 200
            assert text in reply.messages[-1]["result"]["content"][0]["text"]
        finally:
            client.client.close()
            srv.stop()

"""DNS-rebinding protection: the ``Host`` and ``Origin`` checks (403), their allow-lists, turning
them off, and what the check retains of client-sent header values.
"""

from __future__ import annotations

import pytest
from mcp_http import (
    assert_refused,
    example_server,
    init_msg,
    raw_exchange,
    running,
)

from tornado_mcp import Server
from tornado_mcp.transport.security import parse_host


async def test_bad_host_is_403() -> None:
    async with running(example_server()) as srv:
        r = await srv.post(init_msg(), headers={"Host": "evil.example.com"})
        assert_refused(r, 403, -32600, "Forbidden: Invalid Host header")
        assert len(srv.transport.sessions) == 0
        sid = await srv.initialize()
        assert_refused(await srv.get(sid, Host="evil.example.com"), 403, -32600,
                       "Invalid Host header")


@pytest.mark.parametrize("origin", ["http://evil.example.com", "null", "file:///etc/x",
                                    "http://127.0.0.1:1/path"])
async def test_bad_origin_is_403(origin: str) -> None:
    async with running(example_server()) as srv:
        r = await srv.post(init_msg(), headers={"Origin": origin})
        assert_refused(r, 403, -32600, "Forbidden: Invalid Origin header")
        sid = await srv.initialize()
        d = await srv.request("DELETE", None, {"Mcp-Session-Id": sid, "Origin": origin})
        assert_refused(d, 403, -32600, "Forbidden: Invalid Origin header")
        assert len(srv.transport.sessions) == 1


async def test_same_origin_and_no_origin_are_accepted() -> None:
    async with running(example_server()) as srv:
        same = await srv.post(init_msg(), headers={"Origin": f"http://127.0.0.1:{srv.port}"})
        assert same.status == 200
        none = await srv.post(init_msg())
        assert none.status == 200
        upper = await srv.post(init_msg(), headers={"Host": f"LOCALHOST:{srv.port}",
                                                    "Origin": f"http://localhost:{srv.port}"})
        assert upper.status == 200


async def test_allowed_hosts_and_allowed_origins_are_accepted() -> None:
    async with running(example_server(), allowed_hosts=["mcp.example.com", "api.example:8443"],
                       allowed_origins=["https://app.example"]) as srv:
        ok_host = await srv.post(init_msg(), headers={"Host": "mcp.example.com:1234"})
        assert ok_host.status == 200
        ok_hostport = await srv.post(init_msg(), headers={"Host": "api.example:8443"})
        assert ok_hostport.status == 200
        bad_port = await srv.post(init_msg(), headers={"Host": "api.example:9000"})
        assert_refused(bad_port, 403, -32600, "Invalid Host header")
        ok_origin = await srv.post(init_msg(), headers={"Origin": "https://app.example"})
        assert ok_origin.status == 200
        bad_origin = await srv.post(init_msg(), headers={"Origin": "https://other.example"})
        assert_refused(bad_origin, 403, -32600, "Invalid Origin header")


async def test_rebinding_protection_off_skips_the_checks() -> None:
    async with running(example_server(), dns_rebinding_protection=False) as srv:
        r = await srv.post(init_msg(), headers={"Host": "evil.example.com",
                                                "Origin": "http://evil.example.com"})
        assert r.status == 200


async def test_the_check_retains_no_large_client_header_values() -> None:
    """Each refused request carries a 30 kB Origin; what the check keeps to answer repeats
    quickly stays far below what the clients sent."""
    async with running(Server("x")) as srv:
        for i in range(40):
            r = await raw_exchange(srv.port, "POST", b"{}", [
                ("Origin", "http://" + "a" * 30_000 + str(i)),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream")])
            assert r.status == 403
        held = srv.transport.rebinding.cached_header_chars()
        assert held < 64 * 1024, held


@pytest.mark.parametrize("host", [
    "[::1].evil.example", "[::1]evil.example", "[::1]:80.evil.example", "[::1", "::1",
    "localhost:evil.example", "localhost:80:80", "localhost:", "localhost:99999",
    "localhost:+80", "localhost.evil.example", "127.0.0.1.evil.example", "[fe80::1%25eth0]",
    "[127.0.0.1]", "-localhost", "localhost:1e3",
])
async def test_a_host_that_only_begins_like_a_loopback_name_is_403(host: str) -> None:
    async with running(example_server()) as srv:
        r = await srv.post(init_msg(), headers={"Host": host})
        assert_refused(r, 403, -32600, "Forbidden: Invalid Host header")
        assert len(srv.transport.sessions) == 0


@pytest.mark.parametrize("host", ["localhost", "localhost:{port}", "LocalHost:{port}",
                                  "127.0.0.1", "127.0.0.1:{port}", "[::1]", "[::1]:{port}",
                                  "[0:0:0:0:0:0:0:1]:{port}"])
async def test_loopback_hosts_as_a_browser_writes_them_are_accepted(host: str) -> None:
    async with running(example_server()) as srv:
        r = await srv.post(init_msg(), headers={"Host": host.format(port=srv.port)})
        assert r.status == 200, r.body


def test_hosts_are_parsed_into_name_and_numeric_port() -> None:
    assert parse_host("[::1]:8000") == ("[::1]", "8000")
    assert parse_host("mcp.example.com") == ("mcp.example.com", None)
    assert parse_host("api.example:65535") == ("api.example", "65535")
    assert parse_host("[0:0:0:0:0:0:0:1]") == ("[::1]", None)
    # what Tornado already answers 400 to never reaches the check, and would fail it too
    for bad in ("api.example:65536", "api.example:0x50", "", "[]", "[::1]]", "a..b",
                "localhost@evil.example", "evil.example@localhost", "localhost\\evil",
                "local host"):
        assert parse_host(bad) is None, bad

"""The HTTP client the verifiers use to reach the authorization server."""

from __future__ import annotations

from tornado.httpclient import AsyncHTTPClient, HTTPRequest, HTTPResponse


async def fetch(request: HTTPRequest, max_body_bytes: int) -> HTTPResponse:
    """Fetch ``request`` with Tornado's async client (never blocking the IOLoop), refusing
    a response body over ``max_body_bytes``: a misbehaving authorization server cannot
    fill our memory.  Raises what :meth:`AsyncHTTPClient.fetch` raises."""
    client = AsyncHTTPClient(force_instance=True, max_body_size=max_body_bytes)
    try:
        return await client.fetch(request)
    finally:
        client.close()

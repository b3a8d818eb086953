"""Client ID Metadata Documents: a client whose ``client_id`` is an https URL describes
itself in the JSON document at that URL (draft-ietf-oauth-client-id-metadata-document,
the registration MCP 2025-11-25 prefers).

:class:`MetadataDocuments` fetches them with Tornado's client, bounded and SSRF-safe:

* the URL must be ``https`` with a path, no fragment, no user info, no dot segments;
* its host must resolve to public addresses only: the resolver the fetch uses drops
  private, loopback, link-local, multicast and reserved addresses, and the connection
  goes to what is left (no second lookup a DNS rebinding could answer differently), so a
  client id can never make the server fetch from inside its own network
  (``Policy.metadata_document_private_addresses`` lifts this, and allows plain http, for
  tests and intranets);
* no redirects; at most ``oauth_max_client_metadata_bytes`` of body (a live option);
  ``timeout`` seconds; at most :data:`MAX_CONCURRENT_FETCHES` at once;
* the document must name the URL as its ``client_id``, carry no secret and use no
  secret to authenticate (``token_endpoint_auth_method`` ``none``).

Documents are cached (``Cache-Control: max-age``, kept between :data:`MIN_TTL` and
:data:`MAX_TTL`, at most :data:`CACHE_SIZE` of them), and so are refusals, for
:data:`FAILURE_TTL`, so a bad client id costs one fetch a minute, however often it comes.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from tornado.httpclient import HTTPClientError, HTTPRequest, HTTPResponse
from tornado.httputil import HTTPInputError
from tornado.iostream import StreamClosedError
from tornado.netutil import DefaultLoopResolver, Resolver
from tornado.simple_httpclient import SimpleAsyncHTTPClient

from ..auth.quietlog import Throttled
from ..protocol import Refusal
from .policy import Policy
from .records import METADATA_DOCUMENT, Client
from .registration import MetadataError, parse, validate

log = logging.getLogger("tornado_mcp.authserver")

CACHE_SIZE = 256
MIN_TTL = 300.0
MAX_TTL = 86400.0
DEFAULT_TTL = 3600.0
FAILURE_TTL = 60.0
MAX_CONCURRENT_FETCHES = 8
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*(\d+)", re.I)


def is_metadata_url(client_id: str) -> bool:
    """Whether ``client_id`` is meant as a metadata document's URL (an http(s) URL)."""
    return client_id.startswith(("https://", "http://"))


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class PublicResolver(Resolver):
    """A resolver answering only public addresses (``allow_private`` answers all)."""

    def initialize(self, allow_private: bool = False) -> None:
        self.allow_private = allow_private
        self.inner = DefaultLoopResolver()

    async def resolve(self, host: str, port: int,
                      family: socket.AddressFamily = socket.AF_UNSPEC
                      ) -> list[tuple[int, Any]]:
        found = await self.inner.resolve(host, port, family)
        kept = found if self.allow_private else [a for a in found if _public(a[1][0])]
        if not kept:
            raise OSError(f"{host} resolves to no public address")
        return kept


class MetadataDocuments:
    """Fetches, checks and caches metadata documents for ``policy``; ``max_bytes`` and
    ``max_redirect_uris`` are read at each fetch (live options)."""

    def __init__(self, policy: Policy, max_bytes: Callable[[], int],
                 max_redirect_uris: Callable[[], int], timeout: float = 5.0,
                 ca_certs: str | None = None) -> None:
        self.policy = policy
        self.max_bytes = max_bytes
        self.max_redirect_uris = max_redirect_uris
        self.timeout = timeout
        self.ca_certs = ca_certs
        self._cache: OrderedDict[str, tuple[float, Client | MetadataError]] = OrderedDict()
        self._fetching: dict[str, asyncio.Future[Client]] = {}
        self._slots = asyncio.Semaphore(MAX_CONCURRENT_FETCHES)
        self._failures = Throttled(log)
        #: Documents fetched so far (for tests and the curious).
        self.fetches = 0

    def url_refusal(self, url: str) -> str | None:
        """Why ``url`` cannot be a client id, or ``None``."""
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            return "the client id is not a valid URL"
        allow_http = self.policy.metadata_document_private_addresses
        if parts.scheme != "https" and not (allow_http and parts.scheme == "http"):
            return "a client id URL must use https"
        if not parts.hostname or parts.username or parts.password or parts.fragment \
                or "#" in url:
            return "a client id URL needs a host, and no user info or fragment"
        if not parts.path or parts.path == "/" \
                or any(s in (".", "..") for s in parts.path.split("/")):
            return "a client id URL needs a path without . or .. segments"
        if len(url) > 2048:
            return "a client id URL may have at most 2048 characters"
        return None

    async def client(self, url: str) -> Client:
        """The client ``url`` describes, or :class:`MetadataError` saying why not."""
        refusal = self.url_refusal(url)
        if refusal is not None:
            raise MetadataError("invalid_client", refusal)
        hit = self._cache.get(url)
        if hit is not None and hit[0] > time.monotonic():
            self._cache.move_to_end(url)
            if isinstance(hit[1], MetadataError):
                raise hit[1]
            return hit[1]
        pending = self._fetching.get(url)
        if pending is None:
            pending = asyncio.ensure_future(self._fetch(url))
            self._fetching[url] = pending
            pending.add_done_callback(lambda _: self._fetching.pop(url, None))
        return await asyncio.shield(pending)

    def _keep(self, url: str, value: Client | MetadataError, ttl: float) -> None:
        self._cache[url] = (time.monotonic() + ttl, value)
        self._cache.move_to_end(url)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    async def _fetch(self, url: str) -> Client:
        try:
            async with self._slots:
                self.fetches += 1
                response, body = await self._get(url)
            client = self._client(url, body)
        except MetadataError as exc:
            self._keep(url, exc, FAILURE_TTL)
            self._failures.log(logging.INFO, "refused the client metadata document at %s: %s",
                               url, exc.description)
            raise
        self._keep(url, client, _ttl(response))
        return client

    async def _get(self, url: str) -> tuple[HTTPResponse, bytes]:
        """The response and its body, read only up to ``max_bytes``."""
        limit = self.max_bytes()
        chunks: list[bytes] = []
        size = [0]

        def take(chunk: bytes) -> None:
            size[0] += len(chunk)
            if size[0] > limit:
                raise _TooLarge  # ends the fetch; its connection is dropped
            chunks.append(chunk)

        resolver = PublicResolver(allow_private=self.policy.metadata_document_private_addresses)
        # The body is read in chunks and cut off past ``limit`` by ``take``, whatever
        # length the server declares (so a declared length is never refused unread: a
        # lie past the bound is caught as it arrives, and counted the same way).
        http = SimpleAsyncHTTPClient(force_instance=True, resolver=resolver)
        request = HTTPRequest(url, headers={"Accept": "application/json"},
                              follow_redirects=False, connect_timeout=self.timeout,
                              request_timeout=self.timeout, ca_certs=self.ca_certs,
                              streaming_callback=take)
        try:
            return await http.fetch(request), b"".join(chunks)
        except (HTTPClientError, OSError, HTTPInputError, StreamClosedError, ValueError) as exc:
            if size[0] > limit:
                raise MetadataError("invalid_client", f"the client metadata document exceeds "
                                    f"{limit} bytes",
                                    Refusal.OAUTH_MAX_CLIENT_METADATA_BYTES) from None
            if isinstance(exc, HTTPClientError) and exc.code != 599:
                raise MetadataError("invalid_client", f"the client metadata document "
                                    f"answered {exc.code}") from None
            raise MetadataError("invalid_client", f"the client metadata document could not "
                                f"be fetched ({exc})") from None
        finally:
            http.close()

    def _client(self, url: str, body: bytes) -> Client:
        data = parse(body, self.max_bytes())
        if data.get("client_id") != url:
            raise MetadataError("invalid_client",
                                "the metadata document's client_id is not its own URL")
        if any(k in data for k in ("client_secret", "client_secret_expires_at")):
            raise MetadataError("invalid_client", "a metadata document may not carry a secret")
        meta = validate(data, self.policy, self.max_redirect_uris(), public_only=True)
        return Client(url, meta, None, int(time.time()), METADATA_DOCUMENT)


class _TooLarge(HTTPInputError):
    """A metadata document past its byte bound, while it is being read: an
    ``HTTPInputError``, which Tornado's connection takes as the end of a malformed message
    (it closes the connection, logged at INFO), not as a failing callback (an ERROR)."""


def _ttl(response: HTTPResponse) -> float:
    found = _MAX_AGE.search(response.headers.get("Cache-Control", ""))
    seconds = float(found.group(1)) if found else DEFAULT_TTL
    return min(MAX_TTL, max(MIN_TTL, seconds))

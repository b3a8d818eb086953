"""DNS-rebinding protection: the Host and Origin headers a request may carry.

A browser page on a hostile site can resolve its own name to 127.0.0.1 and reach a local
server; the Host it sends still names the hostile site.  Loopback names are always
allowed; anything else must be listed in ``allowed_hosts`` (and a cross-origin Origin in
``allowed_origins`` or ``cors_allowed_origins``).

A Host is first parsed the way a browser writes it (:func:`parse_host`): a bracketed IPv6
literal or a host name, each with an optional numeric port, and nothing else, so a value
such as ``[::1].evil.example`` or ``localhost:evil.example`` is refused, not matched by
its prefix.
"""

from __future__ import annotations

import ipaddress
import re

from ..options import Options
from .headers import MAX_CACHED_HEADER

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
#: The refusals name the option that allows a host or origin (behind a reverse proxy, the
#: public name of the service is what to add).
HOST_REFUSAL = ("Forbidden: Invalid Host header (only loopback names are accepted unless "
                "the host is listed in the allowed_hosts option)")
ORIGIN_REFUSAL = ("Forbidden: Invalid Origin header (only same-origin requests are accepted "
                  "unless the origin is listed in the allowed_origins option)")
#: Verdicts kept at most; the cache simply starts over when full.
VERDICT_CACHE_SIZE = 1024
#: A host name (or IPv4 address) as a browser sends it: dot-separated labels of letters,
#: digits, ``-`` and ``_`` (already lower-cased and IDNA-encoded), an optional final dot.
_HOSTNAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?")
_PORT = re.compile(r"[0-9]{1,5}")


def parse_host(value: str) -> tuple[str, str | None] | None:
    """``(host, port)`` of a lower-cased ``Host`` value (``host`` keeps an IPv6 literal's
    brackets, in its shortest form; ``port`` is ``None`` when absent), or ``None`` when
    the value is not ``[IPv6]``, ``[IPv6]:port``, ``name`` or ``name:port`` with a
    numeric port."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        literal, rest = value[1:end], value[end + 1:]
        if "%" in literal:  # a zone id is local to the client, never in a Host
            return None
        try:
            host = f"[{ipaddress.IPv6Address(literal).compressed}]"
        except ValueError:
            return None
    else:
        host, colon, port_text = value.partition(":")
        rest = colon + port_text
        if not _HOSTNAME.fullmatch(host):
            return None
    if not rest:
        return host, None
    port = rest[1:]
    if rest[0] != ":" or not _PORT.fullmatch(port) or int(port) > 65535:
        return None
    return host, port


def rebinding_verdict(host_header: str | None, origin: str | None,
                      opts: Options) -> str | None:
    """The refusal message for this Host/Origin pair, or ``None`` when it is allowed."""
    host = (host_header or "").strip().lower()
    if host:
        parsed = parse_host(host)
        if parsed is None:
            return HOST_REFUSAL
        bare = parsed[0]
        if not (bare in LOOPBACK_HOSTS or host in opts.allowed_hosts
                or bare in opts.allowed_hosts):
            return HOST_REFUSAL
    if origin is None:
        return None
    o = origin.strip().lower()
    if o in opts.allowed_origins or o in opts.cors_allowed_origins:
        return None
    scheme, sep, authority = o.partition("://")
    if not sep or not authority or "/" in authority or scheme not in ("http", "https"):
        return ORIGIN_REFUSAL
    default = ":443" if scheme == "https" else ":80"
    if authority.endswith(default):
        authority = authority[: -len(default)]
    if host.endswith((":80", ":443")):
        host = host.rsplit(":", 1)[0]
    return None if authority == host else ORIGIN_REFUSAL


class RebindingGuard:
    """:func:`rebinding_verdict` for one transport's options, with verdicts cached per
    short Host/Origin pair (the allowed hosts and origins are fixed for its life)."""

    __slots__ = ("_cache", "_options")

    def __init__(self, options: Options) -> None:
        self._options = options
        self._cache: dict[tuple[str | None, str | None], str | None] = {}

    def __len__(self) -> int:
        return len(self._cache)

    def cached_header_chars(self) -> int:
        """Characters of client-sent header values the cache holds (bounded)."""
        return sum(len(h or "") + len(o or "") for h, o in self._cache)

    def verdict(self, host_header: str | None, origin: str | None) -> str | None:
        if len(host_header or "") + len(origin or "") > MAX_CACHED_HEADER:
            return rebinding_verdict(host_header, origin, self._options)
        key = (host_header, origin)
        cache = self._cache
        if key in cache:
            return cache[key]
        if len(cache) >= VERDICT_CACHE_SIZE:
            cache.clear()
        verdict = cache[key] = rebinding_verdict(host_header, origin, self._options)
        return verdict

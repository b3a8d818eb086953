"""What the host application decides: who may grant which scopes, which clients are
welcome, and how long what is issued lives.

:class:`Policy` holds the hooks and their defaults.  The defaults let in the clients
people use and nobody else's redirect:

* a redirect URI on the loopback interface (``http://127.0.0.1:<any port>/...``,
  ``http://localhost``, ``http://[::1]``; RFC 8252 §7.3, as Claude Code, VS Code, the
  Inspector and the SDKs use), any port matching the one registered;
* an ``https`` redirect URI on a host of :data:`KNOWN_CLIENT_HOSTS` (hosted clients:
  Claude, ChatGPT, VS Code for the web, Cursor's agents);
* a private-use scheme of :data:`KNOWN_CLIENT_SCHEMES` (``cursor://``, ``vscode://``).

Everything else (another https host, plain http elsewhere, ``javascript:``, a fragment)
is refused at registration, and again at the authorization endpoint.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .records import Client

#: Hosts of hosted MCP clients whose https redirect URIs are accepted by default.
KNOWN_CLIENT_HOSTS = ("claude.ai", "claude.com", "chatgpt.com", "chat.openai.com",
                      "vscode.dev", "insiders.vscode.dev", "www.cursor.com")
#: Private-use URI schemes of desktop clients (RFC 8252 §7.1) accepted by default.
KNOWN_CLIENT_SCHEMES = ("cursor", "vscode", "vscode-insiders")
#: Schemes never accepted, whatever the policy says.
_NEVER = frozenset({"javascript", "data", "vbscript", "file", "about", "blob"})
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")

#: Which scopes a user may grant: called with the user's subject, returns scope names
#: (directly or as an awaitable).
UserScopes = Callable[[str], Iterable[str] | Awaitable[Iterable[str]]]
#: A last word on a client: called with it at registration and at each authorization,
#: returns why it is refused, or ``None``.
AllowClient = Callable[[Client], str | None]


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_listed(host: str, listed: Sequence[str]) -> bool:
    host = host.lower().rstrip(".")
    for entry in listed:
        entry = entry.lower()
        if entry == "*" or host == entry or (entry.startswith("*.")
                                             and host.endswith(entry[1:])):
            return True
    return False


@dataclass
class Policy:
    """The host's rules (every field has a default).

    ``user_scopes``: the scopes a user may grant (``None``: every scope the server
    offers).  A token never carries more than this, whatever the client asked for, and a
    refresh drops what the user may no longer grant.
    ``redirect_hosts``: https hosts a redirect URI may name (``"*.example.com"`` for a
    domain's hosts, ``"*"`` for any); loopback http is always accepted.
    ``redirect_schemes``: private-use schemes accepted.
    ``allow_client``: a last word on each client (see :data:`AllowClient`).
    ``access_token_ttl``, ``refresh_token_ttl``, ``code_ttl``: lifetimes, in seconds.
    ``metadata_document_private_addresses``: fetch Client ID Metadata Documents from
    private, loopback and link-local addresses too, and over plain http (for tests and
    intranets; off by default, since a client id could otherwise make the server fetch
    from inside its own network).
    """

    user_scopes: UserScopes | None = None
    redirect_hosts: Sequence[str] = KNOWN_CLIENT_HOSTS
    redirect_schemes: Sequence[str] = KNOWN_CLIENT_SCHEMES
    allow_client: AllowClient | None = None
    access_token_ttl: int = 3600
    refresh_token_ttl: int = 30 * 86400
    code_ttl: int = 120
    metadata_document_private_addresses: bool = False

    def __post_init__(self) -> None:
        for name in ("access_token_ttl", "refresh_token_ttl", "code_ttl"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive whole number of seconds")
        if self.code_ttl > 600:
            raise ValueError("code_ttl may be at most 600 seconds (RFC 6749 §4.1.2)")

    def redirect_refusal(self, uri: Any) -> str | None:
        """Why ``uri`` may not be a redirect URI, or ``None`` when it may."""
        if not isinstance(uri, str) or not uri or len(uri) > 2048:
            return "a redirect URI must be a string of at most 2048 characters"
        if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in uri):
            return "a redirect URI may not hold spaces or control characters"
        try:
            parts = urlsplit(uri)
            host = parts.hostname
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            return f"{uri} is not a valid URI"
        scheme = parts.scheme.lower()
        if parts.fragment or "#" in uri:
            return "a redirect URI may not have a fragment"
        if not _SCHEME.fullmatch(scheme) or scheme in _NEVER:
            return f"the scheme of {uri} is not accepted"
        if scheme == "http":
            if is_loopback(host):
                return None
            return "plain http redirect URIs are accepted on the loopback interface only"
        if scheme == "https":
            if host and _host_listed(host, self.redirect_hosts):
                return None
            return f"https redirect URIs to {host} are not accepted by this server"
        if scheme in (s.lower() for s in self.redirect_schemes):
            return None
        return f"{scheme}: redirect URIs are not accepted by this server"

    def client_refusal(self, client: Client) -> str | None:
        """Why ``client`` may not use this server, or ``None``: a client needs at least one
        acceptable redirect URI, and the host's :attr:`allow_client` must agree."""
        uris = client.redirect_uris
        if not uris:
            return "a client needs at least one redirect URI"
        if all(self.redirect_refusal(u) is not None for u in uris):
            return self.redirect_refusal(uris[0])
        return self.allow_client(client) if self.allow_client is not None else None


def redirect_matches(registered: str, presented: str) -> bool:
    """Whether ``presented`` is the registered redirect URI ``registered``: equal, or for
    a loopback http one equal but for the port (RFC 8252 §7.3: a native app takes any
    free port)."""
    if registered == presented:
        return True
    try:
        a, b = urlsplit(registered), urlsplit(presented)
        if a.scheme != "http" or b.scheme != "http" or not is_loopback(a.hostname):
            return False
        b.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return False
    same = (a.hostname == b.hostname and (a.path or "/") == (b.path or "/")
            and a.query == b.query and not b.fragment and not b.username
            and not b.password)
    return same

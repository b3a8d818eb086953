"""What the sign-in tests share: ``examples/host_auth_app.py`` served with its own OAuth
authorization server on a loopback port, and the steps of the flow over plain HTTP (the
browser and SDK tests drive the same app with real clients).

``serving()`` yields an :class:`App`; ``App.signed_in(user)`` is an ``httpx`` client
logged in through the app's form; ``App.register()``, ``App.consent()``, ``App.code()``
and ``App.token()`` are the steps a client and its user go through.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import importlib.util
import json
import re
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import tornado.httpserver
import tornado.netutil

from tornado_mcp import Transport
from tornado_mcp.authserver import SignIn

ROOT = Path(__file__).resolve().parents[2]
STEP = 10.0
REDIRECT = "http://127.0.0.1:9/callback"  # never visited: the tests read the redirect
MODERN = "2026-07-28"
PASSWORDS = {"ada": "lovelace", "root": "correct horse"}


def load_example() -> ModuleType:
    """A fresh copy of ``examples/host_auth_app.py`` (its own users and notes)."""
    spec = importlib.util.spec_from_file_location("host_auth_app_signin",
                                                  ROOT / "examples" / "host_auth_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def query_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


@dataclass
class Flow:
    """One authorization request a client makes (and what it needs at the token endpoint)."""

    client_id: str
    verifier: str
    challenge: str
    params: dict[str, str]
    secret: str | None = None


@dataclass
class App:
    example: ModuleType
    base: str
    signin: SignIn
    transport: Transport
    clients: list[httpx.AsyncClient] = field(default_factory=list)
    #: The public URL when it is not ``base`` (processes of a cluster share one).
    public: str = ""

    @property
    def mcp(self) -> str:
        """Where this app's endpoint is reached."""
        return self.base + "/mcp"

    @property
    def issuer(self) -> str:
        return self.public or self.base

    @property
    def resource(self) -> str:
        """The endpoint's canonical URL (what tokens are meant for)."""
        return self.issuer + "/mcp"

    @property
    def refusals(self) -> dict[str, int]:
        return dict(self.transport.snapshot(sessions=False, streams=False).refusals)

    def url(self, name: str) -> str:
        return f"{self.base}/oauth/{name}"

    def http(self, **kwargs: Any) -> httpx.AsyncClient:
        client = httpx.AsyncClient(timeout=STEP, **kwargs)
        self.clients.append(client)
        return client

    async def signed_in(self, user: str = "ada") -> httpx.AsyncClient:
        """A browser-like client logged in as ``user`` through the app's own form."""
        client = self.http()
        form = await client.get(self.base + "/login")
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form.text)
        assert xsrf is not None
        r = await client.post(self.base + "/login", data={
            "_xsrf": xsrf.group(1), "name": user, "password": PASSWORDS[user]})
        assert r.status_code == 302, r.text
        return client

    async def register(self, **metadata: Any) -> dict[str, Any]:
        body = {"redirect_uris": [REDIRECT], "client_name": "test client",
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], **metadata}
        r = await self.http().post(self.url("register"), json=body)
        assert r.status_code == 201, r.text
        return dict(r.json())

    def flow(self, client: dict[str, Any], **params: str) -> Flow:
        verifier, challenge = pkce()
        base = {"response_type": "code", "client_id": client["client_id"],
                "redirect_uri": REDIRECT, "state": secrets.token_urlsafe(8),
                "code_challenge": challenge, "code_challenge_method": "S256",
                "resource": self.resource, "scope": "notes"}
        base.update(params)
        return Flow(client["client_id"], verifier, challenge,
                    {k: v for k, v in base.items() if v is not None},
                    client.get("client_secret"))

    async def consent(self, browser: httpx.AsyncClient, flow: Flow) -> httpx.Response:
        """The authorization endpoint's answer to ``flow`` for the logged-in ``browser``."""
        return await browser.get(self.url("authorize") + "?" + urlencode(flow.params))

    async def decide(self, browser: httpx.AsyncClient, page: httpx.Response,
                     decision: str = "approve", **extra: str) -> httpx.Response:
        """Post the consent form of ``page`` (as the browser would), ``extra`` fields added."""
        assert page.status_code == 200, page.text
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"',
                                 page.text))
        data = {k: html.unescape(v) for k, v in fields.items()}
        data.update(decision=decision, **extra)
        return await browser.post(self.url("authorize"), data=data)

    async def code(self, browser: httpx.AsyncClient, flow: Flow) -> str:
        """The code the user's approval of ``flow`` redirects the browser back with."""
        r = await self.decide(browser, await self.consent(browser, flow))
        assert r.status_code == 302, r.text
        location = r.headers["location"]
        assert location.startswith(flow.params["redirect_uri"].split("?")[0]), location
        query = query_of(location)
        assert query["state"] == flow.params["state"] and query["iss"] == self.issuer
        return query["code"]

    async def token(self, flow: Flow, code: str, **extra: str | None) -> httpx.Response:
        data: dict[str, str | None] = {
            "grant_type": "authorization_code", "code": code,
            "redirect_uri": flow.params["redirect_uri"], "client_id": flow.client_id,
            "code_verifier": flow.verifier, "resource": self.resource}
        if flow.secret:
            data["client_secret"] = flow.secret
        data.update(extra)
        return await self.http().post(self.url("token"),
                                      data={k: v for k, v in data.items() if v is not None})

    async def refresh(self, flow: Flow, refresh_token: str, **extra: str) -> httpx.Response:
        data = {"grant_type": "refresh_token", "refresh_token": refresh_token,
                "client_id": flow.client_id, **extra}
        return await self.http().post(self.url("token"), data=data)

    async def tokens(self, user: str = "ada", scope: str = "notes",
                     **metadata: Any) -> tuple[Flow, dict[str, Any]]:
        """The whole flow for a new client: its flow and the token response."""
        browser = await self.signed_in(user)
        flow = self.flow(await self.register(**metadata), scope=scope)
        r = await self.token(flow, await self.code(browser, flow))
        assert r.status_code == 200, r.text
        return flow, dict(r.json())

    async def call(self, token: str | None, tool: str = "whoami",
                   arguments: dict[str, Any] | None = None) -> httpx.Response:
        """``tools/call`` at 2026-07-28 with ``token`` as the bearer."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments or {}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {}}}}
        headers = {"Content-Type": "application/json", "MCP-Protocol-Version": MODERN,
                   "Accept": "application/json, text/event-stream",
                   "Mcp-Method": "tools/call", "Mcp-Name": tool}
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        return await self.http().post(self.mcp, content=json.dumps(body), headers=headers)


def structured(r: httpx.Response) -> Any:
    assert r.status_code == 200, r.text
    return r.json()["result"]["structuredContent"]


@contextlib.asynccontextmanager
async def serving(configure: Callable[[SignIn], None] | None = None,
                  **options: Any) -> AsyncIterator[App]:
    """``examples/host_auth_app.py`` with its sign-in on an ephemeral loopback port;
    ``configure`` adjusts the :class:`SignIn` before the app is built, ``options`` are
    transport options."""
    example = load_example()
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    base = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    signin = example.sign_in(base)
    if configure is not None:
        configure(signin)
    app, transport = example.build("test-cookie-secret", signin, **options)
    http = tornado.httpserver.HTTPServer(app)
    http.add_sockets(sockets)
    running = App(example, base, signin, transport)
    try:
        yield running
    finally:
        for client in running.clients:
            await client.aclose()
        http.stop()
        await transport.close()
        await http.close_all_connections()

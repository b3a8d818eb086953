"""Test your server's tools in a few lines: an MCP client over the real transport, in the
same process.

:class:`Client` serves your :class:`~tornado_mcp.Server` with a real
:class:`~tornado_mcp.Transport` on a free loopback port and speaks Streamable HTTP to it,
in either protocol era: ``"modern"`` (2026-07-28: every request carries its own
``_meta`` envelope and routing headers) or ``"legacy"`` (2025-11-25: an ``initialize``
handshake, then a session).  Everything between your test and your tool is the code that
serves real clients: JSON parsing, header checks, argument validation and conversion,
result shaping and ``outputSchema`` validation.

    async def test_add() -> None:
        async with Client(server) as client:
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result.structured == {"result": 3}

With pytest and pytest-asyncio, the ``mcp_client`` fixture (from
:mod:`tornado_mcp.pytest_plugin`, registered as a pytest plugin when tornado-mcp is
installed) does the ``async with`` for you, given an ``mcp_server`` fixture of yours.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.httpclient import AsyncHTTPClient, HTTPRequest

from .protocol import (
    HEADER_METHOD,
    HEADER_NAME,
    HEADER_PARAM_PREFIX,
    HEADER_PROTOCOL_VERSION,
    HEADER_SESSION_ID,
    INITIALIZE,
    INITIALIZED,
    LEGACY_VERSIONS,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    MODERN_VERSIONS,
    NAME_BEARING,
    PROMPTS_GET,
    RESOURCES_READ,
    TOOLS_CALL,
    TOOLS_LIST,
)
from .server.server import Server

Era = Literal["modern", "legacy"]
TIMEOUT = 10.0


class RPCError(Exception):
    """A JSON-RPC error answer: ``code`` (see :mod:`tornado_mcp.protocol.errors`), ``message``,
    ``data``, and the HTTP ``status`` it came with."""

    def __init__(self, code: int, message: str, data: Any = None, status: int = 200) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data, self.status = code, message, data, status


@dataclass
class ToolResult:
    """A ``tools/call`` result: its content blocks, ``structuredContent`` and ``isError``."""

    raw: dict[str, Any]
    content: list[dict[str, Any]] = field(init=False)
    structured: Any = field(init=False)
    is_error: bool = field(init=False)

    def __post_init__(self) -> None:
        self.content = list(self.raw.get("content") or [])
        self.structured = self.raw.get("structuredContent")
        self.is_error = self.raw.get("isError") is True

    @property
    def text(self) -> str:
        """The text blocks, joined."""
        return "".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


class Client:
    """An in-process MCP client for ``server``; use as ``async with Client(server) as c``.

    ``transport_options`` go to :class:`~tornado_mcp.Transport` (e.g. ``max_sessions``).
    ``notifications`` collects the notifications that arrived on response streams.
    """

    def __init__(self, server: Server, *, era: Era = "modern",
                 capabilities: dict[str, Any] | None = None,
                 client_info: dict[str, Any] | None = None,
                 **transport_options: Any) -> None:
        if era not in ("modern", "legacy"):
            raise ValueError("era must be 'modern' or 'legacy'")
        self.server = server
        self.era: Era = era
        self.capabilities = capabilities or {}
        self.client_info = client_info or {"name": "tornado-mcp-testing", "version": "1.0"}
        self.transport_options = transport_options
        self.notifications: list[dict[str, Any]] = []
        self.session_id: str | None = None
        self.url = ""
        self._ids = itertools.count(1)
        self._http: tornado.httpserver.HTTPServer | None = None
        self._transport: Any = None
        self._fetcher: AsyncHTTPClient | None = None

    @property
    def protocol_version(self) -> str:
        return MODERN_VERSIONS[0] if self.era == "modern" else LEGACY_VERSIONS[0]

    async def __aenter__(self) -> Client:
        from .transport import Transport
        self._transport = Transport(self.server, **self.transport_options)
        app = tornado.web.Application([*self._transport.routes("/mcp")])
        self._http = tornado.httpserver.HTTPServer(app)
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self._http.add_sockets(sockets)
        self.url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/mcp"
        self._fetcher = AsyncHTTPClient(force_instance=True)
        try:
            if self.era == "legacy":
                await self._initialize()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """End the session (legacy), stop the server, close the connections."""
        if self.session_id is not None and self._fetcher is not None:
            await self._post(None, method="DELETE")
            self.session_id = None
        if self._fetcher is not None:
            self._fetcher.close()
            self._fetcher = None
        if self._http is not None:
            self._http.stop()
            await self._transport.close()
            await self._http.close_all_connections()
            self._http = None

    # -- MCP methods ----------------------------------------------------------------------
    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool, following ``nextCursor``."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            result = await self.request(TOOLS_LIST, {"cursor": cursor} if cursor else {})
            tools.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call a tool; a tool error is ``result.is_error``, a protocol error
        :class:`RPCError`."""
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        return ToolResult(await self.request(TOOLS_CALL, params))

    async def read_resource(self, uri: str) -> dict[str, Any]:
        """Read the resource at ``uri``: the ``resources/read`` result (its ``contents``),
        or :class:`RPCError`."""
        return await self.request(RESOURCES_READ, {"uri": uri})

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None
                         ) -> dict[str, Any]:
        """Get the prompt ``name`` with ``arguments``: the ``prompts/get`` result (its
        ``messages``), or :class:`RPCError`."""
        return await self.request(PROMPTS_GET, {"name": name, "arguments": arguments or {}})

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request; return its result or raise :class:`RPCError`."""
        params = dict(params or {})
        headers: dict[str, str] = {}
        if self.era == "modern":
            meta = dict(params.get("_meta") or {})
            meta.setdefault(META_VERSION, self.protocol_version)
            meta.setdefault(META_CAPABILITIES, self.capabilities)
            meta.setdefault(META_CLIENT_INFO, self.client_info)
            params["_meta"] = meta
            headers = self._routing_headers(method, params)
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        status, replies = await self._post(message, headers=headers)
        for reply in replies:
            if reply.get("id") != request_id:
                self.notifications.append(reply)
                continue
            if "error" in reply:
                err = reply["error"]
                raise RPCError(err.get("code", 0), err.get("message", ""), err.get("data"),
                               status)
            return dict(reply["result"])
        raise RPCError(0, f"no response to {method} (HTTP {status})", status=status)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send one notification (a message without an id: it gets no JSON-RPC answer)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._post(message)

    # -- plumbing -------------------------------------------------------------------------
    async def _initialize(self) -> None:
        result = await self.request(INITIALIZE, {
            "protocolVersion": self.protocol_version, "capabilities": self.capabilities,
            "clientInfo": self.client_info})
        assert result.get("protocolVersion") == self.protocol_version
        await self.notify(INITIALIZED)

    def _routing_headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        headers = {HEADER_METHOD: method}
        name_key = NAME_BEARING.get(method)
        if name_key is not None:
            headers[HEADER_NAME] = str(params.get(name_key))
        tool = self.server.get_tool(str(params.get("name"))) if method == TOOLS_CALL else None
        if tool is not None:
            for header, path in tool.header_params.items():
                value: Any = params.get("arguments")
                for key in path:
                    value = value.get(key) if isinstance(value, dict) else None
                if value is not None:
                    headers[f"{HEADER_PARAM_PREFIX}{header}"] = _header_value(value)
        return headers

    async def _post(self, message: dict[str, Any] | None, headers: dict[str, str] | None = None,
                    method: str = "POST") -> tuple[int, list[dict[str, Any]]]:
        assert self._fetcher is not None, "use the client inside 'async with'"
        h = {"Content-Type": "application/json",
             "Accept": "application/json, text/event-stream",
             HEADER_PROTOCOL_VERSION: self.protocol_version}
        if self.session_id is not None:
            h[HEADER_SESSION_ID] = self.session_id
        h.update(headers or {})
        body = json.dumps(message).encode() if message is not None else None
        response = await self._fetcher.fetch(HTTPRequest(
            self.url, method=method, headers=h, body=body, request_timeout=TIMEOUT,
            allow_nonstandard_methods=True), raise_error=False)
        if response.code == 599:
            raise RPCError(0, f"transport failure: {response.error}", status=599)
        session = response.headers.get(HEADER_SESSION_ID)
        if session and self.session_id is None and method == "POST":
            self.session_id = session
        return response.code, _messages(response.headers.get("Content-Type", ""),
                                        response.body or b"")


def _header_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = value if isinstance(value, str) else json.dumps(value)
    if text.isascii() and text.isprintable() and text == text.strip():
        return text
    import base64
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def _messages(content_type: str, body: bytes) -> list[dict[str, Any]]:
    if content_type.startswith("text/event-stream"):
        out = []
        for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = [ln[5:].strip() for ln in block.split(b"\n") if ln.startswith(b"data:")]
            if data:
                out.append(json.loads(b"\n".join(data)))
        return out
    if content_type.startswith("application/json") and body:
        parsed = json.loads(body)
        return parsed if isinstance(parsed, list) else [parsed]
    return []

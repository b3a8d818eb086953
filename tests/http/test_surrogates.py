"""Text Python can parse but UTF-8 cannot carry: a lone UTF-16 surrogate escape
(``"\\ud800"``) anywhere in a request is a parse error (400, -32700), never a 500, in both
eras, on the default install (the standard library's JSON, without orjson) as with orjson.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from conftest import ServerFactory

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
#: The example server with orjson made unimportable: the install without the speed extra.
WITHOUT_ORJSON = ("-c", "import runpy, sys; sys.modules['orjson'] = None; "
                  "sys.argv = ['conformance_server.py', *sys.argv[1:]]; "
                  "runpy.run_path('examples/conformance_server.py', run_name='__main__')")
LONE = "\\ud800"  # as the client writes it: the six characters of a JSON escape

#: Each shape as raw JSON text, with {s} where the lone surrogate goes.
SHAPES = {
    "request id": '{{"jsonrpc":"2.0","id":"{s}","method":"tools/list","params":{{{meta}}}}}',
    "parameter": '{{"jsonrpc":"2.0","id":1,"method":"tools/list",'
                 '"params":{{"cursor":"{s}"{comma}{meta}}}}}',
    "resource uri": '{{"jsonrpc":"2.0","id":1,"method":"resources/read",'
                    '"params":{{"uri":"test://r/{s}"{comma}{meta}}}}}',
    "echoed argument": '{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
                       '{{"name":"echo","arguments":{{"text":"a{s}b"}}{comma}{meta}}}}}',
    "object key": '{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
                  '{{"name":"echo","arguments":{{"{s}":"x"}}{comma}{meta}}}}}',
}


def _meta() -> str:
    return json.dumps({"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}})[1:-1]


def _bodies(modern: bool) -> dict[str, bytes]:
    meta = _meta() if modern else ""
    return {name: shape.format(s=LONE, meta=meta, comma="," if meta else "").encode()
            for name, shape in SHAPES.items()}


def _headers(modern: bool, session: str | None, body: bytes) -> dict[str, str]:
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if modern:
        method = json.loads(body.replace(LONE.encode(), b"x"))["method"]
        h.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
        if method == "tools/call":
            h["Mcp-Name"] = "echo"
        elif method == "resources/read":
            h["Mcp-Name"] = "test://r/x"
    else:
        h["MCP-Protocol-Version"] = LEGACY
        if session is not None:
            h["Mcp-Session-Id"] = session
    return h


@pytest.mark.parametrize("orjson", [False, True], ids=["stdlib-json", "orjson"])
def test_lone_surrogates_are_parse_errors_in_both_eras(server_factory: ServerFactory,
                                                       orjson: bool) -> None:
    if orjson:
        pytest.importorskip("orjson")
    argv = ["examples/conformance_server.py"] if orjson else list(WITHOUT_ORJSON)
    srv = server_factory([*argv, "--no-admin"])
    with httpx.Client(timeout=20) as client:
        init = client.post(srv.url, headers=_headers(False, None, b"{}"), json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
        session = init.headers["Mcp-Session-Id"]
        answers: dict[str, Any] = {}
        for modern in (False, True):
            for name, body in _bodies(modern).items():
                r = client.post(srv.url, content=body,
                                headers=_headers(modern, None if modern else session, body))
                answers[f"{'modern' if modern else 'legacy'} {name}"] = \
                    (r.status_code, r.json()["error"]["code"])
        assert answers == {key: (400, -32700) for key in answers}
        # and the server still answers normally afterwards
        ok = client.post(srv.url, headers=_headers(False, session, b"{}"), json={
            "jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "\U0001f600"}}})
        assert ok.status_code == 200 and "\U0001f600" in ok.text

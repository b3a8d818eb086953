"""JSON-RPC as the HTTP transport answers it: :class:`Reply`, the exception that ends a
request with an HTTP status and an error.  Message kinds, ids and error bodies are
:mod:`tornado_mcp.protocol.jsonrpc`'s, re-exported here for the transport's modules.
"""

from __future__ import annotations

from typing import Any

from ..protocol import Refusal, jsonio
from ..protocol.jsonrpc import Kind, classify, error_body, safe_id, valid_id

__all__ = ["Kind", "Reply", "classify", "error_body", "safe_id", "valid_id"]


class Reply(Exception):
    """Stop handling this request and answer it with ``status`` and a JSON-RPC error.

    ``refusal`` names the bound that refused it, counted in the transport's refusals.
    """

    def __init__(self, status: int, code: int, message: str, request_id: Any = None,
                 data: Any = None, refusal: Refusal | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.request_id, self.data, self.refusal = request_id, data, refusal
        self.headers = headers or {}  # e.g. Retry-After

    def body(self) -> bytes:
        return jsonio.dumps(error_body(self.request_id, self.code, self.message, self.data))

"""JSON-RPC as the HTTP transport answers it: :class:`Reply`, the exception that ends a
request with an HTTP status and an error.  Message kinds, ids, error bodies and ``Reply``
itself are :mod:`tornado_mcp.protocol.jsonrpc`'s, re-exported here for the transport's
modules.
"""

from __future__ import annotations

from ..protocol.jsonrpc import Kind, Reply, classify, error_body, safe_id, valid_id

__all__ = ["Kind", "Reply", "classify", "error_body", "safe_id", "valid_id"]

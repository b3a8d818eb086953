"""Server-to-client requests (legacy era): waiting for the client's answer.

The transports send the request their own way (an SSE stream, stdout); what happens
next is the same everywhere and lives here: the wait is bounded, a timeout tells the
client the request is cancelled, and an error answer becomes an :class:`MCPError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..protocol import CANCELLED, INTERNAL_ERROR, REQUEST_TIMEOUT
from ..protocol.errors import MCPError


def request_message(request_id: str, method: str, params: dict[str, Any] | None
                    ) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def client_result(fut: asyncio.Future[dict[str, Any]], request_id: str, method: str,
                        wait: float, notify: Callable[[dict[str, Any]], Any],
                        forget: Callable[[], Any]) -> dict[str, Any]:
    """The result the client answers request ``request_id`` (``method``) with.

    Waits at most ``wait`` seconds; on a timeout ``notify`` sends the client
    ``notifications/cancelled`` and -32001 is raised.  ``forget`` drops the pending
    entry whatever happens.  A JSON-RPC error answer is raised as -32603 naming it.
    """
    try:
        reply = await asyncio.wait_for(fut, wait)
    except TimeoutError:
        notify({"jsonrpc": "2.0", "method": CANCELLED,
                "params": {"requestId": request_id,
                           "reason": f"Timed out after {wait:g} seconds"}})
        raise MCPError(REQUEST_TIMEOUT,
                       f"Timed out waiting for the client's {method} response") from None
    finally:
        forget()
    if "error" in reply:
        err = reply["error"] if isinstance(reply["error"], dict) else {}
        raise MCPError(INTERNAL_ERROR, f"Client returned an error for {method} request "
                                       f"(code: {err.get('code')}): {err.get('message')}")
    result = reply.get("result")
    return result if isinstance(result, dict) else {}

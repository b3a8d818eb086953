"""The former home of :mod:`tornado_mcp.sync.handlers` (plain ``def`` handlers in the
thread pool), kept so that ``from tornado_mcp.server.sync_handlers import wait_on_loop``
still works: it names the same objects.  New code imports from :mod:`tornado_mcp.sync`."""

from ..sync.handlers import (
    CURRENT,
    LOOP_CALL_TIMEOUT,
    SyncRunner,
    call_handler,
    call_on_loop,
    wait_on_loop,
    worker_loop,
)

__all__ = ["CURRENT", "LOOP_CALL_TIMEOUT", "SyncRunner", "call_handler", "call_on_loop",
           "wait_on_loop", "worker_loop"]

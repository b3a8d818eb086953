"""Plain ``def`` handlers run off the IOLoop, in a bounded thread pool.

A tool, resource or prompt written as a plain function may block (a database driver, a
file, ``time.sleep``).  On the IOLoop that would stall every request and every route of
the host application; so the transport runs plain functions in a pool of
``sync_handler_threads`` threads (``None``: on the IOLoop, as ``async def`` handlers
always are)::

    @server.tool()
    def lookup(customer_id: int, ctx: Context) -> dict:
        ctx.report_progress(0, 1)              # safe: hops to the IOLoop
        return db.fetch_customer(customer_id)  # blocks a pool thread, not the loop

From such a thread the :class:`~tornado_mcp.Context` is safe to use: progress, logging
and resource notifications are carried over to the IOLoop and their results returned.
Its ``async`` methods (``sample``, ``elicit``, ...) return coroutines; run one from the
thread with :func:`wait_on_loop`.  A cancelled request stops waiting for its thread, but
Python cannot stop the thread itself: the function runs to its end, its result dropped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from .pool import SyncPool

T = TypeVar("T")

#: Seconds a pool thread waits for the IOLoop to run what it handed over.
LOOP_CALL_TIMEOUT = 30.0
#: Functions whose kind (plain or ``async``) is remembered at most.
_KIND_CACHE_SIZE = 4096


class SyncRunner:
    """A transport's pool for plain handlers: ``threads`` threads, made as calls need them
    (see :mod:`~tornado_mcp.sync.pool` for how a call goes there and back)."""

    def __init__(self, threads: int | None) -> None:
        self.threads = threads
        self._pool: SyncPool | None = None

    def submit(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> asyncio.Future[Any]:
        """Run ``fn(**kwargs)`` in the pool; a future of its result, on the running loop."""
        pool = self._pool
        if pool is None:
            assert self.threads is not None
            pool = self._pool = SyncPool(self.threads, "tornado-mcp-sync", _in_worker)
        return pool.submit(fn, kwargs)

    def shutdown(self) -> None:
        """Stop taking work; threads end once their running functions return."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


#: The runner of the transport serving the current request (set by the transport).
CURRENT: contextvars.ContextVar[SyncRunner | None] = contextvars.ContextVar(
    "tornado_mcp_sync_runner", default=None)

_is_plain: dict[Callable[..., Any], bool] = {}
_worker = threading.local()


def call_handler(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call a handler: ``async`` ones (and any, outside a transport) directly, returning
    their coroutine; plain ones in the current transport's pool, returning an awaitable."""
    plain = _is_plain.get(fn)
    if plain is None:
        if len(_is_plain) >= _KIND_CACHE_SIZE:
            _is_plain.clear()
        call = type(fn).__call__ if not inspect.isroutine(fn) else None
        plain = _is_plain[fn] = not (inspect.iscoroutinefunction(fn)
                                     or inspect.iscoroutinefunction(call))
    if plain:
        runner = CURRENT.get()
        if runner is not None and runner.threads is not None:
            return runner.submit(fn, kwargs)
    return fn(**kwargs)


def _in_worker(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any],
               kwargs: dict[str, Any]) -> Any:
    _worker.loop = loop
    try:
        return fn(**kwargs)
    finally:
        _worker.loop = None


def worker_loop() -> asyncio.AbstractEventLoop | None:
    """The IOLoop the current pool thread works for; ``None`` elsewhere (on the loop)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_worker, "loop", None)
    return loop


def call_on_loop(fn: Callable[..., T], *args: Any) -> T:
    """From a pool thread: run ``fn(*args)`` on the IOLoop and return its result."""
    loop = worker_loop()
    if loop is None:
        return fn(*args)
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(fn(*args))
        except BaseException as exc:
            done.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return done.result(LOOP_CALL_TIMEOUT)


def wait_on_loop(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """From a plain handler's thread: run ``coro`` (e.g. ``ctx.elicit(...)``) on the
    IOLoop and wait for its result."""
    loop = worker_loop()
    if loop is None:
        coro.close()
        raise RuntimeError("wait_on_loop is for plain handlers running in the pool; "
                           "an async handler awaits instead")
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

"""The bounded pool plain ``def`` handlers run in, and the way their results come back.

``concurrent.futures.ThreadPoolExecutor`` with ``loop.run_in_executor`` costs about
190,000 instructions per call, most of it Python-level locking: a ``threading.Condition``
per ``concurrent.futures.Future`` (taken to start it, to finish it and to notify its
waiters), the idle-thread ``Semaphore`` released after every call, and a second, asyncio
future chained to the first.  A handler call needs none of it: the IOLoop makes one
asyncio future, puts the call on a C-level ``queue.SimpleQueue`` and awaits the future;
a worker thread takes the call, runs it in the caller's ``contextvars`` context and
appends the outcome to its loop's completion queue, waking the loop only when no wake-up
is pending already: completions that finish close together are set in one pass on the
loop.

The guarantees are the executor's: the loop never blocks (it only puts and takes from
queues), at most ``threads`` threads exist (started as calls need them, then kept warm,
waiting on the queue), a call whose future was cancelled before a thread took it is not
run, and one cancelled while it runs runs to its end with its outcome dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

#: What a worker runs: ``run(loop, fn, kwargs)`` (it marks the thread as the loop's).
Runner = Callable[[asyncio.AbstractEventLoop, Callable[..., Any], dict[str, Any]], Any]


class _Cancel(Exception):
    """The outcome of a call the pool cancelled before it started (at shutdown)."""


_CANCEL = _Cancel()


class _Completions:
    """Outcomes of calls made from one loop, waiting to be set on their futures there.

    A worker wakes the loop by writing one byte to a pipe the loop watches
    (``add_reader``), which costs the loop no callback object and the worker one system
    call; where the loop cannot watch a pipe, and after :meth:`detach`, it wakes it with
    ``call_soon_threadsafe``.
    """

    __slots__ = (
        "__weakref__",
        "_rfd",
        "_wfd",
        "items",
        "lock",
        "loop",
        "piped",
        "pool",
        "scheduled",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: SyncPool) -> None:
        self.loop = loop
        self.pool = pool
        self.items: deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = deque()
        self.lock = threading.Lock()
        self.scheduled = False
        self.piped = False
        self._rfd, self._wfd = os.pipe()
        os.set_blocking(self._rfd, False)
        os.set_blocking(self._wfd, False)
        # Closed once nothing can write to them any more (no worker holds this object).
        weakref.finalize(self, _close_fds, self._rfd, self._wfd)
        try:
            loop.add_reader(self._rfd, self._readable)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # e.g. a proactor loop: call_soon_threadsafe it is
        else:
            self.piped = True

    def add(self, fut: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
        """From a worker thread: hand an outcome to the loop (one wake-up per batch)."""
        self.items.append((fut, result, exc))
        with self.lock:
            if self.scheduled:
                return  # the pending drain takes this one too
            self.scheduled = True
            if self.piped:
                with contextlib.suppress(BlockingIOError):  # full: a wake-up is pending
                    os.write(self._wfd, b"\0")
                return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            self.loop.call_soon_threadsafe(self.drain)

    def _readable(self) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            os.read(self._rfd, 4096)
        self.drain()

    def detach(self) -> None:
        """On the loop: stop watching the pipe (later outcomes come back through
        ``call_soon_threadsafe``) and set what already came back."""
        with self.lock:
            piped, self.piped = self.piped, False
        if piped:
            with contextlib.suppress(Exception):
                self.loop.remove_reader(self._rfd)
        self.drain()

    def drain(self) -> None:
        """On the loop: set every outcome that came back."""
        with self.lock:
            self.scheduled = False
        items = self.items
        pool = self.pool
        while items:
            fut, result, exc = items.popleft()
            pool.pending -= 1
            if fut.cancelled():
                continue
            if exc is None:
                fut.set_result(result)
            elif exc is _CANCEL:
                fut.cancel()
            else:
                fut.set_exception(exc)


class SyncPool:
    """At most ``threads`` worker threads named ``{prefix}_{n}``, taking calls from one
    queue and handing their outcomes back to the loop each call came from."""

    def __init__(self, threads: int, prefix: str, run: Runner) -> None:
        self.threads = threads
        self.prefix = prefix
        self._run = run
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._spawn_lock = threading.Lock()
        self._completions: dict[asyncio.AbstractEventLoop, _Completions] = {}
        #: Calls submitted whose outcome has not been set yet (counted on the loop).
        self.pending = 0
        self.closed = False

    def submit(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> asyncio.Future[Any]:
        """On a running loop: run ``fn(**kwargs)`` in a worker; a future of its outcome."""
        if self.closed:
            raise RuntimeError("cannot run a handler in a pool that was shut down")
        loop = asyncio.get_running_loop()
        completions = self._completions.get(loop)
        if completions is None:
            completions = self._completions.setdefault(loop, _Completions(loop, self))
        fut = loop.create_future()
        self.pending += 1
        if self.pending > len(self._workers) < self.threads:
            self._spawn()
        self._queue.put((fn, kwargs, contextvars.copy_context(), fut, completions))
        return fut

    def _spawn(self) -> None:
        with self._spawn_lock:
            if len(self._workers) >= self.threads:
                return
            worker = threading.Thread(target=self._work, daemon=True,
                                      name=f"{self.prefix}_{len(self._workers)}")
            self._workers.append(worker)
            worker.start()

    def _work(self) -> None:
        get = self._queue.get
        run = self._run
        while True:
            item = get()
            if item is None:  # shut down
                return
            fn, kwargs, context, fut, completions = item
            if fut.cancelled():  # given up before it started: not run
                completions.add(fut, None, None)
                continue
            try:
                result = context.run(run, completions.loop, fn, kwargs)
            except BaseException as exc:
                completions.add(fut, None, exc)
            else:
                completions.add(fut, result, None)
            del item, fn, kwargs, context, fut  # hold nothing while waiting for the next

    def shutdown(self) -> None:
        """Stop taking calls: those not started yet are cancelled; each thread ends once
        the call it runs returns.  Call on the loop."""
        self.closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                continue
            item[4].add(item[3], None, _CANCEL)  # cancelled (and counted off) on its loop
        for _ in self._workers:
            self._queue.put(None)
        for completions in list(self._completions.values()):
            if completions.loop is _running_loop():
                completions.detach()
            else:
                with contextlib.suppress(RuntimeError):
                    completions.loop.call_soon_threadsafe(completions.detach)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _close_fds(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)

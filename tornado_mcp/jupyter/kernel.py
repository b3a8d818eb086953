"""``run_code``: running code in a Jupyter kernel, bounded in time and in output.

Off unless the operator turns it on (``MCPExtension.allow_code_execution``): when off the
tool is not even listed.  When on, it runs ``code`` in a kernel of Jupyter's own kernel
manager -- the one named by ``kernel_id`` (a notebook's kernel, say), or one the extension
starts for itself on first use and reuses -- and it is refused to any user Jupyter's
authorizer does not let ``execute`` on ``kernels``.

Two bounds hold whatever the code does:

* **time** -- after ``code_timeout`` seconds the kernel is interrupted (as the notebook's
  stop button does) and the answer says ``"status": "timeout"``;
* **output** -- stdout, stderr, results and tracebacks are kept up to ``max_output_bytes``
  UTF-8 bytes; past it the rest is dropped and ``"truncated": true`` says so.
"""

from __future__ import annotations

import asyncio
import queue
import re
from typing import Any

from ..protocol.errors import ToolError
from ..server.context import Context
from .contents import require_scope

#: The scope Jupyter's authorizer grants for running code (see :mod:`.auth`).
EXECUTE_SCOPE = "kernels:execute"
#: Seconds to wait for a kernel to answer ``kernel_info`` before giving up on it.
KERNEL_READY_TIMEOUT = 60.0
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class BoundedText:
    """Text collected up to ``limit`` UTF-8 bytes; what does not fit is counted, not kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False

    def add(self, text: str) -> None:
        data = text.encode("utf-8")
        room = self.limit - self.size
        if len(data) > room:
            self.truncated = True
            data = data[:max(room, 0)]
            text = data.decode("utf-8", errors="ignore")
        self.parts.append(text)
        self.size += len(data)

    def text(self) -> str:
        return "".join(self.parts)


class CodeRunner:
    """Runs code for the ``run_code`` tool in kernels of Jupyter's kernel manager."""

    def __init__(self, kernel_manager: Any, timeout: float, max_output_bytes: int,
                 kernel_name: str = "") -> None:
        self.km = kernel_manager
        self.timeout = timeout
        self.max_output_bytes = max_output_bytes
        self.kernel_name = kernel_name
        self.own_kernel: str | None = None
        self._starting = asyncio.Lock()

    async def _kernel(self, kernel_id: str | None) -> str:
        if kernel_id is not None:
            if kernel_id not in self.km:
                raise ToolError(f"No running kernel has the id {kernel_id!r}.")
            return kernel_id
        async with self._starting:
            if self.own_kernel is None or self.own_kernel not in self.km:
                kwargs = {"kernel_name": self.kernel_name} if self.kernel_name else {}
                self.own_kernel = str(await self.km.start_kernel(**kwargs))
        return self.own_kernel

    async def shutdown(self) -> None:
        """Shut down the kernel this runner started, if it is still running."""
        if self.own_kernel is not None and self.own_kernel in self.km:
            await self.km.shutdown_kernel(self.own_kernel)
        self.own_kernel = None

    async def run_code(self, ctx: Context, code: str,
                       kernel_id: str | None = None) -> dict[str, Any]:
        """Run Python code in a Jupyter kernel and return its output (bounded in time and
        size). Without kernel_id, a kernel kept for this tool is used; state persists
        between calls."""
        require_scope(ctx, EXECUTE_SCOPE)
        kid = await self._kernel(kernel_id)
        client = self.km.get_kernel(kid).client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=KERNEL_READY_TIMEOUT)
            out = BoundedText(self.max_output_bytes)
            msg_id = client.execute(code, store_history=False, allow_stdin=False)
            status = await self._collect(client, msg_id, out)
            if status == "timeout":
                await self.km.interrupt_kernel(kid)
        except RuntimeError as exc:  # the kernel died, or never became ready
            raise ToolError(f"The kernel did not answer: {exc}") from None
        finally:
            client.stop_channels()
        output = out.text()
        note = {"ok": "", "error": "", "timeout":
                f"\n[interrupted after {self.timeout:g} seconds]"}[status]
        if out.truncated:
            note += f"\n[output cut at {self.max_output_bytes} bytes]"
        return {"content": [{"type": "text", "text": output + note}],
                "structuredContent": {"status": status, "output": output,
                                      "truncated": out.truncated, "kernel_id": kid},
                "isError": status != "ok"}

    async def _collect(self, client: Any, msg_id: str, out: BoundedText) -> str:
        """Read the kernel's IOPub messages for ``msg_id`` until it is idle again."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        status = "ok"
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return "timeout"
            try:
                msg = await client.get_iopub_msg(timeout=remaining)
            except queue.Empty:
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content.get("execution_state") == "idle":
                return status
            if kind == "stream":
                out.add(content.get("text", ""))
            elif kind in ("execute_result", "display_data"):
                out.add(str(content.get("data", {}).get("text/plain", "")) + "\n")
            elif kind == "error":
                status = "error"
                out.add(_ANSI.sub("", "\n".join(content.get("traceback", []))) + "\n")

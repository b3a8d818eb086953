"""A real ``jupyter server`` subprocess with the extension, isolated from the machine.

``JupyterProc(tmp, args)`` runs ``python -m jupyter_server --port=0`` with a temporary root
directory, a known token, ``--no-browser``, and ``JUPYTER_CONFIG_DIR``, ``JUPYTER_DATA_DIR``
and ``JUPYTER_RUNTIME_DIR`` under ``tmp``, so no configuration, kernel or cookie secret of
the machine leaks in or out.  The kernel picks the port; the server writes it to its
runtime file ``jpserver-<pid>.json`` once it listens, and :meth:`wait` reads it from there
(bounded wait).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "jupyter-test-token-0123456789"
# A bound against a hang: a Jupyter server starts in a few seconds, but has taken more
# than 30 on a loaded two-core machine (parallel test workers, other work beside them).
START_TIMEOUT_S = 90.0
STOP_GRACE_S = 10.0
POLL_INTERVAL_S = 0.05

DEMO_NOTEBOOK: dict[str, Any] = {
    "cells": [
        {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": "hi\n"}],
         "source": "print('hi')"},
        {"cell_type": "markdown", "id": "c2", "metadata": {}, "source": "# Notes"},
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


class JupyterStartError(RuntimeError):
    """The server exited, or did not write its runtime file before the deadline."""


class JupyterProc:
    """One ``jupyter server`` with ``tornado_mcp.jupyter`` enabled."""

    def __init__(self, tmp: Path, args: Sequence[str] = (), *, token: str = TOKEN,
                 extension: bool = True, env: Mapping[str, str] | None = None,
                 config: str | None = None) -> None:
        self.tmp = tmp
        self.token = token
        self.root = tmp / "root"
        self.runtime = tmp / "runtime"
        for d in (self.root, self.runtime, tmp / "config", tmp / "data"):
            d.mkdir(parents=True, exist_ok=True)
        (self.root / "demo.ipynb").write_text(json.dumps(DEMO_NOTEBOOK), encoding="utf-8")
        (self.root / "sub").mkdir(exist_ok=True)
        (self.root / "sub" / "notes.txt").write_text("first line\n", encoding="utf-8")
        if config is not None:
            (tmp / "config" / "jupyter_server_config.py").write_text(config, encoding="utf-8")
        extensions = "{'tornado_mcp.jupyter': True}" if extension else "{}"
        self.argv = [sys.executable, "-m", "jupyter_server", "--port=0", "--no-browser",
                     "--allow-root", "--ServerApp.ip=127.0.0.1",
                     f"--ServerApp.root_dir={self.root}", f"--IdentityProvider.token={token}",
                     f"--ServerApp.jpserver_extensions={extensions}", *args]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
        full_env.update({
            "JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_DATA_DIR": str(tmp / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.runtime), "IPYTHONDIR": str(tmp / "ipython"),
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *(env or {}).get(
                "PYTHONPATH", "").split(os.pathsep)]).rstrip(os.pathsep),
        })
        full_env.update({k: v for k, v in (env or {}).items() if k != "PYTHONPATH"})
        self.log_path = tmp / "server.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(self.argv, cwd=tmp, env=full_env,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def auth(self, scheme: str = "Bearer") -> dict[str, str]:
        return {"Authorization": f"{scheme} {self.token}"}

    def wait(self, timeout: float = START_TIMEOUT_S) -> JupyterProc:
        """Wait (bounded) until the server listens; take its port from its runtime file."""
        info = self.runtime / f"jpserver-{self.proc.pid}.json"
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise JupyterStartError(f"jupyter server exited\n{self.log[-4000:]}")
            if info.exists():
                with contextlib.suppress(ValueError, OSError):  # being written, not listening
                    self.port = int(json.loads(info.read_text(encoding="utf-8"))["port"])
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                        return self
            if time.monotonic() >= deadline:
                raise JupyterStartError(f"no runtime file in {timeout:.0f} s\n{self.log[-4000:]}")
            time.sleep(POLL_INTERVAL_S)

    def stop(self) -> None:
        """SIGTERM (Jupyter shuts its kernels down), then SIGKILL after a grace period."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_GRACE_S)


# -- talking to it ----------------------------------------------------------------------
MODERN = "2026-07-28"
STEP = 15.0


def modern_call(method: str, params: dict[str, Any], name: str | None = None
                ) -> tuple[dict[str, str], str]:
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    return headers, json.dumps(body)


def post(jp: JupyterProc, auth: dict[str, str], method: str = "server/discover",
         params: dict[str, Any] | None = None, name: str | None = None) -> httpx.Response:
    headers, body = modern_call(method, params or {}, name)
    return httpx.post(jp.mcp_url, headers={**headers, **auth}, content=body, timeout=STEP)


def result(r: httpx.Response) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    text = r.text
    if r.headers["Content-Type"].startswith("text/event-stream"):
        text = [ln[5:] for ln in text.splitlines() if ln.startswith("data:")][-1]
    message: dict[str, Any] = json.loads(text)
    return message["result"]  # type: ignore[no-any-return]


def legacy_session(jp: JupyterProc) -> str:
    """Open a legacy (2025-11-25) session with the token; its ``Mcp-Session-Id``."""
    r = httpx.post(jp.mcp_url, headers={**jp.auth(), **_LEGACY_HEADERS}, timeout=STEP,
                   content=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                       "params": {"protocolVersion": LEGACY,
                                                  "capabilities": {},
                                                  "clientInfo": {"name": "t", "version": "1"}}}))
    assert r.status_code == 200, r.text
    return r.headers["Mcp-Session-Id"]


def legacy_call(jp: JupyterProc, sid: str, method: str, params: dict[str, Any]
                ) -> dict[str, Any]:
    """One request on a legacy session: its JSON-RPC response (result or error)."""
    r = httpx.post(jp.mcp_url, timeout=STEP, headers={
        **jp.auth(), **_LEGACY_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY},
        content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    text = r.text
    if r.headers["Content-Type"].startswith("text/event-stream"):
        text = [ln[5:] for ln in text.splitlines() if ln.startswith("data:")][-1]
    return json.loads(text)  # type: ignore[no-any-return]


LEGACY = "2025-11-25"
_LEGACY_HEADERS = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}

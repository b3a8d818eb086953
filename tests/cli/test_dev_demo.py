"""``./dev demo`` on a fresh clone installs the package with its core dependencies only
(no test extra: no pytest, Playwright, Jupyter or mypy), says what it is doing, and serves
the demo; a second run finds its stamp current and installs nothing.

The clone is a copy of the files git tracks (or would track) in this checkout (without
git: the tree minus what .gitignore names), so it has no ``.venv``; its dependencies come
from the configured index (or pip's cache).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from conftest import REPO_ROOT, ServerProc

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SET_UP_AND_SERVE_S = 300.0  # about 20 s with a warm pip cache; a cold one downloads
STEP = 10.0


UNTRACKED = shutil.ignore_patterns(".git", ".venv", ".peers", "node_modules", "__pycache__",
                                   "*.egg-info", "build", "dist", "site", "results",
                                   ".*_cache")


def fresh_clone(dest: Path) -> Path:
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], cwd=REPO_ROOT, capture_output=True,
                                timeout=30, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):  # no git, or not a checkout it trusts
        shutil.copytree(REPO_ROOT, dest, ignore=UNTRACKED)
        return dest
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if source.is_file():  # a file deleted but not yet committed is not in a clone
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def dev_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "PYTHON": sys.executable, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def test_dev_demo_installs_only_the_core_and_serves(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path / "clone")
    proc = ServerProc([str(clone / "dev"), "demo", "--port", "0"], dev_env(), cwd=clone)
    try:
        proc.wait_until_listening(timeout=SET_UP_AND_SERVE_S)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "dev", "version": "1"}}})
        request = urllib.request.Request(proc.url, body.encode(), method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with urllib.request.urlopen(request, timeout=STEP) as response:
            assert json.loads(response.read())["result"]["serverInfo"]["name"] == \
                "tornado-mcp-demo"
    finally:
        assert proc.stop() == 0, proc.diagnostics()
    said = re.sub(r"^==> \[ *\d+s\] ", "==> ", proc.stderr, flags=re.M)  # the seconds
    assert "==> creating .venv" in said
    assert "==> installing tornado-mcp and its core dependencies into .venv" in said
    assert "==> python -m tornado_mcp demo --port 0" in said
    python = str(clone / ".venv" / "bin" / "python")
    where = subprocess.run([python, "-c", "import tornado_mcp; print(tornado_mcp.__file__)"],
                           cwd=tmp_path, env=dev_env(), capture_output=True, text=True,
                           timeout=30, check=True)
    assert where.stdout.startswith(str(clone))  # the clone, installed editable
    for test_only in ("pytest", "playwright", "jupyter_server", "mypy"):
        absent = subprocess.run([python, "-c", f"import {test_only}"], env=dev_env(),
                                capture_output=True, timeout=30, check=False)
        assert absent.returncode != 0, f"{test_only} was installed for the demo"
    again = subprocess.run([str(clone / "dev"), "demo", "--help"], cwd=clone, env=dev_env(),
                           capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("usage: python -m tornado_mcp demo")
    assert "installing" not in again.stderr and "creating" not in again.stderr

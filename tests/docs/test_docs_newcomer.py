"""What a newcomer copies from the docs works on a fresh machine with what the page says to
install: the install commands name what can be installed (the package is not on the
package index), docs/auth.md's login recipe for the official SDK needs nothing the SDK
does not bring (mcp 2.3.0 is built on ``httpx2``, not ``httpx``), and docs/deploy.md's
Kubernetes command serves clients by the name they use.

The rest of the newcomer's path runs in tests/docs/test_docs_run.py (every page's program, the
README app with its dashboard snippet pasted in, getting-started's pytest files in a
directory of their own, ``crunch`` once per call in both eras) and tests/docs/test_docs_site.py
(the site)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import sys
import urllib.error
import urllib.request
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from conftest import REPO_ROOT, ServerProc
from mcp_http import serving
from test_docs_run import DOCS, blocks, python_blocks

pytestmark = pytest.mark.timeout(120)

RUN_TIMEOUT = 60.0
#: ``pip install tornado-mcp...`` (any extra, any quoting): the package index has no
#: tornado-mcp, so such a command fails on a fresh machine.
FROM_THE_INDEX = re.compile(r"pip install\s+['\"]?tornado[-_]mcp\b", re.IGNORECASE)
#: Where an install hint can reach a reader: the docs, the docstrings and messages of
#: both packages, the examples.
SOURCES = [*DOCS, *sorted((REPO_ROOT / "tornado_mcp").rglob("*.py")),
           *sorted((REPO_ROOT / "admin_ui").rglob("*.py")),
           *sorted((REPO_ROOT / "examples").rglob("*.py"))]


def test_no_install_command_asks_the_package_index_for_tornado_mcp() -> None:
    found = [f"{path.relative_to(REPO_ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
             for path in SOURCES
             for text in [path.read_text(encoding="utf-8")]
             for m in FROM_THE_INDEX.finditer(text)]
    assert found == []


def test_the_extras_the_docs_name_exist() -> None:
    """``pip install '.[NAME]'`` in the docs names an extra pyproject.toml defines."""
    import tomllib

    extras = set(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                 ["project"]["optional-dependencies"])
    named = {m.group(1) for path in SOURCES
             for m in re.finditer(r"pip install\s+['\"]?\.\[([a-z0-9_-]+)\]",
                                  path.read_text(encoding="utf-8"))}
    assert named and named <= extras, named - extras


def host_auth_app() -> AbstractAsyncContextManager[str]:
    """examples/host_auth_app.py served on a loopback port: its origin."""
    spec = importlib.util.spec_from_file_location(
        "host_auth_app", REPO_ROOT / "examples" / "host_auth_app.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return serving(example.make_app("docs-cookie-secret"))


# The recipe runs where ``import httpx`` fails, as it does where only the SDK is installed.
WITHOUT_HTTPX = """\
import asyncio, json, sys
sys.modules["httpx"] = None  # importing it now raises ImportError
namespace = {}
exec(compile(open(sys.argv[1], encoding="utf-8").read(), "docs/auth.md", "exec"), namespace)
print(json.dumps(asyncio.run(namespace["whoami_as_ada"](sys.argv[2]))))
"""


async def test_the_auth_cookie_recipe_needs_only_what_the_sdk_installs(
        tmp_path: Path) -> None:
    recipe = next(b for b in python_blocks(REPO_ROOT / "docs" / "auth.md")
                  if "streamable_http_client" in b.code)
    assert recipe.info == "python"  # run with the page's program too, not a fragment
    script = tmp_path / "recipe.py"
    script.write_text(recipe.code, encoding="utf-8")
    async with host_auth_app() as app:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WITHOUT_HTTPX, str(script), app,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT)
    assert proc.returncode == 0, err.decode()[-4000:]
    assert json.loads(out) == {"subject": "ada", "scopes": ["notes"], "method": "cookie",
                               "authenticated": True}


def test_the_kubernetes_example_serves_the_name_clients_use(tmp_path: Path) -> None:
    """docs/deploy.md's container command, as written but on a loopback port: the probes
    answer, and so does MCP for a client reaching the pod by the name the page lists
    (without ``--allowed-hosts`` DNS-rebinding protection refuses it with 403)."""
    import yaml

    block = next(b for b in blocks(REPO_ROOT / "docs" / "deploy.md") if b.info == "yaml")
    args = yaml.safe_load(block.code)["containers"][0]["args"]
    assert args[:3] == ["python", "-m", "tornado_mcp"]
    argv = [sys.executable, *args[1:]]
    argv[argv.index("--port") + 1] = "0"
    argv[argv.index("--host") + 1] = "127.0.0.1"  # the test binds loopback, not every address
    name = argv[argv.index("--allowed-hosts") + 1] if "--allowed-hosts" in argv else None
    proc = ServerProc(argv, {**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        proc.wait_until_listening()
        with urllib.request.urlopen(proc.base_url + "/healthz", timeout=10) as probe:
            assert probe.status == 200
        request = urllib.request.Request(proc.url, json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "k8s", "version": "1"}}}).encode(),
            method="POST", headers={"Content-Type": "application/json",
                                    "Accept": "application/json, text/event-stream",
                                    "Host": name or "mcp.example.com"})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status == 200
    finally:
        proc.stop()

"""The package builds as a wheel and an sdist that carry the dashboard's templates and
static files, pass ``twine check``, and install into a fresh virtual environment where
the demo serves MCP and the dashboard.

The build runs on a copy of the source tree (nothing is written into the checkout);
the fresh environment gets the package's dependencies from the configured index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

import pytest
from conftest import REPO_ROOT, ServerProc

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

STEP = 10.0
IGNORED = shutil.ignore_patterns(".git", ".venv", ".peers", "node_modules", "__pycache__",
                                 "*.egg-info", "build", "dist", ".*_cache")
DASHBOARD_FILES = {"admin_ui/templates/base.html", "admin_ui/templates/dashboard.html",
                   "admin_ui/templates/login.html", "admin_ui/templates/error.html",
                   "admin_ui/static/admin.css", "admin_ui/static/admin.js",
                   "admin_ui/static/favicon.svg", "admin_ui/py.typed", "tornado_mcp/py.typed"}


def clean_env() -> dict[str, str]:
    """The environment without anything that would import the checkout instead."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run(argv: list[str], cwd: Path, timeout: float = 300.0) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False, env=clean_env())
    assert done.returncode == 0, f"{argv}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("package")
    source = root / "source"
    shutil.copytree(REPO_ROOT, source, ignore=IGNORED)
    out = root / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(out), str(source)], root)
    return out


def test_wheel_and_sdist_carry_the_dashboard_files(dist: Path) -> None:
    (wheel,) = dist.glob("tornado_mcp-*.whl")
    (sdist,) = dist.glob("tornado_mcp-*.tar.gz")
    with zipfile.ZipFile(wheel) as zf:
        assert set(zf.namelist()) >= DASHBOARD_FILES
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert names >= DASHBOARD_FILES
    assert {"README.md", "pyproject.toml"} <= names


def test_twine_check_passes(dist: Path) -> None:
    out = run([sys.executable, "-m", "twine", "check", "--strict",
               *map(str, sorted(dist.iterdir()))], dist)
    assert out.count("PASSED") == 2


def test_the_wheel_installs_into_a_fresh_venv_and_the_demo_runs(dist: Path,
                                                                 tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    (wheel,) = dist.glob("tornado_mcp-*.whl")
    run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], tmp_path)
    # Run from outside the checkout, so nothing but the installed package can be imported.
    where = run([str(python), "-c", "import tornado_mcp, admin_ui; "
                                    "print(tornado_mcp.__file__, admin_ui.__file__)"], tmp_path)
    assert str(venv) in where and str(REPO_ROOT) not in where
    proc = ServerProc([str(python), "-m", "tornado_mcp", "demo", "--port", "0"], clean_env(),
                      cwd=tmp_path)
    try:
        proc.wait_until_listening(timeout=30)
        port = proc.port
        base = f"http://127.0.0.1:{port}"
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "pkg", "version": "1"}}}).encode()
        request = urllib.request.Request(base + "/mcp", body, method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with urllib.request.urlopen(request, timeout=STEP) as response:
            answer = json.loads(response.read())
        assert answer["result"]["serverInfo"]["name"] == "tornado-mcp-demo"
        for path in ("/admin/login", "/admin/static/admin.css"):  # templates, static files
            with urllib.request.urlopen(base + path, timeout=STEP) as page:
                assert page.status == 200
    finally:
        returncode = proc.stop()
    assert returncode == 0
    assert "MCP endpoint: http://127.0.0.1:" in proc.stdout

"""The package builds as a wheel and an sdist that carry the dashboard's templates and
static files and the MIT licence, pass ``twine check``, and install into a fresh virtual
environment where the demo serves MCP and the dashboard.

The wheel is built by exactly the command README.md gives, run in a plain virtual
environment (nothing but pip), so that instruction cannot rot. Builds run on copies of
the source tree (nothing is written into the checkout); the fresh environment gets the
package's dependencies (and the build backend) from the configured index.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

import pytest
from conftest import REPO_ROOT, ServerProc

# One worker for the module: its tests share the venv, the wheel and the sdist it builds.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("packaging")]

STEP = 10.0
IGNORED = shutil.ignore_patterns(".git", ".venv", ".venv-*", ".peers", "node_modules",
                                 "__pycache__", "*.egg-info", "build", "dist", "site",
                                 ".*_cache")
DASHBOARD_FILES = {"admin_ui/templates/base.html", "admin_ui/templates/dashboard.html",
                   "admin_ui/templates/login.html", "admin_ui/templates/error.html",
                   "admin_ui/static/admin.css", "admin_ui/static/admin.js",
                   "admin_ui/static/favicon.svg", "admin_ui/py.typed", "tornado_mcp/py.typed",
                   "admin_ui/templates/signin.html", "admin_ui/static/signin.js",
                   "tornado_mcp/authserver/templates/base.html",
                   "tornado_mcp/authserver/templates/consent.html",
                   "tornado_mcp/authserver/templates/error.html",
                   "tornado_mcp/authserver/static/signin.css"}
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
WHEEL_COMMAND = re.search(r"`(pip wheel [^`]+)`", README)
WHEEL_FILE = re.search(r"`pip install (dist/[^`]+\.whl)`", README)
COPYRIGHT = "Copyright (c) 2026 the tornado-mcp authors"


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
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("package")


def source_copy(root: Path, name: str) -> Path:
    source = root / name
    shutil.copytree(REPO_ROOT, source, ignore=IGNORED)
    return source


@pytest.fixture(scope="module")
def venv(root: Path) -> Path:
    """A plain virtual environment: pip, and nothing else (no ``build``)."""
    venv = root / "venv"
    run([sys.executable, "-m", "venv", str(venv)], root)
    return venv


@pytest.fixture(scope="module")
def wheel(root: Path, venv: Path) -> Path:
    """The wheel built by the README's own command, run in a clone with the plain venv's
    ``bin`` first on ``PATH`` (as an activated venv has it)."""
    assert WHEEL_COMMAND and WHEEL_FILE, "README.md gives the wheel command and its output"
    source = source_copy(root, "wheel-source")
    env = {**clean_env(), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", WHEEL_COMMAND.group(1)], cwd=source, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    built = source / WHEEL_FILE.group(1)
    assert built.is_file(), sorted(p.name for p in (source / "dist").iterdir())
    return built


@pytest.fixture(scope="module")
def sdist(root: Path) -> Path:
    source = source_copy(root, "sdist-source")
    out = root / "sdist"
    run([sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(source)], root)
    (built,) = out.glob("tornado_mcp-*.tar.gz")
    return built


def importable(python: Path, module: str, cwd: Path) -> bool:
    """Whether ``python`` itself can import ``module``: isolated (``-I``), so neither the
    working directory nor PYTHONPATH counts (a clone where the README's ``pip install .``
    ran holds a ``build/`` folder, which ``import build`` would otherwise find)."""
    found = subprocess.run(
        [str(python), "-I", "-c",
         f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"],
        capture_output=True, text=True, timeout=30, check=False, cwd=cwd)
    assert found.returncode in (0, 1), found.stderr
    return found.returncode == 0


def test_a_build_folder_in_the_clone_is_not_taken_for_the_build_package(
        venv: Path, tmp_path: Path) -> None:
    """What ``pip install .`` leaves in a clone does not make the plain venv look furnished."""
    (tmp_path / "build" / "lib").mkdir(parents=True)
    python = venv / "bin" / "python"
    assert not importable(python, "build", tmp_path)
    assert importable(python, "pip", tmp_path)
    shadowed = subprocess.run([str(python), "-c", "import build"], cwd=tmp_path,
                              capture_output=True, timeout=30, check=False)
    assert shadowed.returncode == 0  # what a plain ``python -c`` would have been fooled by


def test_the_readme_wheel_command_needs_nothing_but_pip(venv: Path, wheel: Path) -> None:
    assert not importable(venv / "bin" / "python", "build", REPO_ROOT)  # a plain venv
    assert wheel.name == "tornado_mcp-0.1.0-py3-none-any.whl"
    assert WHEEL_COMMAND is not None
    started = (REPO_ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert f"\n{WHEEL_COMMAND.group(1)} " in started  # the guide gives the same command


def test_wheel_and_sdist_carry_the_dashboard_files_and_the_licence(wheel: Path,
                                                                     sdist: Path) -> None:
    licence = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith(f"MIT License\n\n{COPYRIGHT}\n")
    with zipfile.ZipFile(wheel) as zf:
        assert set(zf.namelist()) >= DASHBOARD_FILES
        assert zf.read("tornado_mcp-0.1.0.dist-info/licenses/LICENSE").decode() == licence
        metadata = zf.read("tornado_mcp-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
        member = tf.extractfile("tornado_mcp-0.1.0/LICENSE")
        assert member is not None and member.read().decode() == licence
    assert names >= DASHBOARD_FILES
    assert {"README.md", "pyproject.toml", "LICENSE"} <= names


def test_twine_check_passes(wheel: Path, sdist: Path) -> None:
    out = run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
              wheel.parent)
    assert out.count("PASSED") == 2


def test_the_wheel_installs_into_a_fresh_venv_and_the_demo_runs(venv: Path, wheel: Path,
                                                                 tmp_path: Path) -> None:
    python = venv / "bin" / "python"
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
    helped = run([str(venv / "bin" / "tornado-mcp"), "--help"], tmp_path)  # the console script
    assert helped.startswith("usage: tornado-mcp [-h] {demo,stdio}")

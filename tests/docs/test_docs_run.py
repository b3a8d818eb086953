"""Every Python code block in README.md and docs/**/*.md runs, so the docs cannot rot.

Conventions (the harness, not the reader, needs these):

* A block fenced ```python is executed.  A block that is only a fragment (it needs names
  a surrounding program would define) is fenced ```python fragment and skipped.  A block
  fenced ```python title="NAME.py"``` is a file the page has the reader save under that
  name: a page's files are written to one directory and pytest runs there (with no
  configuration, as in a new project) when one of them is a ``test_*.py``.  Any other
  ``python...`` info string fails the test, so no block is left untested by accident.
* The executed blocks of one file form one program, in order (later blocks may use what
  earlier ones defined, as a reader would).  The program runs in a fresh interpreter from
  the repository root with ``__name__`` not ``"__main__"``; if it defines ``main()``, the
  harness then runs ``asyncio.run(main())`` itself, so a block may end with the usual
  ``if __name__ == "__main__": asyncio.run(main())`` and still be followed by others.
* A program that defines ``main()`` is a server: the literal port ``8000`` is replaced by
  ``0`` (the runner reports the port bound), the harness waits (bounded) until it
  accepts connections, talks real MCP to it
  (the getting-started server with the official Python SDK client, in both eras), then
  stops it with SIGTERM.  A program without ``main()`` must exit 0 within the timeout;
  every page's program is run, by a test of its own or by the one that runs the rest.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import REPO_ROOT, ServerProc
from mcp import Client
from mcp.shared.exceptions import MCPError

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.M | re.S)
# The runner reports the port a program's ``app.listen(0)`` bound, in the line the
# harness reads for every server it starts, so the program itself need not print it.
RUNNER = ("import asyncio, runpy, sys\n"
          "import tornado.web\n"
          "_listen = tornado.web.Application.listen\n"
          "def listen(self, port, *args, **kwargs):\n"
          "    http = _listen(self, port, *args, **kwargs)\n"
          "    bound = next(iter(http._sockets.values())).getsockname()[1]\n"
          "    print(f'MCP endpoint: http://127.0.0.1:{bound}/mcp', flush=True)\n"
          "    return http\n"
          "tornado.web.Application.listen = listen\n"
          "ns = runpy.run_path(sys.argv[1], run_name='docs_example')\n"
          "if callable(ns.get('main')):\n"
          "    asyncio.run(ns['main']())\n")
TITLED = re.compile(r'python title="([A-Za-z0-9_]+\.py)"')
RUN_TIMEOUT = 60.0
STEP = 10.0

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@dataclass
class Block:
    path: Path
    line: int
    info: str
    code: str


def blocks(path: Path) -> Iterator[Block]:
    text = path.read_text(encoding="utf-8")
    for m in FENCE.finditer(text):
        yield Block(path, text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2))


def python_blocks(path: Path) -> list[Block]:
    return [b for b in blocks(path) if b.info.split(" ")[0] == "python"]


def program(path: Path) -> str:
    return "\n\n".join(b.code for b in python_blocks(path) if b.info == "python")


def saved_files(path: Path) -> dict[str, str]:
    """The files ``path`` has the reader save: ``{name: code}`` of its titled blocks."""
    return {m.group(1): b.code for b in python_blocks(path)
            if (m := TITLED.fullmatch(b.info)) is not None}


def test_every_python_block_is_run_or_marked_a_fragment() -> None:
    run = skipped = 0
    for path in DOCS:
        names: list[str] = []
        for block in python_blocks(path):
            where = f"{path.name}:{block.line}"
            titled = TITLED.fullmatch(block.info)
            assert block.info in ("python", "python fragment") or titled, \
                f"{where}: fence as ```python (run), ```python title=\"NAME.py\"``` (a " \
                "file, run) or ```python fragment (skipped)"
            if titled:
                names.append(titled.group(1))
            if block.info == "python fragment":
                skipped += 1
            else:
                run += 1
        assert len(names) == len(set(names)), f"{path.name}: a file is written twice"
    assert run > 0 and run >= skipped, (run, skipped)  # fragments stay the exception


def start(path: Path, tmp_path: Path, source: str | None = None,
          env: dict[str, str] | None = None) -> ServerProc:
    source = (program(path) if source is None else source).replace("8000", "0")
    script = tmp_path / f"{path.stem}_program.py"
    script.write_text(source, encoding="utf-8")
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
    proc = ServerProc([sys.executable, "-c", RUNNER, str(script)], env)
    try:
        proc.wait_until_listening()
    except BaseException:
        proc.stop()
        raise
    return proc


def initialize(url: str) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "docs", "version": "1"}}}).encode()
    request = urllib.request.Request(url, body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=STEP) as response:
        reply: dict[str, Any] = json.loads(response.read())
    return reply


def with_the_dashboard(readme: Path) -> str:
    """The README's program with its dashboard fragment where the README says to put it:
    inside ``main()``, after the application is built."""
    fragment = next(b.code for b in python_blocks(readme)
                    if b.info == "python fragment" and "admin_ui.mount(" in b.code)
    lines = program(readme).splitlines()
    built = lines.index("    app = tornado.web.Application([")
    end = lines.index("    ])", built) + 1
    spliced = [("    " + line) if line else "" for line in fragment.splitlines()]
    return "\n".join([*lines[:end], *spliced, *lines[end:]]) + "\n"


def test_the_readme_program_serves_until_stopped(tmp_path: Path) -> None:
    """The README's app, with its dashboard snippet pasted in as it says: it prints where
    it listens, serves its page, MCP and the dashboard, and stops on SIGTERM."""
    readme = REPO_ROOT / "README.md"
    proc = start(readme, tmp_path, with_the_dashboard(readme),
                 env={"MCP_ADMIN_TOKEN": "docs-admin-token"})
    try:
        assert initialize(proc.url)["result"]["serverInfo"]["name"] == "greeter"
        with urllib.request.urlopen(proc.base_url + "/", timeout=STEP) as home:
            assert b"also speaks MCP" in home.read()
        with urllib.request.urlopen(proc.base_url + "/admin/login", timeout=STEP) as login:
            assert login.status == 200
        # Its own line (the harness bound port 0 where the README says 8000); the runner's
        # line, with the port bound, comes first.
        assert "MCP endpoint: http://127.0.0.1:0/mcp" in proc.stdout.splitlines()
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.proc.wait(timeout=STEP) == 0  # it stops gracefully, on its own
    finally:
        proc.stop()


def test_the_admin_program_serves_mcp_and_the_dashboard(tmp_path: Path) -> None:
    proc = start(REPO_ROOT / "docs" / "admin.md", tmp_path)
    try:
        assert initialize(proc.url)["result"]["serverInfo"]["name"] == "weather"
        with urllib.request.urlopen(proc.base_url + "/admin/login", timeout=STEP) as page:
            assert page.status == 200
    finally:
        proc.stop()
    assert "token: " in proc.stdout


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_embedding_program_serves_its_page_and_mcp_and_logs_the_id(
        tmp_path: Path, mode: str) -> None:
    """docs/embedding.md's application: its own page, the official client in both eras,
    answers gzipped for a client that asks, and the access line naming the JSON-RPC id."""
    proc = start(REPO_ROOT / "docs" / "embedding.md", tmp_path,
                 env={"PYTHONWARNINGS": "ignore"})
    try:
        with urllib.request.urlopen(proc.base_url + "/", timeout=STEP) as home:
            assert home.read() == b"the shop"
        with anyio.fail_after(6 * STEP):
            async with Client(proc.url, mode=mode,  # type: ignore[arg-type]
                              read_timeout_seconds=STEP) as client:
                greeted = await client.call_tool("greet", {"name": "Ada"})
        assert text_of(greeted) == "Hello, Ada!"
    finally:
        proc.stop()
    assert "Traceback" not in proc.stderr
    assert re.search(r"200 POST /mcp \(127\.0\.0\.1\) id=", proc.stderr), proc.stderr[-2000:]


def run_program(page: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The program of ``docs/<page>`` (its blocks in order), run to its end."""
    script = tmp_path / f"{Path(page).stem}_program.py"
    script.write_text(program(REPO_ROOT / "docs" / page), encoding="utf-8")
    return subprocess.run([sys.executable, "-c", RUNNER, str(script)], cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)


def test_the_subscriptions_program_runs(tmp_path: Path) -> None:
    done = run_program("subscriptions.md", tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_extensions_program_runs(tmp_path: Path) -> None:
    """DPoP end to end (a proof accepted, its replay and the token as Bearer refused) and
    an embedded endpoint on a Unix socket answering initialize."""
    done = run_program("extensions.md", tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def getting_started(tmp_path: Path) -> Iterator[ServerProc]:
    proc = start(REPO_ROOT / "docs" / "getting-started.md", tmp_path)
    try:
        yield proc
    finally:
        proc.stop()


async def confirm(context: Any, params: Any) -> types.ElicitResult:
    assert set(params.requested_schema["properties"]) == {"confirm"}
    return types.ElicitResult(action="accept", content={"confirm": True})


async def summarise(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", model="m",
                                     content=types.TextContent(type="text", text="short"))


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_getting_started_server_with_the_official_client(
        getting_started: ServerProc, mode: str) -> None:
    with anyio.fail_after(6 * STEP):
        async with Client(getting_started.url, mode=mode,  # type: ignore[arg-type]
                          read_timeout_seconds=STEP, elicitation_callback=confirm,
                          sampling_callback=summarise) as client:
            stored = await client.call_tool("add_note", {"name": "todo", "text": "milk"})
            assert text_of(stored) == "stored todo"
            read = await client.read_resource("note://todo")
            assert read.contents[0].text == "milk"  # type: ignore[union-attr]
            with pytest.raises(MCPError) as missing:
                await client.read_resource("note://nothing")
            assert missing.value.error.code == (-32002 if mode == "legacy" else -32602)
            prompt = await client.get_prompt("summarise", {"name": "todo"})
            assert "'milk'" in prompt.messages[0].content.text  # type: ignore[union-attr]
            crunched = await client.call_tool("crunch", {"n": 2})
            assert text_of(crunched) == "done: short"
            booked = await client.call_tool("book", {"city": "Oslo"})
            assert text_of(booked) == "booked Oslo"
    assert "Traceback" not in getting_started.stderr


async def test_the_getting_started_watchers_hear_of_an_edit_in_both_eras(
        getting_started: ServerProc) -> None:
    """getting-started's Notifications section as written: a legacy subscriber (on its GET
    stream) and a 2026-07-28 listener each hear of ``edit_note``, once per edit."""
    from mcp.client.subscriptions import ResourceUpdated

    updates: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        nonlocal arrived
        if isinstance(message, types.ServerNotification) and \
                isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            arrived.set()

    with anyio.fail_after(6 * STEP):
        async with Client(getting_started.url, mode="legacy",  # type: ignore[arg-type]
                          read_timeout_seconds=STEP, message_handler=on_message) as client:
            await client.call_tool("add_note", {"name": "todo", "text": "milk"})
            await client.subscribe_resource("note://todo")
            # The SDK opens its GET stream in the background: edit until one update arrives.
            edits = 0
            while not updates and edits < 10:
                edits += 1
                await client.call_tool("edit_note", {"name": "todo", "text": f"v{edits}"})
                with anyio.move_on_after(1.0):
                    await arrived.wait()
            assert updates and set(updates) == {"note://todo"}
            assert len(updates) <= edits  # never two for one edit
        async with Client(getting_started.url, read_timeout_seconds=STEP) as client, \
                client.listen(resource_subscriptions=["note://todo"]) as sub:
            assert sub.honored.resource_subscriptions == ["note://todo"]
            edited = await client.call_tool("edit_note", {"name": "todo", "text": "oat milk"})
            assert text_of(edited) == "edited todo"
            with anyio.fail_after(STEP):
                assert await sub.__anext__() == ResourceUpdated(uri="note://todo")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_getting_started_crunch_runs_its_steps_once(
        getting_started: ServerProc, mode: str) -> None:
    """``crunch`` asks its question before its steps, as the page advises: at 2026-07-28
    the retry with the answer runs the handler again, and the steps still run once."""
    progress: list[float] = []
    logs: list[Any] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    with anyio.fail_after(6 * STEP):
        async with Client(getting_started.url, mode=mode,  # type: ignore[arg-type]
                          read_timeout_seconds=STEP, sampling_callback=summarise,
                          logging_callback=on_log, log_level="info") as client:
            crunched = await client.call_tool("crunch", {"n": 3},
                                              progress_callback=on_progress)
    assert text_of(crunched) == "done: short"
    assert progress == [0, 1, 2]
    assert logs == ["step 0", "step 1", "step 2"]


# Pages whose program a test above (or in another module) serves or runs with checks of
# its own; every other page's program runs to completion below.
DEDICATED = {"README.md", "admin.md", "getting-started.md", "subscriptions.md",
             "extensions.md", "skills.md", "apps.md", "embedding.md"}


@pytest.mark.parametrize("page", [p for p in DOCS if program(p).strip()
                                  and p.name not in DEDICATED], ids=lambda p: p.name)
def test_every_other_page_program_runs(page: Path, tmp_path: Path) -> None:
    source = program(page)
    script = tmp_path / f"{page.stem}_program.py"
    script.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(script)], cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


# The pages that have the reader save test files (and only these).
WITH_TESTS = ["getting-started.md", "testing.md"]


def test_the_pages_with_test_files_are_the_ones_run() -> None:
    assert [p.name for p in DOCS if any(name.startswith("test_") for name in saved_files(p))
            ] == sorted(WITH_TESTS)


@pytest.mark.parametrize("name", WITH_TESTS)
def test_the_files_a_page_has_you_save_pass_their_tests(name: str, tmp_path: Path) -> None:
    """pytest in a directory holding only the page's files, with no configuration (so
    pytest-asyncio in its default strict mode): what a reader who copies them gets."""
    files = saved_files(REPO_ROOT / "docs" / name)
    for name, code in files.items():
        (tmp_path / name).write_text(code, encoding="utf-8")
    tests = [name for name in files if name.startswith("test_")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), *tests], cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"^\d+ passed", done.stdout.splitlines()[-1]), done.stdout[-2000:]
    assert "failed" not in done.stdout.splitlines()[-1]

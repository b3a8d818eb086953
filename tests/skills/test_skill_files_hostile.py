"""Skill files against a hostile disk and hostile frontmatter: a directory swapped for a
symbolic link while reads go on is never followed out of the skill; a FIFO (at start or
swapped in later) is refused without blocking, over HTTP and over stdio; a YAML alias bomb,
an integer of thousands of digits and a file name that is not UTF-8 are a
:class:`SkillError` (a skill refused or withdrawn), never -32603 or a traceback; each bound
at and one over."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp_http import result_of, running
from test_skills import make_skill

from tornado_mcp import Server
from tornado_mcp.extensions.skills.files import (
    MAX_FRONTMATTER_BYTES,
    MAX_FRONTMATTER_DEPTH,
    MAX_FRONTMATTER_VALUES,
    MAX_INT_DIGITS,
    SkillError,
    parse_frontmatter,
    read_confined,
)
from tornado_mcp.protocol import INVALID_PARAMS

pytestmark = pytest.mark.timeout(60)

WAIT = 10.0


# -- a directory swapped for a symbolic link ------------------------------------------------
def test_a_directory_swapped_for_a_link_is_never_followed(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "racy", {"sub/a.md": "inside"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_text("OUTSIDE SECRET")
    os.symlink(outside, skill_dir / "sub_link")
    stop = threading.Event()

    def swap() -> None:  # sub: the real directory, then the link, and back, for ever
        while not stop.is_set():
            os.rename(skill_dir / "sub", skill_dir / "sub_real")
            os.rename(skill_dir / "sub_link", skill_dir / "sub")
            os.rename(skill_dir / "sub", skill_dir / "sub_link")
            os.rename(skill_dir / "sub_real", skill_dir / "sub")

    swapper = threading.Thread(target=swap)
    swapper.start()
    outcomes = {"inside": 0, "refused": 0, "leaked": 0}
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                data = read_confined(skill_dir, "sub/a.md", 1024)
            except SkillError:
                outcomes["refused"] += 1
            else:
                outcomes["inside" if data == b"inside" else "leaked"] += 1
    finally:
        stop.set()
        swapper.join()
    assert outcomes["leaked"] == 0, outcomes
    assert outcomes["inside"] > 0 and outcomes["refused"] > 0, outcomes


def test_a_link_to_a_directory_at_any_depth_is_refused(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "deep", {"a/b/c.md": "c"})
    elsewhere = tmp_path / "elsewhere" / "b"
    elsewhere.mkdir(parents=True)
    (elsewhere / "c.md").write_text("not yours")
    os.rename(skill_dir / "a" / "b", tmp_path / "b_was")
    os.symlink(elsewhere, skill_dir / "a" / "b")
    with pytest.raises(SkillError, match="'b' is not a directory of the skill"):
        read_confined(skill_dir, "a/b/c.md", 1024)


def test_file_links_inside_are_followed_and_escaping_ones_refused(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "links", {"docs/a.md": "alpha"})
    os.symlink("docs/a.md", skill_dir / "rel.md")
    os.symlink("../rel.md", skill_dir / "docs" / "up.md")  # a link to a link
    (tmp_path / "skills" / "x.md").write_text("outside")
    os.symlink("../x.md", skill_dir / "escape.md")
    assert read_confined(skill_dir, "rel.md", 100) == b"alpha"
    assert read_confined(skill_dir, "docs/up.md", 100) == b"alpha"
    with pytest.raises(SkillError, match="outside the skill directory"):
        read_confined(skill_dir, "escape.md", 100)


# -- FIFOs and other files that are not regular ----------------------------------------------
def release(fifo: Path) -> None:
    """Unblock a reader stuck in open() on ``fifo`` (only the code before the fix gets
    stuck): open it for writing, without blocking when nobody reads."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


async def test_a_fifo_in_a_skill_is_refused_at_start_without_blocking(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "piped", {"a.md": "a"})
    os.mkfifo(skill_dir / "pipe.md")
    server = Server("s")
    task = asyncio.ensure_future(asyncio.to_thread(server.skills_from, tmp_path / "skills"))
    try:
        with pytest.raises(SkillError, match="not a regular file"):
            await asyncio.wait_for(asyncio.shield(task), WAIT)
    finally:
        if not task.done():
            release(skill_dir / "pipe.md")
            await asyncio.wait_for(task, WAIT)


async def test_a_fifo_swapped_in_later_is_refused_without_blocking_over_http(
        tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "swapped", {"a.md": "a"})
    server = Server("s", sync_handler_threads=1) if False else Server("s")
    server.skills_from(tmp_path / "skills")
    async with running(server, sync_handler_threads=1) as srv:
        (skill_dir / "a.md").unlink()
        os.mkfifo(skill_dir / "a.md")
        try:
            for _ in range(3):  # one pool thread: a blocked read would block the next
                r = await asyncio.wait_for(
                    srv.modern("resources/read", {"uri": "skill://swapped/a.md"}), WAIT)
                assert r.status == 400 and r.json["error"]["code"] == INVALID_PARAMS
        finally:
            release(skill_dir / "a.md")


STDIO = '''
import sys
from tornado_mcp import Server
from tornado_mcp.stdio import run

server = Server("skills-stdio")
server.skills_from(sys.argv[1])
run(server)
'''


async def test_a_fifo_swapped_in_is_refused_over_stdio(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    skill_dir = make_skill(root, "swapped", {"a.md": "a"})
    script = tmp_path / "skills_stdio.py"
    script.write_text(STDIO)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(root), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    try:
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        first = json.loads(await asyncio.wait_for(proc.stdout.readline(), WAIT))
        assert first["id"] == 0, first  # the skill was read at start: now swap its file
        (skill_dir / "a.md").unlink()
        os.mkfifo(skill_dir / "a.md")
        for n in (1, 2):
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method":
                                         "resources/read", "params":
                                         {"uri": "skill://swapped/a.md"}}).encode() + b"\n")
            answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), WAIT))
            while "id" not in answer:  # the skill's withdrawal announced: read on
                answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), WAIT))
            # refused, then (the skill withdrawn for breaking a rule) not found
            assert answer["id"] == n, answer
            assert answer["error"]["code"] == (INVALID_PARAMS if n == 1 else -32002), answer
    finally:
        release(skill_dir / "a.md")
        proc.stdin.close()
        _, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert b"Traceback" not in err


# -- frontmatter bounds -------------------------------------------------------------------
BOMB = """---
name: bomb
description: an alias bomb
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
---
"""


def test_an_alias_bomb_is_refused_quickly() -> None:
    started = time.perf_counter()
    with pytest.raises(SkillError, match="over its bounds"):
        parse_frontmatter(BOMB, "bomb")
    assert time.perf_counter() - started < 0.5


def front(extra: str) -> str:
    return f"---\nname: ok\ndescription: d\n{extra}---\n"


def test_values_at_and_over_the_bound() -> None:
    # the mapping, name, description, the list: four values besides the list's items
    at = MAX_FRONTMATTER_VALUES - 4
    parse_frontmatter(front("xs: [" + ",".join(["1"] * at) + "]\n"), "at")
    with pytest.raises(SkillError, match="over its bounds"):
        parse_frontmatter(front("xs: [" + ",".join(["1"] * (at + 1)) + "]\n"), "over")
    # an alias counts each time it is used
    aliased = "a: &a [1, 2]\nb: [*a, *a]\n"
    assert parse_frontmatter(front(aliased), "alias")["b"] == [[1, 2], [1, 2]]


def test_bytes_at_and_over_the_bound() -> None:
    head = "name: ok\ndescription: d\n# "  # the block: everything between the --- lines
    pad = MAX_FRONTMATTER_BYTES - len(head)
    text_at = front("# " + "c" * pad + "\n")
    assert len((head + "c" * pad).encode()) == MAX_FRONTMATTER_BYTES
    parse_frontmatter(text_at, "text at")
    with pytest.raises(SkillError, match=f"at most {MAX_FRONTMATTER_BYTES}"):
        parse_frontmatter(front("# " + "c" * (pad + 1) + "\n"), "text over")
    # keys and strings once parsed, an alias each time it is used: an alias to a 1 KiB
    # string is within the text bound, used 63 times within the value's, 64 times over
    kib = "k" * 1024
    used = len("nameokdescriptiond") + len("s") + len("l") + 1024
    room = (MAX_FRONTMATTER_BYTES - used) // 1024
    ok = parse_frontmatter(front(f"s: &s {kib}\nl: [{', '.join(['*s'] * room)}]\n"), "at")
    assert len(ok["l"]) == room
    with pytest.raises(SkillError, match="over its bounds"):
        parse_frontmatter(front(f"s: &s {kib}\nl: [{', '.join(['*s'] * (room + 1))}]\n"),
                          "over")


def test_depth_at_and_over_the_bound() -> None:
    def nested(depth: int) -> str:  # the frontmatter mapping is level 0
        return front("n: " + "[" * depth + "]" * depth + "\n")
    parse_frontmatter(nested(MAX_FRONTMATTER_DEPTH), "at")
    with pytest.raises(SkillError, match="nests deeper"):
        parse_frontmatter(nested(MAX_FRONTMATTER_DEPTH + 1), "over")
    with pytest.raises(SkillError):
        parse_frontmatter(nested(20_000)[:60_000] + "\n---\n", "very deep")


@pytest.mark.parametrize(("digits", "ok"), [(MAX_INT_DIGITS, True),
                                            (MAX_INT_DIGITS + 1, False), (5000, False)])
def test_integer_digits_at_and_over_the_bound(digits: int, ok: bool) -> None:
    text = front(f"version: {'7' * digits}\n")
    if ok:
        assert parse_frontmatter(text, "at")["version"] == int("7" * digits)
    else:
        with pytest.raises(SkillError, match="digits"):
            parse_frontmatter(text, "over")


async def test_a_huge_integer_on_disk_is_a_skill_error_at_start_and_on_refresh(
        tmp_path: Path) -> None:
    root = tmp_path / "skills"
    skill_dir = make_skill(root, "numbers", {"a.md": "a"})
    good = (skill_dir / "SKILL.md").read_text()
    (skill_dir / "SKILL.md").write_text(good.replace("description:",
                                                     f"n: {'9' * 5000}\ndescription:"))
    with pytest.raises(SkillError, match="digits"):
        Server("s").skills_from(root)
    (skill_dir / "SKILL.md").write_text(good)
    server = Server("s")
    server.skills_from(root)
    async with running(server) as srv:
        (skill_dir / "SKILL.md").write_text(good.replace("description:",
                                                         f"n: {'9' * 5000}\ndescription:"))
        r = await srv.modern("resources/read", {"uri": "skill://numbers/SKILL.md"})
        assert r.status < 500 and b"Traceback" not in r.body
        assert result_of(await srv.modern("skills/list", {}))["skills"] == []


# -- names that are not UTF-8 --------------------------------------------------------------
def bad_name(directory: Path) -> None:
    with open(os.path.join(os.fsencode(directory), b"caf\xe9.md"), "wb") as f:
        f.write(b"latin-1 name")


def test_a_file_name_that_is_not_utf8_refuses_the_skill(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "latin", {"a.md": "a"})
    bad_name(skill_dir)
    with pytest.raises(SkillError, match="not UTF-8"):
        Server("s").skills_from(tmp_path / "skills")


async def test_a_file_name_that_is_not_utf8_appearing_later_withdraws_the_skill(
        tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "later", {"a.md": "a"})
    server = Server("s")
    server.skills_from(tmp_path / "skills")
    async with running(server) as srv:
        bad_name(skill_dir)
        (skill_dir / "a.md").write_text("changed")  # the read finds new bytes: refresh
        r = await srv.modern("resources/read", {"uri": "skill://later/a.md"})
        assert r.status == 200 and b"Traceback" not in r.body, r.body
        assert result_of(await srv.modern("skills/list", {}))["skills"] == []

"""Agent skills (``io.modelcontextprotocol/skills``) over real HTTP: entries and manifests,
``skill://`` resources, ``resources/directory/read``, the bounds, paths confined to the
skill's directory, and updates on change to listen streams and legacy subscribers."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_http import (
    TIMEOUT,
    Running,
    acked,
    legacy_call,
    result_of,
    rpc,
    running,
)

from tornado_mcp import Server
from tornado_mcp.extensions.skills import MAX_SKILL_SUBSCRIPTIONS, SKILLS_EXTENSION, SkillError
from tornado_mcp.protocol import INVALID_PARAMS

pytestmark = pytest.mark.timeout(60)

EXAMPLE_SKILLS = Path(__file__).resolve().parents[2] / "examples" / "skills"
UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"


def skill_md(name: str, description: str = "Does a thing", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n"


def make_skill(root: Path, name: str, files: dict[str, str | bytes] | None = None,
               front_extra: str = "") -> Path:
    skill_dir = root / name
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(skill_md(name, extra=front_extra), encoding="utf-8")
    for rel, content in (files or {}).items():
        path = skill_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return skill_dir


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def call(srv: Running, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return result_of(await srv.modern(method, params))


async def error(srv: Running, method: str, params: dict[str, Any]) -> dict[str, Any]:
    reply = await srv.modern(method, params)
    body = reply.messages[-1]
    assert "error" in body, body
    err: dict[str, Any] = body["error"]
    return err


# -- entries, manifests, resources ----------------------------------------------------------
async def test_example_skill_is_listed_with_a_complete_manifest() -> None:
    server = Server("s")
    server.skills_from(EXAMPLE_SKILLS)
    async with running(server) as srv:
        discovered = await call(srv, "server/discover", {})
        assert discovered["capabilities"]["extensions"][SKILLS_EXTENSION] == \
            {"directoryRead": True}
        assert discovered["capabilities"]["resources"]["subscribe"] is True
        listed = await call(srv, "skills/list", {})
        assert listed["ttlMs"] == 0 and listed["cacheScope"] == "private"
        (entry,) = listed["skills"]
        assert entry["uri"] == "skill://release-notes/SKILL.md"
        assert entry["frontmatter"] == {
            "name": "release-notes",
            "description": "Write release notes for a tornado-mcp release from its merged "
                           "changes",
            "license": "MIT", "metadata": {"version": "1.0", "audience": "maintainers"}}
        root = EXAMPLE_SKILLS / "release-notes"
        on_disk = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                         if p.is_file())
        manifest = {r["uri"]: r for r in entry["resources"]}
        assert sorted(u.removeprefix("skill://release-notes/") for u in manifest) == on_disk
        for rel in on_disk:
            data = (root / rel).read_bytes()
            assert manifest[f"skill://release-notes/{rel}"] == {
                "uri": f"skill://release-notes/{rel}", "digest": sha(data), "size": len(data)}
        got = await call(srv, "skills/get", {"uri": entry["uri"]})
        assert got["skill"] == entry and "nextCursor" not in got
        read = await call(srv, "resources/read",
                          {"uri": "skill://release-notes/templates/sections/added.md"})
        (content,) = read["contents"]
        assert content["mimeType"] == "text/markdown"
        assert content["text"] == (root / "templates/sections/added.md").read_text()


async def test_skill_md_resource_carries_the_frontmatter_name_and_description() -> None:
    server = Server("s")
    server.skills_from(EXAMPLE_SKILLS)
    async with running(server) as srv:
        resources = (await call(srv, "resources/list", {}))["resources"]
        by_uri = {r["uri"]: r for r in resources}
        skill = by_uri["skill://release-notes/SKILL.md"]
        assert skill["name"] == "release-notes" and skill["mimeType"] == "text/markdown"
        assert skill["description"].startswith("Write release notes")
        assert by_uri["skill://release-notes/scripts/collect.py"]["name"] == "collect.py"


async def test_frontmatter_is_kept_verbatim_as_yaml_1_2() -> None:
    server = Server("s")
    md = skill_md("dates", extra="released: 2026-01-02\nanswer: yes\ncount: 012\n"
                                 "ratio: 0.5\ntags: [a, b]\n")
    server.add_skill("dates", md)
    async with running(server) as srv:
        (entry,) = (await call(srv, "skills/list", {}))["skills"]
        assert entry["frontmatter"] == {"name": "dates", "description": "Does a thing",
                                        "released": "2026-01-02", "answer": "yes",
                                        "count": 12, "ratio": 0.5, "tags": ["a", "b"]}


async def test_skills_list_pages_keep_each_entry_whole() -> None:
    server = Server("s", page_size=2)
    for i in range(5):
        server.add_skill(f"skill-{i}", skill_md(f"skill-{i}"), {"a.txt": "x" * i})
    async with running(server) as srv:
        seen: list[str] = []
        cursor = None
        for _ in range(5):
            page = await call(srv, "skills/list", {"cursor": cursor} if cursor else {})
            assert len(page["skills"]) <= 2
            seen += [s["uri"] for s in page["skills"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert seen == [f"skill://skill-{i}/SKILL.md" for i in range(5)]
        err = await error(srv, "skills/list", {"cursor": "not-a-cursor"})
        assert err["code"] == INVALID_PARAMS


async def test_unknown_skill_and_unknown_file_are_invalid_params() -> None:
    server = Server("s")
    server.skills_from(EXAMPLE_SKILLS)
    async with running(server) as srv:
        err = await error(srv, "skills/get", {"uri": "skill://nope/SKILL.md"})
        assert err["code"] == INVALID_PARAMS and "skill://nope/SKILL.md" in err["message"]
        err = await error(srv, "resources/read", {"uri": "skill://release-notes/../x"})
        assert err["code"] == INVALID_PARAMS


async def test_generated_skill_is_dynamic_and_made_at_each_read() -> None:
    server = Server("s")
    calls: list[int] = []

    def today() -> str:
        calls.append(1)
        return f"read {len(calls)}"

    server.add_skill("daily", skill_md("daily"), {"data/today.txt": today},
                     prefix="reports")
    async with running(server) as srv:
        (entry,) = (await call(srv, "skills/list", {}))["skills"]
        assert entry == {"uri": "skill://reports/daily/SKILL.md",
                         "frontmatter": {"name": "daily", "description": "Does a thing"},
                         "resources": "dynamic"}
        for n in (1, 2):
            read = await call(srv, "resources/read",
                              {"uri": "skill://reports/daily/data/today.txt"})
            assert read["contents"][0]["text"] == f"read {n}"


async def test_binary_file_is_served_as_a_blob() -> None:
    server = Server("s")
    server.add_skill("pics", skill_md("pics"), {"assets/dot.png": b"\x89PNG\r\n\x1a\n\xff"})
    async with running(server) as srv:
        read = await call(srv, "resources/read", {"uri": "skill://pics/assets/dot.png"})
        (content,) = read["contents"]
        assert content["mimeType"] == "image/png" and "text" not in content
        assert content["blob"] == "iVBORw0KGgr/"


# -- resources/directory/read ---------------------------------------------------------------
async def test_directory_read_lists_direct_children_and_refuses_files() -> None:
    server = Server("s")
    server.skills_from(EXAMPLE_SKILLS)
    async with running(server) as srv:
        root = await call(srv, "resources/directory/read", {"uri": "skill://release-notes"})
        assert [(r["uri"], r["mimeType"]) for r in root["resources"]] == [
            ("skill://release-notes/SKILL.md", "text/markdown"),
            ("skill://release-notes/scripts", "inode/directory"),
            ("skill://release-notes/templates", "inode/directory")]
        sub = await call(srv, "resources/directory/read",
                         {"uri": "skill://release-notes/templates"})
        assert [r["name"] for r in sub["resources"]] == ["release.md", "sections"]
        for uri in ("skill://release-notes/SKILL.md", "skill://nothing-here"):
            err = await error(srv, "resources/directory/read", {"uri": uri})
            assert err["code"] == INVALID_PARAMS and uri in err["message"]


async def test_directory_read_paginates() -> None:
    server = Server("s", page_size=2)
    server.add_skill("many", skill_md("many"), {f"f{i}.txt": str(i) for i in range(3)})
    async with running(server) as srv:
        first = await call(srv, "resources/directory/read", {"uri": "skill://many"})
        assert len(first["resources"]) == 2
        second = await call(srv, "resources/directory/read",
                            {"uri": "skill://many", "cursor": first["nextCursor"]})
        names = [r["name"] for r in first["resources"] + second["resources"]]
        assert names == ["many", "f0.txt", "f1.txt", "f2.txt"]  # SKILL.md: the skill name
        assert "nextCursor" not in second


def test_directory_read_is_not_offered_when_turned_off() -> None:
    server = Server("s")
    server.skills.directory_read = False
    server.add_skill("one", skill_md("one"))
    assert server.capabilities["extensions"][SKILLS_EXTENSION] == {}
    methods = server.registry.methods  # the methods the extension installed
    assert "resources/directory/read" not in methods
    assert "skills/list" in methods and "skills/get" in methods


# -- bad skills: refused with nothing served ------------------------------------------------
def assert_nothing_served(server: Server) -> None:
    assert len(server.skills) == 0 and not server.skills.listed()
    assert "extensions" not in server.capabilities


def test_symlink_out_of_the_skill_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    skill_dir = make_skill(tmp_path / "skills", "leaky")
    os.symlink(secret, skill_dir / "notes.txt")
    server = Server("s")
    with pytest.raises(SkillError, match="outside the skill directory"):
        server.skill(skill_dir)
    with pytest.raises(SkillError, match="outside the skill directory"):
        server.skills_from(tmp_path / "skills")
    assert_nothing_served(server)


def test_a_linked_skill_directory_outside_the_tree_is_refused(tmp_path: Path) -> None:
    make_skill(tmp_path / "elsewhere", "stray")
    (tmp_path / "tree").mkdir()
    make_skill(tmp_path / "tree", "fine")
    os.symlink(tmp_path / "elsewhere" / "stray", tmp_path / "tree" / "stray")
    server = Server("s")
    with pytest.raises(SkillError, match="symbolic link to a directory"):
        server.skills_from(tmp_path / "tree")
    assert_nothing_served(server)


def test_symlinked_directory_is_refused(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path, "loopy", {"docs/a.md": "a"})
    os.symlink(skill_dir / "docs", skill_dir / "more")
    server = Server("s")
    with pytest.raises(SkillError, match="symbolic link to a directory"):
        server.skill(skill_dir)
    assert_nothing_served(server)


def test_symlink_inside_the_skill_is_served(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path, "linked", {"docs/a.md": "alpha"})
    os.symlink(skill_dir / "docs" / "a.md", skill_dir / "b.md")
    server = Server("s")
    skill = server.skill(skill_dir)
    assert {f.rel: f.size for f in skill.files} == {"SKILL.md": skill.files[0].size,
                                                    "b.md": 5, "docs/a.md": 5}


@pytest.mark.parametrize("rel", ["../escape.txt", "/etc/passwd", "a/./b.txt", ".env",
                                 "a//b.txt", "a\\b.txt"])
def test_generated_file_path_outside_the_skill_is_refused(rel: str) -> None:
    server = Server("s")
    with pytest.raises(SkillError, match="file path"):
        server.add_skill("gen", skill_md("gen"), {rel: "x"})
    assert_nothing_served(server)


@pytest.mark.parametrize("name", ["Upper", "-lead", "trail-", "dou--ble", "x" * 65, "a_b"])
def test_bad_skill_name_is_refused(name: str) -> None:
    server = Server("s")
    with pytest.raises(SkillError, match="naming rules"):
        server.add_skill(name, skill_md(name))
    assert_nothing_served(server)


def test_directory_name_must_equal_the_frontmatter_name(tmp_path: Path) -> None:
    skill_dir = tmp_path / "one"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text(skill_md("other"))
    with pytest.raises(SkillError, match="frontmatter names the skill 'other'"):
        Server("s").skill(skill_dir)


@pytest.mark.parametrize("text, message", [
    ("# no frontmatter\n", "must begin with"),
    ("---\nname: x\n", "must begin with"),
    ("---\n- a list\n---\n", "must be a mapping"),
    ("---\nname: bad\n---\n", "description"),
    ("---\nname: bad\ndescription: [unclosed\n---\n", "not valid YAML"),
    ("---\nname: bad\ndescription: d\nwhen: !!binary aGk=\n---\n", "no JSON form"),
    ("---\nname: bad\ndescription: d\ndescription: e\n---\n", "duplicate key"),
    ("---\nname: bad\ndescription: " + "d" * 1025 + "\n---\n", "at most 1024"),
])
def test_bad_frontmatter_is_refused(text: str, message: str) -> None:
    server = Server("s")
    with pytest.raises(SkillError, match=message):
        server.add_skill("bad", text)
    assert_nothing_served(server)


def test_a_description_of_1024_characters_is_served() -> None:
    server = Server("s")
    skill = server.add_skill("long", skill_md("long", "d" * 1024))
    assert len(skill.frontmatter["description"]) == 1024


def test_a_generated_skill_md_comes_only_from_its_argument() -> None:
    server = Server("s")
    with pytest.raises(SkillError, match="is the skill_md argument"):
        server.add_skill("twice", skill_md("twice"), {"SKILL.md": skill_md("other")})
    assert_nothing_served(server)


def test_a_skill_is_served_once() -> None:
    server = Server("s")
    server.add_skill("once", skill_md("once"))
    with pytest.raises(SkillError, match="already served"):
        server.add_skill("once", skill_md("once"))
    assert len(server.skills) == 1


# -- bounds ---------------------------------------------------------------------------------
def test_files_per_skill_at_and_over_the_limit(tmp_path: Path) -> None:
    server = Server("s")
    server.skills.max_files = 3
    server.add_skill("three", skill_md("three"), {"a.txt": "a", "b.txt": "b"})
    with pytest.raises(SkillError, match="4 files is over the limit of 3"):
        server.add_skill("four", skill_md("four"), {"a.txt": "a", "b.txt": "b", "c.txt": "c"})
    make_skill(tmp_path, "disk-three", {"a.txt": "a", "b.txt": "b"})
    server.skill(tmp_path / "disk-three")
    make_skill(tmp_path, "disk-four", {"a.txt": "a", "b.txt": "b", "c.txt": "c"})
    with pytest.raises(SkillError, match="more than 3 files"):
        server.skill(tmp_path / "disk-four")
    assert sorted(s["uri"] for s in server.skills.entries()) == [
        "skill://disk-three/SKILL.md", "skill://three/SKILL.md"]


def test_bytes_per_skill_at_and_over_the_limit(tmp_path: Path) -> None:
    server = Server("s")
    md = skill_md("fits")
    server.skills.max_bytes = len(md.encode()) + 10
    server.add_skill("fits", md, {"pad.txt": "x" * 10})
    with pytest.raises(SkillError, match="over the limit"):
        server.add_skill("fits-not", skill_md("fits-not"), {"pad.txt": "x" * 11})
    make_skill(tmp_path, "disk", {"pad.txt": "x" * 50})
    with pytest.raises(SkillError, match="over the skill's limit"):
        server.skill(tmp_path / "disk")
    assert [s["uri"] for s in server.skills.entries()] == ["skill://fits/SKILL.md"]


def test_skills_per_server_at_and_over_the_limit() -> None:
    server = Server("s")
    server.skills.max_skills = 2
    server.add_skill("one", skill_md("one"))
    server.add_skill("two", skill_md("two"))
    with pytest.raises(SkillError, match="at most 2 skills"):
        server.add_skill("three", skill_md("three"))
    assert len(server.skills) == 2


async def test_generated_file_over_the_byte_limit_is_not_served() -> None:
    server = Server("s")
    server.skills.max_bytes = 100
    server.add_skill("gen", skill_md("gen"), {"at.txt": lambda: "x" * 100,
                                              "over.txt": lambda: "x" * 101})
    async with running(server) as srv:
        at = await call(srv, "resources/read", {"uri": "skill://gen/at.txt"})
        assert len(at["contents"][0]["text"]) == 100
        err = await error(srv, "resources/read", {"uri": "skill://gen/over.txt"})
        assert err["code"] == INVALID_PARAMS and "cannot be served" in err["message"]


async def test_legacy_subscriptions_per_session_at_and_over_the_limit() -> None:
    server = Server("s")
    server.add_skill("subs", skill_md("subs"),
                     {f"f{i}.txt": "x" for i in range(MAX_SKILL_SUBSCRIPTIONS)})
    async with running(server) as srv:
        sid = await srv.initialize()
        uris = [f"skill://subs/f{i}.txt" for i in range(MAX_SKILL_SUBSCRIPTIONS)]
        for uri in uris:
            assert "result" in await legacy_call(srv, sid, "resources/subscribe", {"uri": uri})
        over = await legacy_call(srv, sid, "resources/subscribe",
                                 {"uri": "skill://subs/SKILL.md"})
        assert over["error"]["code"] == INVALID_PARAMS, over
        again = await legacy_call(srv, sid, "resources/subscribe", {"uri": uris[0]})
        assert "result" in again


# -- changes on disk ------------------------------------------------------------------------
async def test_a_changed_file_is_announced_and_the_manifest_follows(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path, "live", {"notes.md": "v1"})
    server = Server("s")
    server.skill(skill_dir)
    async with running(server) as srv:
        sid = await srv.initialize()
        get_stream = await srv.get_stream(sid)
        sub = await legacy_call(srv, sid, "resources/subscribe",
                                {"uri": "skill://live/notes.md"})
        assert "result" in sub, sub
        listen = await acked(srv, {"resourceSubscriptions": ["skill://live/SKILL.md"]})
        (skill_dir / "notes.md").write_text("version two")
        changed = server.skills.refresh()
        assert changed == ["skill://live/SKILL.md", "skill://live/notes.md"]
        await get_stream.wait_for(lambda s: any(m.get("method") == UPDATED
                                                for m in s.messages), TIMEOUT)
        assert [m["params"]["uri"] for m in get_stream.messages
                if m.get("method") == UPDATED] == ["skill://live/notes.md"]
        await listen.wait_messages(2)
        assert listen.messages[1]["method"] == UPDATED
        assert listen.messages[1]["params"]["uri"] == "skill://live/SKILL.md"
        entry = (await call(srv, "skills/get", {"uri": "skill://live/SKILL.md"}))["skill"]
        notes = [r for r in entry["resources"] if r["uri"] == "skill://live/notes.md"]
        assert notes == [{"uri": "skill://live/notes.md", "digest": sha(b"version two"),
                          "size": 11}]
        assert server.skills.refresh() == []  # nothing new
        get_stream.close()
        listen.close()


async def test_a_read_that_finds_new_bytes_refreshes_the_entry(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path, "stale", {"a.md": "old"})
    server = Server("s")
    server.skill(skill_dir)
    async with running(server) as srv:
        (skill_dir / "a.md").write_text("newer")
        read = await call(srv, "resources/read", {"uri": "skill://stale/a.md"})
        assert read["contents"][0]["text"] == "newer"
        entry = (await call(srv, "skills/get", {"uri": "skill://stale/SKILL.md"}))["skill"]
        assert {"uri": "skill://stale/a.md", "digest": sha(b"newer"), "size": 5} in \
            entry["resources"]


async def test_a_file_swapped_for_an_escaping_symlink_is_refused_at_read(
        tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "swap", {"a.md": "fine"})
    outside = tmp_path / "outside.md"
    outside.write_text("not yours")
    server = Server("s")
    server.skill(skill_dir)
    async with running(server) as srv:
        (skill_dir / "a.md").unlink()
        os.symlink(outside, skill_dir / "a.md")
        err = await error(srv, "resources/read", {"uri": "skill://swap/a.md"})
        assert err["code"] == INVALID_PARAMS and "not yours" not in json.dumps(err)
        # The skill broke a rule, so it is withdrawn as a whole.
        assert (await call(srv, "skills/list", {}))["skills"] == []
        err = await error(srv, "skills/get", {"uri": "skill://swap/SKILL.md"})
        assert err["code"] == INVALID_PARAMS


async def test_new_and_removed_files_change_the_resource_list(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path, "grow", {"a.md": "a"})
    server = Server("s")
    server.skill(skill_dir)
    async with running(server) as srv:
        listen = await acked(srv, {"resourcesListChanged": True})
        (skill_dir / "b.md").write_text("b")
        server.skills.refresh()
        await listen.wait_messages(2)
        assert listen.messages[1]["method"] == LIST_CHANGED
        uris = [r["uri"] for r in (await call(srv, "resources/list", {}))["resources"]]
        assert "skill://grow/b.md" in uris
        listen.close()


async def test_legacy_session_reads_skills_too() -> None:
    server = Server("s")
    server.skills_from(EXAMPLE_SKILLS)
    async with running(server) as srv:
        sid = await srv.initialize()
        listed = await legacy_call(srv, sid, "skills/list", {})
        assert listed["result"]["skills"][0]["uri"] == "skill://release-notes/SKILL.md"
        assert "ttlMs" not in listed["result"]
        reply = await srv.post(rpc("resources/read", {"uri": "skill://release-notes/SKILL.md"},
                                   3), session=sid)
        assert result_of(reply)["contents"][0]["text"].startswith("---\nname: release-notes")


async def test_watch_finds_a_change_on_disk(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path, "watched", {"a.md": "one"})
    server = Server("s")
    server.skill(skill_dir)
    async with running(server) as srv:
        listen = await acked(srv, {"resourceSubscriptions": ["skill://watched/a.md"]})
        watcher = asyncio.create_task(server.skills.watch(0.05))
        try:
            (skill_dir / "a.md").write_text("two")
            await listen.wait_messages(2)
            assert listen.messages[1]["method"] == UPDATED
            assert listen.messages[1]["params"]["uri"] == "skill://watched/a.md"
        finally:
            watcher.cancel()
            listen.close()


async def test_a_file_grown_past_the_byte_bound_is_refused_at_read(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path, "grown", {"a.md": "1234"})
    server = Server("s")
    server.skills.max_bytes = len(skill_md("grown").encode()) + 4  # exactly what it holds
    server.skill(skill_dir)
    async with running(server) as srv:
        at = await call(srv, "resources/read", {"uri": "skill://grown/a.md"})
        assert at["contents"][0]["text"] == "1234"
        (skill_dir / "a.md").write_text("12345")
        err = await error(srv, "resources/read", {"uri": "skill://grown/a.md"})
        assert err["code"] == INVALID_PARAMS and "12345" not in json.dumps(err)
        assert (await call(srv, "skills/list", {}))["skills"] == []  # withdrawn


async def test_a_nested_skill_is_its_own_entry_and_part_of_the_outer_manifest(
        tmp_path: Path) -> None:
    outer = make_skill(tmp_path / "tree", "outer", {"notes.md": "n"})
    make_skill(outer, "inner", {"steps.md": "s"})
    server = Server("s")
    skills = server.skills_from(tmp_path / "tree", prefix="acme")
    assert [s.uri for s in skills] == ["skill://acme/outer/SKILL.md",
                                       "skill://acme/outer/inner/SKILL.md"]
    async with running(server) as srv:
        entries = {e["uri"]: e for e in (await call(srv, "skills/list", {}))["skills"]}
        outer_files = [r["uri"] for r in entries["skill://acme/outer/SKILL.md"]["resources"]]
        assert outer_files == ["skill://acme/outer/SKILL.md", "skill://acme/outer/inner/SKILL.md",
                               "skill://acme/outer/inner/steps.md", "skill://acme/outer/notes.md"]
        inner = entries["skill://acme/outer/inner/SKILL.md"]
        assert inner["frontmatter"]["name"] == "inner"
        assert [r["uri"] for r in inner["resources"]] == ["skill://acme/outer/inner/SKILL.md",
                                                          "skill://acme/outer/inner/steps.md"]
        listed = {r["uri"]: r for r in (await call(srv, "resources/list", {}))["resources"]}
        assert listed["skill://acme/outer/inner/SKILL.md"]["name"] == "inner"


def test_the_old_import_path_names_the_same_objects() -> None:
    """``tornado_mcp.server.skills``, where skills lived before ``tornado_mcp.extensions``."""
    from tornado_mcp.extensions import skills
    from tornado_mcp.server import skills as old
    assert old.__all__ == skills.__all__
    assert all(getattr(old, name) is getattr(skills, name) for name in skills.__all__)

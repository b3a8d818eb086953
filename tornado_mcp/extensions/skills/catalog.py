"""The skills catalog: the skills one server serves (:class:`SkillCatalog`), each a
:class:`Skill` of :class:`SkillFile` entries, their registration, reads and changes (the
extension as a whole: :mod:`tornado_mcp.extensions.skills`)."""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...protocol import INVALID_PARAMS
from ...protocol.errors import MCPError
from ...protocol.pagination import paginate
from ...sync.handlers import call_handler
from .files import (
    MAX_SKILL_BYTES,
    MAX_SKILL_FILES,
    SKILL_MD,
    SkillError,
    check_name,
    check_prefix,
    digest_of,
    file_uri,
    is_text,
    mime_type_of,
    parse_frontmatter,
    read_confined,
    scan_directory,
    walk,
)
from .methods import MAX_SKILL_SUBSCRIPTIONS, SkillNotices, install

if TYPE_CHECKING:
    from ...server.context import Context
    from ..host import ExtensionHost

__all__ = ["DIRECTORY_MIME", "MAX_SKILLS", "MAX_SKILL_BYTES", "MAX_SKILL_FILES",
           "MAX_SKILL_SUBSCRIPTIONS", "SKILLS_EXTENSION", "Skill", "SkillCatalog",
           "SkillError", "SkillFile"]

log = logging.getLogger("tornado_mcp.server")

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
DIRECTORY_MIME = "inode/directory"
#: Skills one server serves at most.
MAX_SKILLS = 1000
#: A generated file: called at each read, returns its text or bytes.
Producer = Callable[[], "str | bytes"]


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill: its URI, path in the skill, and where its bytes come from."""

    uri: str
    rel: str
    mime_type: str
    size: int | None = None
    digest: str | None = None
    data: bytes | None = None
    produce: Producer | None = None

    def describe(self, skill: Skill) -> dict[str, Any]:
        if self.rel == SKILL_MD:
            out: dict[str, Any] = {"uri": self.uri, "name": skill.name,
                                   "description": skill.frontmatter["description"],
                                   "mimeType": self.mime_type}
        else:
            out = {"uri": self.uri, "name": self.rel.rsplit("/", 1)[-1],
                   "mimeType": self.mime_type}
        if self.size is not None:
            out["size"] = self.size
        return out


@dataclass(frozen=True)
class Skill:
    """A served skill: where it lives, its frontmatter and its files (``SKILL.md`` first)."""

    path: str
    name: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...]
    root: Path | None = None
    prefix: str | None = None

    @property
    def uri(self) -> str:
        return file_uri(self.path, SKILL_MD)

    @property
    def dynamic(self) -> bool:
        return any(f.digest is None for f in self.files)

    def entry(self) -> dict[str, Any]:
        """The skill's entry, as ``skills/list`` and ``skills/get`` show it."""
        resources: Any = "dynamic" if self.dynamic else [
            {"uri": f.uri, "digest": f.digest, "size": f.size} for f in self.files]
        return {"uri": self.uri, "frontmatter": self.frontmatter, "resources": resources}


class _Listed:
    """A skill file as ``resources/list`` describes it (for the registry's lister)."""

    __slots__ = ("description",)

    def __init__(self, description: dict[str, Any]) -> None:
        self.description = description

    def describe(self) -> dict[str, Any]:
        return self.description


def _skill_path(prefix: str | None, name: str) -> str:
    return "/".join((*check_prefix(prefix), name))


def _check_rel(rel: str, where: str) -> None:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") or p.startswith(".")
                                  for p in parts) or "\\" in rel or "\x00" in rel:
        raise SkillError(f"{where}: file path {rel!r} must be relative, inside the "
                         "skill, without '.', '..', hidden or empty segments")


def _check_limits(where: str, count: int, total: int, max_files: int, max_bytes: int) -> None:
    if count > max_files:
        raise SkillError(f"{where}: {count} files is over the limit of {max_files}")
    if total > max_bytes:
        raise SkillError(f"{where}: {total} bytes is over the limit of {max_bytes}")


class SkillCatalog:
    """The skills one :class:`~tornado_mcp.Server` serves (``server.skills``)."""

    def __init__(self, server: ExtensionHost, *, max_skills: int = MAX_SKILLS,
                 max_files: int = MAX_SKILL_FILES, max_bytes: int = MAX_SKILL_BYTES,
                 directory_read: bool = True) -> None:
        self.server = server
        self.max_skills = max_skills
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.directory_read = directory_read
        self._lock = threading.RLock()
        self._skills: dict[str, Skill] = {}
        # Derived views, replaced whole on every change (readers need no lock).
        self._files: dict[str, tuple[Skill, SkillFile]] = {}
        self._dirs: dict[str, list[dict[str, Any]]] = {}
        self._listed: list[_Listed] = []
        #: Change notices; ``resources/subscribe`` of a skill URI lands here.
        self.notices = SkillNotices(server)
        self._installed = False

    # -- registration ---------------------------------------------------------------------
    def add_directory(self, directory: str | Path, prefix: str | None = None) -> Skill:
        """Serve the skill in ``directory`` (which holds ``SKILL.md``; its name is the
        directory's).  A skill that breaks a rule raises :class:`SkillError`; nothing is
        served then."""
        skill = self._load_directory(Path(directory).resolve(), prefix)
        self._put(skill, new=True)
        return skill

    def add_tree(self, directory: str | Path, prefix: str | None = None) -> list[Skill]:
        """Serve every skill below ``directory``: each directory holding a ``SKILL.md``,
        at a skill path of its place below ``directory`` (so nested skills nest).  All of
        them or none: one that breaks a rule raises before any is served."""
        top = Path(directory).resolve()
        if not top.is_dir():
            raise SkillError(f"{directory}: not a directory")
        found: list[Skill] = []
        for dirpath, _dirnames, filenames in walk(top, "served as a skill"):
            rel_parts = Path(dirpath).relative_to(top).parts
            if SKILL_MD not in filenames or not rel_parts:
                continue
            outer = "/".join(p for p in (prefix or "", *rel_parts[:-1]) if p) or None
            found.append(self._load_directory(Path(dirpath), outer))
        with self._lock:
            if len(self._skills) + len(found) > self.max_skills:
                raise SkillError(f"{directory}: {len(found)} more skills would pass the "
                                 f"limit of {self.max_skills}")
            for skill in found:
                self._check_new(skill)
            for skill in found:
                self._put(skill, new=True, notify=False)
        if found:
            self.server.notify_resources_list_changed()
        return found

    def add(self, name: str, skill_md: str, files: Mapping[str, str | bytes | Producer]
            | None = None, prefix: str | None = None) -> Skill:
        """Serve a skill built in code: ``skill_md`` is its ``SKILL.md`` text; ``files``
        maps each other file's path in the skill to its text, bytes, or a function that
        makes them at each read (such a skill's manifest is ``"dynamic"``)."""
        where = f"skill {name!r}"
        check_name(name, where)
        path = _skill_path(prefix, name)
        front = parse_frontmatter(skill_md, where)
        if front["name"] != name:
            raise SkillError(f"{where}: its frontmatter names it {front['name']!r}")
        if SKILL_MD in (files or {}):
            raise SkillError(f"{where}: {SKILL_MD} is the skill_md argument, not a file")
        entries: list[SkillFile] = []
        total = 0
        for rel, content in {SKILL_MD: skill_md, **dict(files or {})}.items():
            _check_rel(rel, where)
            mime = mime_type_of(rel)
            if callable(content):
                entries.append(SkillFile(file_uri(path, rel), rel, mime, produce=content))
                continue
            data = content.encode() if isinstance(content, str) else bytes(content)
            total += len(data)
            entries.append(SkillFile(file_uri(path, rel), rel, mime, len(data),
                                     digest_of(data), data=data))
        _check_limits(where, len(entries), total, self.max_files, self.max_bytes)
        skill = Skill(path, name, front, tuple(entries), prefix=prefix)
        self._put(skill, new=True)
        return skill

    def remove(self, uri: str) -> None:
        """Stop serving the skill whose ``SKILL.md`` is at ``uri``."""
        with self._lock:
            skill = self._skills.pop(uri)
            self._rebuild()
        self.notices.changed(skill, None)

    def _load_directory(self, root: Path, prefix: str | None) -> Skill:
        if not (root / SKILL_MD).is_file():
            raise SkillError(f"{root}: a skill directory must contain {SKILL_MD}")
        name = check_name(root.name, str(root))
        path = _skill_path(prefix, name)
        scanned = scan_directory(root, self.max_files, self.max_bytes)
        text = read_confined(root, SKILL_MD, self.max_bytes).decode("utf-8", "replace")
        front = parse_frontmatter(text, str(root / SKILL_MD))
        if front["name"] != name:
            raise SkillError(f"{root / SKILL_MD}: its frontmatter names the skill "
                             f"{front['name']!r}, but its directory is {name!r}")
        ordered = sorted(scanned, key=lambda f: (f.rel != SKILL_MD, f.rel))
        files = tuple(SkillFile(file_uri(path, f.rel), f.rel, mime_type_of(f.rel), f.size,
                                f.digest) for f in ordered)
        return Skill(path, name, front, files, root=root, prefix=prefix)

    def _check_new(self, skill: Skill) -> None:
        if skill.uri in self._skills:
            raise SkillError(f"a skill is already served at {skill.uri}")
        for f in skill.files:
            held = self._files.get(f.uri)
            if held is not None and not self._nests(held[0], skill):
                raise SkillError(f"{f.uri} is already served by the skill at {held[0].uri}")

    @staticmethod
    def _nests(a: Skill, b: Skill) -> bool:
        """One skill lies inside the other on disk (a nested skill shares its files)."""
        if a.root is None or b.root is None:
            return False
        return a.root in b.root.parents or b.root in a.root.parents

    def _put(self, skill: Skill, new: bool, notify: bool = True) -> None:
        with self._lock:
            if new:
                if len(self._skills) >= self.max_skills and skill.uri not in self._skills:
                    raise SkillError(f"{skill.uri}: the server serves at most "
                                     f"{self.max_skills} skills")
                self._check_new(skill)
            old = self._skills.get(skill.uri)
            self._skills[skill.uri] = skill
            self._rebuild()
            self._install()
        if notify:
            self.notices.changed(old, skill)

    def _install(self) -> None:
        """With the first skill: declare the extension and add its methods."""
        if self._installed:
            return
        self._installed = True
        settings = {"directoryRead": True} if self.directory_read else {}
        self.server.registry.declare_extension(SKILLS_EXTENSION, settings)
        install(self.server, self)

    def _rebuild(self) -> None:
        files: dict[str, tuple[Skill, SkillFile]] = {}
        dirs: dict[str, dict[str, dict[str, Any]]] = {}
        for skill in self._skills.values():
            for f in skill.files:
                if f.rel == SKILL_MD or f.uri not in files:  # a nested skill's own SKILL.md
                    files[f.uri] = (skill, f)
        for skill in self._skills.values():
            for f in skill.files:
                parts = f.rel.split("/")
                parent = f"skill://{skill.path}"
                dirs.setdefault(parent, {})
                for i, part in enumerate(parts[:-1]):
                    child = file_uri(skill.path, "/".join(parts[:i + 1]))
                    dirs[parent].setdefault(child, {"uri": child, "name": part,
                                                    "mimeType": DIRECTORY_MIME})
                    dirs.setdefault(child, {})
                    parent = child
                owner, own = files[f.uri]
                dirs[parent].setdefault(f.uri, own.describe(owner))
        self._files = files
        self._dirs = {uri: sorted(children.values(), key=lambda c: str(c["uri"]))
                      for uri, children in dirs.items()}
        self._listed = [_Listed(f.describe(s)) for s, f in files.values()]
        self.server.registry.changed("resources")

    # -- what the methods read ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._skills)

    def get(self, uri: str) -> Skill | None:
        return self._skills.get(uri)

    def entries(self) -> list[dict[str, Any]]:
        return [s.entry() for s in list(self._skills.values())]

    def listed(self) -> list[_Listed]:
        """The skill files, for ``resources/list``."""
        return self._listed

    def serves(self, uri: str) -> bool:
        return uri in self._files

    def subscribe(self, ctx: Context, uri: str) -> None:
        """A legacy session's ``resources/subscribe`` to a skill URI (see :attr:`notices`)."""
        self.notices.subscribe(ctx, uri)

    def unsubscribe(self, ctx: Context, uri: str) -> None:
        self.notices.unsubscribe(ctx, uri)

    def children(self, uri: str, cursor: Any) -> dict[str, Any]:
        """``resources/directory/read``: one page of a directory's direct children."""
        children = self._dirs.get(uri)
        if children is None:
            what = "is not a directory resource" if uri in self._files else \
                "is not a directory this server serves"
            raise MCPError(INVALID_PARAMS, f"{uri} {what}", {"uri": uri})
        page, next_cursor = paginate(children, cursor, self.server.page_size)
        result: dict[str, Any] = {"resources": list(page)}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def read(self, uri: str) -> dict[str, Any]:
        """``resources/read`` of a skill file (its bytes checked against the manifest)."""
        held = self._files.get(uri)
        if held is None:
            raise MCPError(INVALID_PARAMS, f"No skill file is served at {uri}", {"uri": uri})
        skill, f = held
        try:
            data = await self._bytes(skill, f)
        except SkillError as exc:
            log.error("skill file %s refused: %s", uri, exc)
            await self._refresh_soon(skill)
            raise MCPError(INVALID_PARAMS, f"{uri} cannot be served: the skill's files "
                           "changed and break its rules", {"uri": uri}) from None
        if f.digest is not None and digest_of(data) != f.digest:
            await self._refresh_soon(skill)
        entry: dict[str, Any] = {"uri": uri, "mimeType": f.mime_type}
        text = _as_text(data) if is_text(f.mime_type) else None
        if text is not None:
            entry["text"] = text
        else:
            entry["blob"] = base64.b64encode(data).decode()
        return {"contents": [entry]}

    async def _bytes(self, skill: Skill, f: SkillFile) -> bytes:
        if f.data is not None:
            return f.data
        if f.produce is not None:
            made = await _awaited(call_handler(f.produce, {}))
            data = made.encode() if isinstance(made, str) else bytes(made)
            if len(data) > self.max_bytes:
                raise SkillError(f"{f.uri}: made {len(data)} bytes, over the limit of "
                                 f"{self.max_bytes}")
            return data
        assert skill.root is not None
        # What the skill's byte bound leaves this file, the other files as the manifest says.
        others = sum(o.size or 0 for o in skill.files if o.uri != f.uri)
        root, rel, limit = skill.root, f.rel, self.max_bytes - others
        result = await _awaited(call_handler(lambda: read_confined(root, rel, limit), {}))
        return bytes(result)

    # -- changes --------------------------------------------------------------------------
    def refresh(self) -> list[str]:
        """Read every skill on disk again; apply and announce what changed.  Returns the
        URIs announced as updated.  Blocks on the disk: call it off the IOLoop, or use
        :meth:`watch`."""
        changed: list[str] = []
        for skill in [s for s in list(self._skills.values()) if s.root is not None]:
            changed += self._refresh_one(skill)
        return changed

    async def watch(self, interval: float = 2.0) -> None:
        """Poll the skills on disk every ``interval`` seconds (in a thread) until
        cancelled: ``asyncio.create_task(server.skills.watch())``."""
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(self.refresh)
            except Exception:
                log.exception("refreshing the skills failed")

    async def _refresh_soon(self, skill: Skill) -> None:
        if skill.root is not None:
            await asyncio.to_thread(self._refresh_one, skill)

    def _refresh_one(self, skill: Skill) -> list[str]:
        assert skill.root is not None
        try:
            fresh: Skill | None = self._load_directory(skill.root, skill.prefix)
        except SkillError as exc:
            log.error("skill %s withdrawn: %s", skill.uri, exc)
            fresh = None
        with self._lock:
            current = self._skills.get(skill.uri)
            if current is None or (fresh is not None and fresh.files == current.files
                                   and fresh.frontmatter == current.frontmatter):
                return []
            if fresh is None or fresh.uri != current.uri:
                del self._skills[skill.uri]
                self._rebuild()
                fresh = None
            else:
                self._skills[skill.uri] = fresh
                self._rebuild()
        return self.notices.changed(current, fresh)


def _as_text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


async def _awaited(value: Any) -> Any:
    if asyncio.isfuture(value) or asyncio.iscoroutine(value):
        return await value
    return value

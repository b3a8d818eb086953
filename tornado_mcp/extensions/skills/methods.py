"""The methods of the skills extension: ``skills/list``, ``skills/get`` and
``resources/directory/read`` (see :mod:`tornado_mcp.extensions.skills`), and the notices of
a skill's changes.

They are added to the server as its own methods when the first skill is registered;
``resources/list``, ``resources/read`` and ``resources/subscribe`` reach the catalog through
the hooks in :mod:`tornado_mcp.server.builtins`.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ...protocol import INVALID_PARAMS, RESOURCES_UPDATED
from ...protocol.errors import MCPError
from ...protocol.pagination import paginate
from ...protocol.shapes import CURSOR_PARAMS, URI_PARAMS, load
from ...server.context import Context

if TYPE_CHECKING:
    from ...server.session import Session
    from ..host import ExtensionHost
    from .catalog import Skill, SkillCatalog

SKILLS_LIST = "skills/list"
SKILLS_GET = "skills/get"
DIRECTORY_READ = "resources/directory/read"
#: Skill URIs one legacy session may subscribe to at most.
MAX_SKILL_SUBSCRIPTIONS = 100


def install(server: ExtensionHost, catalog: SkillCatalog) -> None:
    """Add the extension's methods to ``server``."""

    def cacheable(result: dict[str, Any], ctx: Context) -> dict[str, Any]:
        if ctx.modern:
            result["ttlMs"] = server.ttl_ms
            result["cacheScope"] = server.cache_scope
        return result

    async def skills_list(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        p = load(CURSOR_PARAMS, params or {}, SKILLS_LIST)
        page, next_cursor = paginate(catalog.entries(), p.get("cursor"), server.page_size)
        result: dict[str, Any] = {"skills": list(page)}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return cacheable(result, ctx)

    async def skills_get(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        uri = load(URI_PARAMS, params or {}, SKILLS_GET)["uri"]
        skill = catalog.get(uri)
        if skill is None:
            raise MCPError(INVALID_PARAMS, f"No skill is served at {uri}", {"uri": uri})
        return cacheable({"skill": skill.entry()}, ctx)

    async def directory_read(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        uri = load(URI_PARAMS, params or {}, DIRECTORY_READ)["uri"]
        cursor = load(CURSOR_PARAMS, params, DIRECTORY_READ).get("cursor")
        return cacheable(catalog.children(uri, cursor), ctx)

    server.registry.add_method(SKILLS_LIST, skills_list)
    server.registry.add_method(SKILLS_GET, skills_get)
    if catalog.directory_read:
        server.registry.add_method(DIRECTORY_READ, directory_read)

class SkillNotices:
    """Who hears of a skill's changes: listen streams (through the server) and the legacy
    sessions that subscribed to a skill URI (at most :data:`MAX_SKILL_SUBSCRIPTIONS`
    each)."""

    def __init__(self, server: ExtensionHost) -> None:
        self.server = server
        self.watchers: weakref.WeakKeyDictionary[Session, set[str]] = \
            weakref.WeakKeyDictionary()

    def changed(self, old: Skill | None, new: Skill | None) -> list[str]:
        before = {f.uri: f.digest for f in old.files} if old else {}
        after = {f.uri: f.digest for f in new.files} if new else {}
        changed = sorted(u for u in before.keys() | after.keys()
                         if before.get(u, "-") != after.get(u, "-") or after.get(u) is None)
        if old is not None and (new is None or changed or old.frontmatter != new.frontmatter):
            changed = sorted({*changed, old.uri})
        if before.keys() != after.keys():
            self.server.notify_resources_list_changed()
        if old is None:
            return []
        for uri in changed:
            for session, uris in list(self.watchers.items()):
                if uri in uris:
                    session.send_notification(RESOURCES_UPDATED, {"uri": uri})
            self.server.notify_resources_updated(uri)
        return changed

    def subscribe(self, ctx: Context, uri: str) -> None:
        if ctx.session is None:
            return
        uris = self.watchers.setdefault(ctx.session, set())
        if uri not in uris and len(uris) >= MAX_SKILL_SUBSCRIPTIONS:
            raise MCPError(INVALID_PARAMS, f"A session may subscribe to at most "
                           f"{MAX_SKILL_SUBSCRIPTIONS} skill resources", {"uri": uri})
        uris.add(uri)

    def unsubscribe(self, ctx: Context, uri: str) -> None:
        if ctx.session is not None:
            self.watchers.get(ctx.session, set()).discard(uri)

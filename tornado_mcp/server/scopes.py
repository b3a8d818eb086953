"""Scopes required per tool, prompt and resource, and hiding what a caller may not use.

Declared where the primitive is registered::

    @server.tool(scopes=["notes:write"])
    def add_note(text: str) -> str: ...

    @server.resource("note://{name}", scopes=["notes:read"])
    def note(name: str) -> str: ...

A call without every declared scope is refused before the handler runs: 403 with
``error="insufficient_scope"`` and the scopes needed (so an OAuth client can step up), or
401 when the caller is not authenticated at all.  With the transport option
``hide_unauthorized`` the lists (``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list``) leave out what the caller could not call.  Nothing is
checked, and nothing costs anything, until a first scope is declared.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..protocol import (
    COMPLETION_COMPLETE,
    INVALID_PARAMS,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_TEMPLATES_LIST,
    TOOLS_CALL,
    TOOLS_LIST,
)
from ..protocol.auth_errors import AuthError, insufficient, missing
from ..protocol.errors import MCPError
from ..protocol.identity import Principal
from ..protocol.uritemplate import UriTemplate

#: list method -> (result key, the item field naming it, the call method it lists for)
LISTS = {
    TOOLS_LIST: ("tools", "name", TOOLS_CALL),
    PROMPTS_LIST: ("prompts", "name", PROMPTS_GET),
    RESOURCES_LIST: ("resources", "uri", RESOURCES_READ),
    RESOURCES_TEMPLATES_LIST: ("resourceTemplates", "uriTemplate", RESOURCES_READ),
}


class ScopeRules:
    """Which scopes each tool, prompt and resource needs (``server.scope_rules``)."""

    __slots__ = ("_named", "_templates", "active")

    def __init__(self) -> None:
        self._named: dict[tuple[str, str], frozenset[str]] = {}
        self._templates: dict[str, tuple[UriTemplate, frozenset[str]]] = {}
        #: True once any scope is declared: only then is anything checked.
        self.active = False

    def require(self, method: str, name: str, scopes: Iterable[str] | None) -> None:
        """Calling ``method`` (``tools/call``, ``prompts/get``, ``resources/read``) on
        ``name`` (a tool or prompt name, a resource URI or URI template) needs ``scopes``;
        ``None`` or empty removes the requirement."""
        needed = frozenset(scopes or ())
        if method == RESOURCES_READ and "{" in name:
            self._templates.pop(name, None)
            if needed:
                self._templates[name] = (UriTemplate(name), needed)
        else:
            self._named.pop((method, name), None)
            if needed:
                self._named[(method, name)] = needed
        self.active = bool(self._named or self._templates)

    def needed(self, method: str, name: str) -> frozenset[str]:
        """The scopes calling ``method`` on ``name`` needs (empty: none); for a resource,
        ``name`` is a URI or (completing a template's arguments) the URI template."""
        found = self._named.get((method, name))
        if found is not None:
            return found
        if method == RESOURCES_READ:
            exact = self._templates.get(name)
            if exact is not None:
                return exact[1]
            for template, scopes in self._templates.values():
                if template.match(name) is not None:
                    return scopes
        return frozenset()

    def authorize(self, method: str, params: Any, principal: Principal) -> None:
        """Raise :class:`AuthError` unless ``principal`` may make this call."""
        target = _target(method, params)
        if target is not None:
            self.authorize_target(*target, principal)

    def authorize_target(self, method: str, name: str, principal: Principal) -> None:
        """Raise :class:`AuthError` unless ``principal`` may call ``method`` on ``name``
        (subscribing to a resource, or completing its arguments, needs what reading it
        needs; completing a prompt's arguments, what getting it needs)."""
        scopes = self.needed(method, name)
        if scopes and not principal.has_scopes(*scopes):
            raise _refusal(principal, scopes)

    def visible(self, method: str, result: dict[str, Any], principal: Principal
                ) -> dict[str, Any]:
        """``result`` of a list method without the items ``principal`` may not call."""
        spec = LISTS.get(method)
        if spec is None:
            return result
        key, field, call = spec
        items = result.get(key)
        if not isinstance(items, list):
            return result
        if call == RESOURCES_READ and field == "uriTemplate":
            def allowed(item: dict[str, Any]) -> bool:
                entry = self._templates.get(str(item.get(field)))
                return entry is None or principal.has_scopes(*entry[1])
        else:
            def allowed(item: dict[str, Any]) -> bool:
                return principal.has_scopes(*self.needed(call, str(item.get(field))))
        return {**result, key: [i for i in items if not isinstance(i, dict) or allowed(i)]}


def _target(method: str, params: Any) -> tuple[str, str] | None:
    """The primitive a request acts on, as (the method that calls it, its name or URI)."""
    if not isinstance(params, dict):
        return None
    if method == COMPLETION_COMPLETE:
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        method = PROMPTS_GET if ref.get("type") == "ref/prompt" else RESOURCES_READ
        value = ref.get("name" if method == PROMPTS_GET else "uri")
    elif method in (RESOURCES_READ, RESOURCES_SUBSCRIBE):
        method, value = RESOURCES_READ, params.get("uri")
    elif method in (TOOLS_CALL, PROMPTS_GET):
        value = params.get("name")
    else:
        return None
    return (method, value) if isinstance(value, str) else None


def _refusal(principal: Principal, scopes: frozenset[str]) -> AuthError:
    if not principal.authenticated:
        return missing("authentication required", scopes)
    return insufficient(scopes)


def unknown_reference() -> MCPError:
    """The answer to a completion whose ``ref`` names nothing the caller may see: the same
    for an unknown prompt or resource and, with ``hide_unauthorized``, for a hidden one."""
    return MCPError(INVALID_PARAMS, "Invalid params: completion ref names no prompt or "
                                    "resource template")

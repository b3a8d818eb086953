"""The registry's read API: what the built-in methods (:mod:`.builtins`, typed against its
``Host``) and the extensions read of the registered tools, resources, templates and
prompts, without touching the registry's private state.  :class:`~.registry.Registry`
inherits it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .contract import HandlerSpec
from .primitives import Prompt, Resource, ResourceTemplate, Tool


class RegistryReads:
    """Read access to what a :class:`~.registry.Registry` holds."""

    _tools: dict[str, Tool]
    _resources: dict[str, Resource]
    _templates: dict[str, ResourceTemplate]
    _prompts: dict[str, Prompt]
    _cache: dict[str, Any]
    _completion: HandlerSpec | None
    _subscribe: HandlerSpec | None
    _unsubscribe: HandlerSpec | None

    def get_tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def get_prompt(self, name: str) -> Prompt | None:
        return self._prompts.get(name)

    def get_resource(self, uri: str) -> Resource | None:
        return self._resources.get(uri)

    def get_template(self, uri_template: str) -> ResourceTemplate | None:
        """The resource template registered as exactly ``uri_template``."""
        return self._templates.get(uri_template)

    def match_template(self, uri: str) -> tuple[ResourceTemplate, dict[str, str]] | None:
        """The first resource template matching ``uri``, with its variables."""
        for tpl in self._templates.values():
            variables = tpl.template.match(uri)
            if variables is not None:
                return tpl, variables
        return None

    def listing(self, kind: str, items: Iterable[Any] | None = None) -> list[dict[str, Any]]:
        """What ``tools/list`` (``kind`` "tools"), ``resources/list`` ("resources"),
        ``resources/templates/list`` ("templates") or ``prompts/list`` ("prompts") show, in
        order of registration; kept until the next change of that kind.  ``items``: what
        to describe instead, for a variant of a kind cached under its own name (the list
        one kind of client sees)."""
        cached: list[dict[str, Any]] | None = self._cache.get(kind)
        if cached is None:
            source = self.primitives(kind) if items is None else items
            cached = self._cache[kind] = [i.describe() for i in source]
        return cached

    def primitives(self, kind: str) -> Iterable[Any]:
        """The registered tools, resources, templates or prompts (``kind`` as for
        :meth:`listing`), in order of registration."""
        kinds: dict[str, dict[str, Any]] = {
            "tools": self._tools, "resources": self._resources,
            "templates": self._templates, "prompts": self._prompts}
        return kinds[kind].values()

    @property
    def completion_handler(self) -> HandlerSpec | None:
        """The :meth:`~.registry.Registry.completion` handler, if one is registered."""
        return self._completion

    @property
    def subscribe_handler(self) -> HandlerSpec | None:
        """The :meth:`~.registry.Registry.on_subscribe` handler, if one is registered."""
        return self._subscribe

    @property
    def unsubscribe_handler(self) -> HandlerSpec | None:
        """The :meth:`~.registry.Registry.on_unsubscribe` handler, if one is registered."""
        return self._unsubscribe

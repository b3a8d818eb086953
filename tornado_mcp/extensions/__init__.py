"""The extensions a server serves itself, built on the protocol core: MCP Apps
(:mod:`.apps`, ``io.modelcontextprotocol/ui``) and agent skills (:mod:`.skills`,
``io.modelcontextprotocol/skills``).

They use the core (:mod:`tornado_mcp.server`) as any code above it does: they register
what they serve in the server's :class:`~tornado_mcp.server.registry.Registry` (a view's
``ui://`` resource, the skills' methods) and answer through :class:`~tornado_mcp.Context`.
The core never imports them: the built-in methods reach them through the hooks they
declare (``ListFilter`` and ``ResourceSource`` in :mod:`tornado_mcp.server.builtins`).
The :class:`~tornado_mcp.Server` holds them (:class:`.registry.Extensions`, made on first
use) and is what they see of it (:class:`.host.ExtensionHost`).
"""

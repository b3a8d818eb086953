"""The protocol core: the :class:`~tornado_mcp.Server`, its registry of tools, resources and
prompts, the built-in methods, the request :class:`~tornado_mcp.Context`, legacy sessions,
input-required rounds and request-state sealing.

No Tornado and no I/O here: the engine (:mod:`tornado_mcp.engine`) runs these for every
transport.  Imports only :mod:`tornado_mcp.protocol` and :mod:`tornado_mcp.schema`.
"""

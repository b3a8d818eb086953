"""The protocol core: the registry of tools, resources and prompts, the built-in methods,
the request :class:`~tornado_mcp.Context`, legacy sessions, input-required rounds and
request-state sealing; and the :class:`~tornado_mcp.Server` (:mod:`.server`), which holds
the core's parts and the extensions (:mod:`tornado_mcp.extensions`) together.

No Tornado and no I/O here: the engine (:mod:`tornado_mcp.engine`) runs these for every
transport.  The core imports only :mod:`tornado_mcp.protocol`, :mod:`tornado_mcp.schema`
and :mod:`tornado_mcp.sync`; only :mod:`.server` also imports the extensions, which build
on the core (``tests/project/test_architecture.py`` holds this).
"""

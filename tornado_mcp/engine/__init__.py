"""The one transport-agnostic request pipeline, and the runtime state that is not HTTP.

Every transport (Streamable HTTP in :mod:`tornado_mcp.transport`, :mod:`tornado_mcp.stdio`)
and the task runner serve requests through an :class:`~tornado_mcp.engine.engine.Engine`, so
a promise kept here (middleware, the rate limit, scopes, tasks, the sync-handler pool, the
error map) holds on every transport.
"""

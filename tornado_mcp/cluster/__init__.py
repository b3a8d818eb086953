"""Several processes, on one host or many, behaving like one MCP server through Redis.

One process needs none of this (and no Redis).  When a deployment names a Redis
(``--redis-url`` on the demo and example servers, or :class:`Cluster` in your own code),
each process joins a cluster that shares:

- **notifications**, on a bounded Redis Stream every process follows from its last seen
  id, so a Redis outage delays delivery instead of losing it
  (:mod:`~tornado_mcp.cluster.feed`);
- **live limits and the requestState key** (:mod:`~tornado_mcp.cluster.shared`);
- **who is alive**, through heartbeats with a TTL, which the dashboard shows and
  ``GET /admin/api/cluster`` answers (:mod:`~tornado_mcp.cluster.members`);
- **where a legacy session lives**: its id starts with the id of the process that
  created it, so another process forwards its requests there, or answers 421 naming the
  process when it cannot (``docs/deploy.md``).

Requires ``pip install 'tornado-mcp[redis]'`` (redis-py's asyncio client).
"""

from __future__ import annotations

from ..introspection import ClusterSnapshot, ProcessInfo
from .core import Cluster
from .link import Link

__all__ = ["Cluster", "ClusterSnapshot", "Link", "ProcessInfo"]

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
  created it, so another process forwards its requests there, answers 503 with
  ``Retry-After`` while it cannot tell whether that process lives, or 421 naming the
  process when it cannot forward; a process that drains hands its sessions to the others
  (:mod:`~tornado_mcp.cluster.sessions`, ``docs/deploy.md``);
- **cluster-wide caps**, reserved in Redis before each admission
  (:mod:`~tornado_mcp.cluster.caps`);
- **tasks and resumable streams' events**, through
  :class:`~tornado_mcp.cluster.task_store.RedisTaskStore` and
  :class:`~tornado_mcp.cluster.event_store.RedisEventStore` built on the cluster's
  :class:`Link`: one Redis client per process, one view of outages, one liveness signal.

``url`` may name a primary kept by Redis Sentinel (``redis+sentinel://...``,
:func:`~tornado_mcp.cluster.link.client_for`): the cluster follows a failover.

Requires the ``redis`` extra (``pip install '.[redis]'`` in a clone: redis-py's asyncio
client).
"""

from __future__ import annotations

from ..introspection import ClusterSnapshot, ProcessInfo
from .core import Cluster
from .link import Link

__all__ = ["Cluster", "ClusterSnapshot", "Link", "ProcessInfo"]

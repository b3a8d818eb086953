"""Cluster members served in the test process: each a Tornado server on its own loopback
port, joined to Redis through one :class:`~tornado_mcp.cluster.Link` shared by its task
and event stores (as the command line builds them), quicker to start than a process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import tornado.httpserver
import tornado.web
from mcp_http import TIMEOUT, Running, example_server, loopback_sockets, wait_until
from redis_proc import RedisProc

from tornado_mcp import Server, Transport
from tornado_mcp.cluster import Cluster, Link
from tornado_mcp.cluster.event_store import RedisEventStore
from tornado_mcp.cluster.task_store import RedisTaskStore

WAIT = 15.0


class Node:
    """One cluster member serving MCP on a loopback port."""

    def __init__(self, srv: Running, cluster: Cluster,
                 http: tornado.httpserver.HTTPServer) -> None:
        self.srv, self.cluster, self.http = srv, cluster, http
        self.transport = srv.transport

    async def sigterm(self) -> None:
        """What the command line does on SIGTERM."""
        self.http.stop()
        await self.transport.close()
        await self.cluster.close()


@contextlib.asynccontextmanager
async def node(redis: RedisProc | None, server: Server | None = None, url: str | None = None,
               **options: Any) -> AsyncIterator[Node]:
    """A member on ``redis`` (or at ``url``: a proxy in front of it, or Sentinel's)."""
    options.setdefault("shutdown_grace", 5.0)
    authenticate = options.pop("authenticate", None)
    assert url is not None or redis is not None
    link = Link(url or redis.url)  # type: ignore[union-attr]
    transport = Transport(server or example_server(), event_store=RedisEventStore(link=link),
                          task_store=RedisTaskStore(link=link), authenticate=authenticate,
                          **options)
    http = tornado.httpserver.HTTPServer(tornado.web.Application(transport.routes("/mcp")))
    sockets = loopback_sockets()
    http.add_sockets(sockets)
    srv = Running(transport.server, transport, sockets[0].getsockname()[1])
    cluster = Cluster(transport, link=link, advertise_url=srv.url)
    await cluster.start()
    try:
        yield Node(srv, cluster, http)
    finally:
        srv.client.close()
        http.stop()
        await asyncio.wait_for(transport.close(), TIMEOUT)
        await asyncio.wait_for(cluster.close(), TIMEOUT)
        await asyncio.wait_for(http.close_all_connections(), TIMEOUT)


async def until_listed(a: Node, b: Node) -> None:
    await wait_until(lambda: b.cluster.id in a.cluster.members.others
                     and a.cluster.id in b.cluster.members.others, WAIT)


async def until_connected(n: Node, state: bool = True) -> None:
    await wait_until(lambda: n.cluster.link.connected is state, WAIT)

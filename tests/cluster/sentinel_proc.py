"""A Redis primary with a replica, watched by three real ``redis-sentinel`` processes (the
Debian package ``redis-sentinel``), on loopback TCP ports: what a production cluster runs
instead of one Redis.  :meth:`Sentinels.kill_primary` is the failure the sentinels then
repair by promoting the replica (``down-after-milliseconds`` 1000: a failover takes a few
seconds)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from nginx_proc import free_port

REDIS = shutil.which("redis-server")
SENTINEL = shutil.which("redis-sentinel") or ("/usr/bin/redis-sentinel"
                                              if Path("/usr/bin/redis-sentinel").exists()
                                              else None)
SERVICE = "mymaster"
START_TIMEOUT_S = 20.0
#: How long the sentinels wait before they call the primary down (milliseconds).
DOWN_AFTER_MS = 1000


class Sentinels:
    def __init__(self) -> None:
        if REDIS is None or SENTINEL is None:
            if os.environ.get("CI"):
                pytest.fail("redis-server or redis-sentinel is not installed "
                            "(./dev test installs them)")
            pytest.skip("redis-server or redis-sentinel is not installed")
        self.workdir = Path(tempfile.mkdtemp(prefix="tmcp-sentinel-"))
        self.primary_port, self.replica_port = free_port(), free_port()
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}/0"

    def _redis(self, name: str, port: int, *extra: str) -> None:
        assert REDIS is not None
        data = self.workdir / name
        data.mkdir()
        self.procs[name] = subprocess.Popen(
            [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(data), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self) -> None:
        self._redis("primary", self.primary_port)
        self._redis("replica", self.replica_port, "--replicaof", "127.0.0.1",
                    str(self.primary_port))
        for n, port in enumerate(self.sentinel_ports):
            conf = self.workdir / f"sentinel-{n}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self.workdir}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary_port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} 5000\n"
                f"sentinel parallel-syncs {SERVICE} 1\n")
            assert SENTINEL is not None
            self.procs[f"sentinel-{n}"] = subprocess.Popen(
                [SENTINEL, str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._until(self._ready, "the replica and the sentinels did not come up")

    def _until(self, check: object, message: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if check():  # type: ignore[operator]
                    return
            except (redis.RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(message)
            time.sleep(0.1)

    def _ready(self) -> bool:
        replica = redis.Redis(port=self.replica_port, socket_timeout=1)
        try:
            if replica.info("replication").get("master_link_status") != "up":
                return False
        finally:
            replica.close()
        for port in self.sentinel_ports:  # each knows the replica and the other two
            s = redis.Redis(port=port, socket_timeout=1)
            try:
                if len(s.sentinel_slaves(SERVICE)) != 1 or \
                        len(s.sentinel_sentinels(SERVICE)) != 2:
                    return False
            finally:
                s.close()
        return True

    def primary(self) -> int:
        """The port of the primary the sentinels name now."""
        s = redis.Redis(port=self.sentinel_ports[0], socket_timeout=1)
        try:
            _host, port = s.sentinel_get_master_addr_by_name(SERVICE)
            return int(port)
        finally:
            s.close()

    def in_sync(self) -> bool:
        """The replica has everything the primary wrote."""
        primary = redis.Redis(port=self.primary_port, socket_timeout=1)
        replica = redis.Redis(port=self.replica_port, socket_timeout=1)
        try:
            offset = primary.info("replication")["master_repl_offset"]
            return bool(replica.info("replication")["slave_repl_offset"] >= offset)
        finally:
            primary.close()
            replica.close()

    def kill_primary(self) -> None:
        self.procs["primary"].kill()
        self.procs["primary"].wait(timeout=10)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture(name="sentinels")
def sentinels_fixture() -> Iterator[Sentinels]:
    """A primary, its replica and three sentinels, stopped after the test."""
    s = Sentinels()
    try:
        s.start()
        yield s
    finally:
        s.stop()


SEQ = "test://seq/"


async def failover_under_load(sentinels: Sentinels, before_s: float = 1.0,
                              during_s: float = 8.0) -> dict[str, Any]:
    """Two members on ``sentinels``; one publishes a numbered notification every 2 ms
    while the primary is killed; what the other received, and what else survived."""
    from mcp_http import rpc
    from nodes import WAIT, node, until_listed
    from tasks.tasks_http import start, until

    async with node(None, url=sentinels.url) as a, node(None, url=sentinels.url) as b:
        await until_listed(a, b)
        assert a.cluster.feed.replicas == 1  # batches wait for the replica
        got: list[int] = []
        deliver = b.cluster.feed.deliver

        def record(method: str, params: dict[str, Any] | None) -> None:
            uri = (params or {}).get("uri", "")
            if uri.startswith(SEQ):
                got.append(int(uri[len(SEQ):]))
            deliver(method, params)

        b.cluster.feed.deliver = record
        task_id = await start(a.srv, "slow_compute", {"seconds": 2.0, "label": "f"})
        sid = await a.srv.initialize()
        sent = 0

        async def publish(seconds: float) -> None:
            nonlocal sent
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                sent += 1
                a.transport.server.notify_resources_updated(f"{SEQ}{sent}")
                await asyncio.sleep(0.002)

        async def reconnected(link: Any, since: int) -> None:
            while not (link.connected and link.reconnects > since):
                await asyncio.sleep(0.02)

        await publish(before_s)
        links = (a.cluster.link, b.cluster.link)
        before = [link.reconnects for link in links]
        publishing = asyncio.ensure_future(publish(during_s))
        killed = time.monotonic()
        sentinels.kill_primary()
        await asyncio.wait_for(asyncio.gather(*(reconnected(link, n) for link, n
                                                in zip(links, before, strict=True))), 30)
        back_after = time.monotonic() - killed
        loop = asyncio.get_running_loop()
        promoted = await loop.run_in_executor(None, sentinels.primary) == sentinels.replica_port
        await publishing

        async def delivered() -> None:
            while len(got) + b.cluster.feed.trimmed < sent:
                await asyncio.sleep(0.02)
        await asyncio.wait_for(delivered(), WAIT)
        task = await until(b.srv, task_id, timeout=WAIT)
        session = await b.srv.post(rpc("ping"), session=sid)
        return {"published": sent, "delivered": len(got), "lost": sent - len(got),
                "counted_lost": b.cluster.feed.trimmed,
                "unreplicated": a.cluster.feed.unreplicated,
                "duplicates_skipped": b.cluster.feed.duplicates,
                "in_order_once": got == sorted(set(got)), "promoted": promoted,
                "reconnected_after_s": round(back_after, 2), "task": task["status"],
                "session": session.status}

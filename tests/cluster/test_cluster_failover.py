"""The cluster on a Redis kept by Sentinel (``--redis-url redis+sentinel://...``), with a
real primary, its replica and three real ``redis-sentinel`` processes: the primary is
killed while one process publishes a numbered notification every 2 ms, the sentinels
promote the replica, and the cluster follows.  Every notification reaches the other
process once and in order; what a failover can lose (the batches no replica acknowledged
before the primary died) is counted by the publisher (``relay.unreplicated``), and what
was lost is counted by the reader as gaps (``relay.trimmed``): both are measured and
recorded.  A task and a legacy session made before the failover live on.  About 20 s
(the sentinels' start and the failover itself); ``python -m bench.cluster --failovers N``
repeats it."""

from __future__ import annotations

from typing import Any

import pytest
from sentinel_proc import Sentinels, failover_under_load, sentinels_fixture  # noqa: F401


@pytest.mark.alone  # its load is the test's own: see "alone" in ./dev
async def test_the_cluster_follows_a_sentinel_failover_under_load(
        sentinels: Sentinels, record_property: Any) -> None:
    figures = await failover_under_load(sentinels)
    record_property("failover", figures)
    print("failover:", figures)
    assert figures["promoted"]
    assert figures["in_order_once"], "a notification came twice or out of order"
    assert figures["lost"] == figures["counted_lost"]  # every loss counted where it happened
    assert figures["lost"] <= figures["unreplicated"]  # only what no replica acknowledged
    assert figures["task"] == "completed" and figures["session"] == 200

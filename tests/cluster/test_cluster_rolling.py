"""A rolling deploy of three processes under load behind nginx (:mod:`rolling`): every
process exits after its SIGTERM, no request fails (503s retried after ``Retry-After``
only), no legacy session has to initialize again, and no notification is lost while a
stream is open.  One deploy here (~1 minute on a 2-core machine); ``python -m
bench.cluster --rolling-deploys N`` runs the soak."""

from __future__ import annotations

import pytest
from nginx_proc import NGINX
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from rolling import Fleet, Load, rolling_deploy


@pytest.mark.alone  # its load is the test's own: see "alone" in ./dev
@pytest.mark.timeout(240)
async def test_a_rolling_deploy_under_load_is_not_noticed(redis: RedisProc,
                                                          record_property: object) -> None:
    if NGINX is None:
        pytest.skip("nginx is not installed (./dev test installs it)")
    fleet = Fleet(redis.url)
    fleet.start()
    try:
        figures = await rolling_deploy(fleet, Load(fleet.port))
    finally:
        fleet.stop()
    print("rolling deploy:", figures)
    record_property("rolling_deploy", figures)  # type: ignore[operator]
    assert figures["replaced"] == 3
    assert figures["failed"] == 0, (figures["failures"], "nginx's error log:", fleet.nginx_log)
    assert figures["reinitialized"] == 0
    assert figures["lost_while_open"] == 0, figures
    assert figures["delivered_to_open_streams"] > 0, figures

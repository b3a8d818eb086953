"""How fast the dashboard's token may be guessed: two token buckets, per address and overall.

Every wrong token (a failed login, a wrong ``Authorization: Bearer`` header) takes one token
from the bucket of the caller's address and one from a bucket shared by every address.  A
bucket refills continuously at its rate up to its burst.  While either bucket holds less than
one token, a request that carries a token is answered 429 with ``Retry-After`` *without the
token being compared*: a throttled caller learns nothing, and its refused attempts take
nothing from the buckets, so hammering does not lengthen the wait.  A bucket never drops
below empty, so the longest wait after the last wrong token is one refill step (one
``60 / per_minute`` seconds); after it a correct token always works.  A correct token costs
one dictionary look-up and never takes a token.  Login cookies are not throttled (their
signature cannot be guessed), so an operator already signed in is never locked out.

Memory is bounded: at most ``max_addresses`` addresses are remembered.  To remember a new one
when full, the address whose bucket is fullest (the least throttled) is forgotten, and only
if it is not throttled itself; otherwise the newcomer goes unremembered (the overall bucket
still counts it).  So churning through many addresses can never free a throttled one early.
IPv6 callers are counted per ``/64`` network, the block one host usually holds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from tornado_mcp.protocol.identity import address_key

#: Wrong tokens one address may send at once, and how many more per minute after that.
ADDRESS_BURST = 10
ADDRESS_PER_MINUTE = 10.0
#: Wrong tokens all addresses together may send at once, and how many more per minute.
OVERALL_BURST = 100
OVERALL_PER_MINUTE = 60.0
#: Addresses remembered at most (each a few dozen bytes).
MAX_ADDRESSES = 10_000


@dataclass(frozen=True)
class FailureLimits:
    """The rates of :mod:`admin_ui.throttle`; pass one as ``admin_ui.mount(failure_limits=)``."""

    address_burst: int = ADDRESS_BURST
    address_per_minute: float = ADDRESS_PER_MINUTE
    overall_burst: int = OVERALL_BURST
    overall_per_minute: float = OVERALL_PER_MINUTE
    max_addresses: int = MAX_ADDRESSES

    def __post_init__(self) -> None:
        for name in ("address_burst", "overall_burst", "max_addresses"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer of at least 1, not {value!r}")
        for name in ("address_per_minute", "overall_per_minute"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a number above 0, not {value!r}")


class _Bucket:
    __slots__ = ("stamp", "tokens")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp


def _level(bucket: _Bucket, per_second: float, burst: int, now: float) -> float:
    return min(float(burst), bucket.tokens + max(0.0, now - bucket.stamp) * per_second)


class FailureThrottle:
    """The two buckets of one dashboard mount (see the module's description)."""

    def __init__(self, limits: FailureLimits | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits or FailureLimits()
        self._clock = clock
        self._address_rate = self.limits.address_per_minute / 60.0
        self._overall_rate = self.limits.overall_per_minute / 60.0
        self._overall = _Bucket(float(self.limits.overall_burst), clock())
        self._addresses: dict[str, _Bucket] = {}

    def __len__(self) -> int:
        """How many addresses are remembered now."""
        return len(self._addresses)

    def retry_after(self, remote_ip: str | None) -> float | None:
        """Seconds until ``remote_ip`` may try a token again; ``None`` when it may now."""
        now = self._clock()
        wait = 0.0
        overall = _level(self._overall, self._overall_rate, self.limits.overall_burst, now)
        if overall < 1.0:
            wait = (1.0 - overall) / self._overall_rate
        bucket = self._addresses.get(address_key(remote_ip))
        if bucket is not None:
            mine = _level(bucket, self._address_rate, self.limits.address_burst, now)
            if mine < 1.0:
                wait = max(wait, (1.0 - mine) / self._address_rate)
        return wait if wait > 0.0 else None

    def failed(self, remote_ip: str | None) -> None:
        """Count one wrong token from ``remote_ip`` (call only after :meth:`retry_after`
        said it may try)."""
        now = self._clock()
        limits = self.limits
        self._take(self._overall, self._overall_rate, limits.overall_burst, now)
        key = address_key(remote_ip)
        bucket = self._addresses.get(key)
        if bucket is None:
            if len(self._addresses) >= limits.max_addresses and not self._evict_one(now):
                return  # every remembered address is throttled: keep them all
            bucket = self._addresses[key] = _Bucket(float(limits.address_burst), now)
        self._take(bucket, self._address_rate, limits.address_burst, now)

    @staticmethod
    def _take(bucket: _Bucket, per_second: float, burst: int, now: float) -> None:
        bucket.tokens = max(0.0, _level(bucket, per_second, burst, now) - 1.0)
        bucket.stamp = now

    def _evict_one(self, now: float) -> bool:
        """Forget the least throttled address, unless even that one is throttled."""
        rate, burst = self._address_rate, self.limits.address_burst
        key, bucket = max(self._addresses.items(),
                          key=lambda item: _level(item[1], rate, burst, now))
        if _level(bucket, rate, burst, now) < 1.0:
            return False
        del self._addresses[key]
        return True

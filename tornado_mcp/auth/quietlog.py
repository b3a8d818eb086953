"""Log lines a client can cause, at most one per interval.

A stream of bad tokens must not become a stream of log lines (a flood that buries
everything else, and fills a disk): :class:`Throttled` writes the first line, then at
most one per ``interval`` seconds, saying how many it held back since.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable


class Throttled:
    """``logger`` at most once per ``interval`` seconds."""

    def __init__(self, logger: logging.Logger, interval: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self._last: float | None = None
        #: Lines held back since the last one written.
        self.suppressed = 0

    def log(self, level: int, msg: str, *args: object) -> bool:
        """Log ``msg % args`` at ``level`` unless a line went out less than ``interval``
        ago; True when it was written."""
        now = self.clock()
        if self._last is not None and now - self._last < self.interval:
            self.suppressed += 1
            return False
        if self.suppressed:
            msg += " (%d similar lines held back)"
            args = (*args, self.suppressed)
        self._last = now
        self.suppressed = 0
        self.logger.log(level, msg, *args)
        return True

"""What the scenarios share: the run configuration and small statistics helpers."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.servers import Target


@dataclass
class Config:
    """Counts and durations for one run; ``smoke()`` shrinks them to seconds."""

    smoke: bool = False
    use_wrk: bool = True
    log_dir: Path | None = None
    # S1
    s1_connections: tuple[int, ...] = (1, 16, 64)
    s1_duration_s: float = 3.0
    s1_warmup_s: float = 1.0
    # S2
    s2_workers: int = 8
    s2_duration_s: float = 4.0
    # S3
    s3_sessions: int = 2000
    s3_init_sizes: tuple[int, ...] = (1536, 61440)
    # S4
    s4_streams: tuple[int, ...] = (200, 1000)
    s4_uris: tuple[int, ...] = (1, 1024)
    s4_rounds: int = 10
    # S5
    s5_repeats: int = 5
    log: Callable[[str], None] = field(default=print, repr=False)

    @classmethod
    def smoke_config(cls, **kw: Any) -> Config:
        return cls(
            smoke=True,
            s1_connections=(2,),
            s1_duration_s=1.0,
            s1_warmup_s=0.0,
            s2_workers=2,
            s2_duration_s=0.5,
            s3_sessions=20,
            s3_init_sizes=(1536, 61440),
            s4_streams=(5,),
            s4_uris=(1, 8),
            s4_rounds=1,
            s5_repeats=1,
            **kw,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "smoke": self.smoke,
            "loadgen": "wrk" if self.use_wrk else "python",
            "s1_connections": list(self.s1_connections),
            "s1_duration_s": self.s1_duration_s,
            "s1_warmup_s": self.s1_warmup_s,
            "s2_workers": self.s2_workers,
            "s2_duration_s": self.s2_duration_s,
            "s3_sessions": self.s3_sessions,
            "s3_init_sizes": list(self.s3_init_sizes),
            "s4_streams": list(self.s4_streams),
            "s4_uris": list(self.s4_uris),
            "s4_rounds": self.s4_rounds,
            "s5_repeats": self.s5_repeats,
        }


def pick(targets: Sequence[Target], *names: str) -> list[Target]:
    return [t for t in targets if t.name in names]


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))
    return float(ordered[index])

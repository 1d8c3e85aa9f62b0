"""A wall-clock-anchored monotonic clock shared by the engine and the simulator."""

from __future__ import annotations

import time

_WALL0 = time.time()
_PERF0 = time.perf_counter()


def now() -> float:
    """Seconds since the epoch with ``perf_counter`` precision and monotonicity.

    Anchored once per process to ``time.time()``, so samples from several processes (or
    Lambda workers) share a time base to within clock skew, while intervals measured in one
    process never jump with NTP adjustments.
    """
    return _WALL0 + (time.perf_counter() - _PERF0)

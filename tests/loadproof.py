"""Timing checks that hold on a busy machine.

A loopback timing test compares what the client measured with what the simulator recorded.
Both take their timestamps in this process, and a busy machine moves them two ways:

* a thread that should take a timestamp is not running, and the timestamp comes late by
  however long it waited (the *lag*);
* the client's own work between its timestamp and the server's (building, signing and parsing
  requests: a few milliseconds on an idle machine) takes longer in wall time when the process
  gets only part of a core (the *stretch*).

A ``LagMonitor`` measures both while the test runs: a thread asks to sleep 2 ms, over and over,
and records how much later than asked it woke; every 20th time it spins for 1 ms of its own
CPU time and records how much wall time that took. ``allowance(abs_s)`` is then the idle
machine's error bound stretched by what this run saw, plus two timestamps' lag: as tight as
before on an idle machine, and looser on a loaded one by what the load did, and no more.
Figures that depend on the client keeping up with the server (the knee of a closed-loop
sweep, the highest sustainable rate) are asserted exactly when the monitor saw an idle
machine, and within one level (one doubling) when it saw load (``loaded``): on a loaded
machine the client's own overhead, not the server, can set the neighbouring level's
throughput. The accuracy figures themselves are measured in ``benchmarks/``
(``stream_fidelity.py``, ``load_generator.py``).

``.ci/run`` runs every ``timing`` test a second time with two CPU-bound processes running.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from cdk_sagemaker_llm.benchmarking import percentile

SPIN_CPU_S = 0.001


def _spin(cpu_s: float) -> float:
    """Spin for ``cpu_s`` of this thread's CPU time; wall time over CPU time."""
    wall, cpu = time.perf_counter(), time.thread_time()
    while time.thread_time() - cpu < cpu_s:
        pass
    return (time.perf_counter() - wall) / max(time.thread_time() - cpu, 1e-9)


class LagMonitor:
    """How late this process's threads wake, sampled while the ``with`` block runs."""

    def __init__(self, interval_s: float = 0.002) -> None:
        self.interval_s = interval_s
        self.lags_s: list[float] = []
        self.stretches: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lag-monitor", daemon=True)

    def __enter__(self) -> LagMonitor:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            asked = time.perf_counter()
            time.sleep(self.interval_s)
            self.lags_s.append(max(0.0, time.perf_counter() - asked - self.interval_s))
            if len(self.lags_s) % 20 == 0:
                self.stretches.append(_spin(SPIN_CPU_S))

    def quantile(self, q: float) -> float:
        """The ``q``-th percentile (0-100) of the wake-up lags seen, in seconds."""
        return percentile(self.lags_s, q) if self.lags_s else 0.0

    @property
    def stretch(self) -> float:
        """How many times longer than its CPU time 1 ms of work took in wall time (90th
        percentile, at least 1): the share of a core this process got, inverted."""
        return max(1.0, percentile(self.stretches, 90)) if self.stretches else 1.0

    def allowance(self, abs_s: float) -> float:
        """An idle machine's absolute error bound ``abs_s``, stretched as this run's work
        was, plus the lag of two timestamps."""
        return abs_s * self.stretch + 2 * self.max_s

    @property
    def loaded(self) -> bool:
        """Whether this run saw a busy machine: work stretched to twice its CPU time, or a
        wake-up 20 ms late."""
        return self.stretch >= 2.0 or self.max_s >= 0.020

    @property
    def max_s(self) -> float:
        """The longest wait seen: a bound on how late one timestamp can come."""
        return max(self.lags_s, default=0.0)

    def __repr__(self) -> str:
        return (
            f"LagMonitor(samples={len(self.lags_s)}, p50={self.quantile(50) * 1e3:.1f} ms, "
            f"p90={self.quantile(90) * 1e3:.1f} ms, max={self.max_s * 1e3:.1f} ms, "
            f"stretch={self.stretch:.1f})"
        )

"""Live progress of a benchmark on a terminal, clean logs elsewhere.

The engine reports one line per phase (warm-up, the start and the end of each level); a level
can run for minutes between two lines. ``LiveProgress`` prints those lines and, on a terminal,
keeps a status line under them that shows the current phase's finished requests, errors and
elapsed time, redrawn in place from each finished request (the invokers' ``on_sample`` hook).
When the stream is not a terminal (CI logs, a file) only the engine's lines are written, so a
log holds no carriage returns or escape sequences.
"""

from __future__ import annotations

import threading
from typing import TextIO

from ._clock import now
from .samples import RequestSample

ERASE_LINE = "\r\x1b[K"
"""Carriage return, then erase to the end of the line (ANSI)."""


class LiveProgress:
    """Progress lines to ``stream``; use ``line`` as the engine's ``progress`` callback and
    ``record`` as the invoker's ``on_sample`` hook."""

    def __init__(self, stream: TextIO, *, live: bool | None = None, redraw_s: float = 0.2) -> None:
        """
        :param stream: where to write (the CLI passes stderr).
        :param live: draw the status line; default whether ``stream`` is a terminal.
        :param redraw_s: least time between two redraws of the status line; default 0.2 s.
        """
        self.stream = stream
        self.live = stream.isatty() if live is None else live
        self.redraw_s = redraw_s
        self._lock = threading.Lock()
        self._phase_started = now()
        self._done = 0
        self._errors = 0
        self._drawn_at: float | None = None

    def line(self, message: str) -> None:
        """Write one of the engine's lines; it starts a new phase (counters from zero)."""
        with self._lock:
            prefix = ERASE_LINE if self._drawn_at is not None else ""
            self.stream.write(f"{prefix}{message}\n")
            self.stream.flush()
            self._phase_started = now()
            self._done = self._errors = 0
            self._drawn_at = None

    def record(self, sample: RequestSample) -> None:
        """Count one finished request; redraw the status line when live and due."""
        if not self.live:
            return
        with self._lock:
            self._done += 1
            self._errors += 0 if sample.ok else 1
            t = now()
            if self._drawn_at is not None and t - self._drawn_at < self.redraw_s:
                return
            self._drawn_at = t
            self.stream.write(f"{ERASE_LINE}  {self.status(t)}")
            self.stream.flush()

    def status(self, at: float | None = None) -> str:
        """The status line: the phase's finished requests, errors and elapsed time."""
        elapsed = (now() if at is None else at) - self._phase_started
        return f"{self._done} requests done, {self._errors} errors, {elapsed:.1f} s elapsed"

"""Raw per-request measurements: what every invoker returns and every summary is built from."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

ERROR_KINDS = ("throttling", "model_error", "timeout", "other")
"""The kinds an error is counted under."""


@dataclass
class RequestSample:
    """One request as the client saw it. Times are :func:`~._clock.now` seconds (epoch-based).

    Samples are plain data (``to_dict`` / ``from_dict``) so samples of several workers can be
    merged and summarized together.
    """

    start: float
    """When the request was sent."""
    end: float
    """When the last byte of the response (or the error) arrived."""
    output_tokens: int = 0
    """From ``details.generated_tokens``, else counted."""
    first_token: float | None = None
    """Arrival of the first token (streaming only)."""
    last_token: float | None = None
    """Arrival of the last token (streaming only)."""
    stream_tokens: int = 0
    """Token events received (streaming only)."""
    error: str | None = None
    """``None`` on success, else one of :data:`ERROR_KINDS`."""
    error_code: str | None = None
    """The service or client error code, e.g. ``ThrottlingException``."""
    error_message: str | None = None
    """The error message, shortened."""
    error_status: int | None = None
    """The HTTP status of the failed response; None on success or when none came back."""
    request_id: str | None = None
    """``x-amzn-RequestId`` of the response."""
    concurrency: int = 0
    """The level this sample belongs to."""
    scheduled: float | None = None
    """When an open-loop schedule meant the request to be sent (``None``: closed loop)."""
    itl_gaps_s: list[float] | None = None
    """Streaming: every gap between consecutive token events (the pooled ITL distribution).
    Kept in memory only: :meth:`to_dict` leaves it out, so exports and the deploy-time
    workers' samples stay one small record per request."""

    @property
    def ok(self) -> bool:
        """True when the request succeeded."""
        return self.error is None

    @property
    def latency_s(self) -> float:
        """End-to-end latency."""
        return self.end - self.start

    @property
    def ttft_s(self) -> float | None:
        """Time to first token (streaming only)."""
        return None if self.first_token is None else self.first_token - self.start

    @property
    def itl_s(self) -> float | None:
        """Inter-token latency: mean gap between tokens after the first (streaming only)."""
        if self.first_token is None or self.last_token is None or self.stream_tokens < 2:
            return None
        return (self.last_token - self.first_token) / (self.stream_tokens - 1)

    @property
    def schedule_lag_s(self) -> float | None:
        """How late the request was sent against its open-loop schedule."""
        return None if self.scheduled is None else self.start - self.scheduled

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first: (latency - TTFT) / (output tokens - 1).

        vLLM ``bench serve``'s TPOT and aiperf's inter-token latency (streaming only)."""
        ttft = self.ttft_s
        if not self.ok or ttft is None or self.output_tokens < 2:
            return None
        return (self.latency_s - ttft) / (self.output_tokens - 1)

    @property
    def ms_per_token(self) -> float | None:
        """End-to-end latency / output tokens, in milliseconds."""
        if not self.ok or self.output_tokens <= 0:
            return None
        return 1000.0 * self.latency_s / self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without the token gaps, see ``itl_gaps_s``)."""
        data = dataclasses.asdict(self)
        del data["itl_gaps_s"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestSample:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)

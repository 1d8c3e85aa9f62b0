"""The loopback simulator's server-side ground truth: one ``TruthRecord`` per invocation, and
the truth read or cleared over HTTP from a simulator in another process
(``GET /_simulator/truth``, ``POST /_simulator/reset``)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any


@dataclass
class TruthRecord:
    """Server-side ground truth of one invocation; times are :func:`now` seconds."""

    request_id: str
    endpoint_name: str
    inference_component: str | None
    stream: bool
    """Called on the streaming route (InvokeEndpointWithResponseStream)."""
    input_tokens: int
    arrival: float
    streamed: bool = False
    """The body asked the container to stream (so the answer came token by token)."""
    api: str = "inputs"
    """``inputs`` (LMI/TGI generate schema), ``messages`` (chat completions) or
    ``completions`` (OpenAI completions)."""
    details: bool = False
    """The inputs API's body asked for ``details`` (``parameters.details``)."""
    route: str = "sagemaker"
    """``sagemaker`` (SageMaker Runtime) or ``openai`` (the OpenAI-compatible routes)."""
    outcome: str = "pending"
    """``ok``, ``throttled``, ``model_error``, ``timeout`` or ``pending``."""
    start: float | None = None
    first_token: float | None = None
    end: float | None = None
    output_tokens: int = 0
    instance: int = 0
    """The instance the request was routed to."""
    cached_tokens: int = 0
    """Prompt tokens found in that instance's prefix cache (not prefilled)."""
    prefix_aware_id: str | None = None
    """The ``PrefixAwareId`` header the request carried."""
    virtual_arrival: float | None = None
    """With an engine simulation: the arrival on the engine's virtual clock (simulated
    seconds, unaffected by CPU load); None under the step law."""
    virtual_first_token: float | None = None
    """With an engine simulation: the first token on the virtual clock."""
    virtual_end: float | None = None
    """With an engine simulation: the last token on the virtual clock."""

    @property
    def queue_s(self) -> float | None:
        """Time spent waiting for a batch slot."""
        return None if self.start is None else self.start - self.arrival

    @property
    def latency_s(self) -> float | None:
        """Arrival to the last byte of the response."""
        return None if self.end is None else self.end - self.arrival

    @property
    def ttft_s(self) -> float | None:
        """Arrival to the first token."""
        return None if self.first_token is None else self.first_token - self.arrival

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TruthRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def fetch_truth(endpoint_url: str) -> list[TruthRecord]:
    """Ground truth from a simulator running in another process (``GET /_simulator/truth``)."""
    import urllib.request

    with urllib.request.urlopen(f"{endpoint_url}/_simulator/truth", timeout=30) as response:
        return [TruthRecord.from_dict(item) for item in json.load(response)]


def reset_truth(endpoint_url: str) -> None:
    """Clear the ground truth of a simulator running in another process."""
    import urllib.request

    request = urllib.request.Request(f"{endpoint_url}/_simulator/reset", method="POST", data=b"")
    with urllib.request.urlopen(request, timeout=30):
        pass

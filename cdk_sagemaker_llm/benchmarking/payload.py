"""What a benchmark sends and how it reads what comes back (LMI and TGI formats).

Request payload (both containers)::

    {"inputs": "...", "parameters": {"max_new_tokens": N, "details": true}}

Responses: LMI ``{"generated_text", "details": {"finish_reason", "generated_tokens", ...}}``,
TGI ``[{"generated_text", "details": {...}}]``. Streams: LMI JSON lines
``{"token": {"id", "text", "log_prob"}}`` with ``generated_text``/``details`` last, TGI
server-sent events ``data:{...}``. Output tokens come from ``details.generated_tokens`` when
present, otherwise they are counted (stream token events, or whitespace-separated words of
``generated_text`` without streaming).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Common English words that are a single token in the usual BPE vocabularies (Llama, Mistral,
# GPT-2 style), so ``n`` space-separated words are about ``n`` input tokens.
_WORDS = (
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "on", "was",
    "he", "by", "at", "from", "his", "an", "be", "this", "are", "or", "not", "but", "had",
)  # fmt: skip

FORMATS = ("auto", "lmi", "tgi")
"""Accepted values of ``response_format``."""


def synthetic_prompt(input_tokens: int, index: int = 0) -> str:
    """A prompt of ``input_tokens`` single-token words; ``index`` rotates the words.

    Rotation gives consecutive requests different prefixes, so prefix caching does not make
    later requests cheaper than the first.
    """
    n = len(_WORDS)
    return " ".join(_WORDS[(index + k) % n] for k in range(input_tokens))


@dataclass(frozen=True)
class InvocationRequest:
    """One request as an invoker sends it."""

    body: bytes
    stream: bool
    response_format: str = "auto"
    index: int = 0


@dataclass(frozen=True)
class PayloadSpec:
    """The stated payload of a benchmark.

    Either synthetic prompts of ``input_tokens`` tokens, or prompts read from a JSONL file
    (``prompts``: local path or ``s3://bucket/key``; each line ``{"inputs": ...}``,
    ``{"prompt": ...}``, ``{"text": ...}`` or a JSON string). ``output_tokens`` becomes
    ``max_new_tokens`` unless a JSONL line sets its own.
    """

    input_tokens: int = 256
    """Input tokens of synthetic prompts. Default 256."""
    output_tokens: int = 128
    """``max_new_tokens`` of each request. Default 128."""
    stream: bool = False
    """Use InvokeEndpointWithResponseStream (measures TTFT and inter-token latency)."""
    response_format: str = "auto"
    """``lmi``, ``tgi`` or ``auto`` (detected from each response). Default auto."""
    prompts: str | None = None
    """JSONL prompts file (local path or S3 URI) instead of synthetic prompts."""
    parameters: dict[str, Any] = field(default_factory=dict)
    """Extra generation parameters merged into every request's ``parameters``."""

    def __post_init__(self) -> None:
        if self.response_format not in FORMATS:
            raise ValueError(
                f"response_format={self.response_format!r}: use one of {', '.join(FORMATS)}"
            )
        if self.input_tokens < 1 or self.output_tokens < 1:
            raise ValueError("input_tokens and output_tokens must be at least 1")

    def describe(self) -> dict[str, Any]:
        """The payload as stated in results (JSON-ready)."""
        out: dict[str, Any] = {
            "input_tokens": None if self.prompts else self.input_tokens,
            "output_tokens": self.output_tokens,
            "stream": self.stream,
            "response_format": self.response_format,
            "prompts": self.prompts or "synthetic",
        }
        if self.parameters:
            out["parameters"] = dict(self.parameters)
        return out

    def build(self, s3_client: Any = None) -> RequestFactory:
        """A factory of request bodies (reads the prompts file once, if any)."""
        lines = load_prompts(self.prompts, s3_client) if self.prompts else None
        return RequestFactory(self, lines)


def load_prompts(location: str, s3_client: Any = None) -> list[dict[str, Any]]:
    """Prompts from a JSONL file, local or ``s3://bucket/key``, as ``{"inputs", "parameters"}``."""
    if location.startswith("s3://"):
        bucket, _, key = location[5:].partition("/")
        if s3_client is None:
            import boto3

            s3_client = boto3.client("s3")
        text = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8")
    else:
        with open(location, encoding="utf-8") as handle:
            text = handle.read()
    prompts = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        item = json.loads(raw)
        if isinstance(item, str):
            item = {"inputs": item}
        inputs = item.get("inputs", item.get("prompt", item.get("text")))
        if not isinstance(inputs, str):
            raise ValueError(f"{location}:{number}: expected a string 'inputs', 'prompt' or 'text'")
        prompts.append({"inputs": inputs, "parameters": dict(item.get("parameters") or {})})
    if not prompts:
        raise ValueError(f"{location}: no prompts")
    return prompts


class RequestFactory:
    """Builds the ``index``-th request of a payload (cycling through JSONL prompts)."""

    def __init__(self, spec: PayloadSpec, prompts: Sequence[dict[str, Any]] | None) -> None:
        self.spec = spec
        self._prompts = prompts
        self._synthetic_cache: dict[int, bytes] = {}

    def __call__(self, index: int) -> InvocationRequest:
        spec = self.spec
        if self._prompts is None:
            key = index % len(_WORDS)
            body = self._synthetic_cache.get(key)
            if body is None:
                parameters = {"max_new_tokens": spec.output_tokens, "details": True}
                parameters.update(spec.parameters)
                payload = {
                    "inputs": synthetic_prompt(spec.input_tokens, key),
                    "parameters": parameters,
                }
                body = self._synthetic_cache[key] = json.dumps(payload).encode("utf-8")
        else:
            prompt = self._prompts[index % len(self._prompts)]
            parameters = {"max_new_tokens": spec.output_tokens, "details": True}
            parameters.update(spec.parameters)
            parameters.update(prompt["parameters"])
            body = json.dumps({"inputs": prompt["inputs"], "parameters": parameters}).encode()
        return InvocationRequest(body, spec.stream, spec.response_format, index)


class ResponseFormatError(ValueError):
    """A response that is not in the expected (or any known) format."""


def parse_response(body: bytes, response_format: str = "auto") -> int:
    """Output tokens of a non-streaming LMI or TGI response."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise ResponseFormatError(f"response is not JSON: {body[:80]!r}") from exc
    if isinstance(data, list):
        if response_format == "lmi" or not data or not isinstance(data[0], dict):
            raise ResponseFormatError(f"unexpected TGI-style response: {body[:80]!r}")
        data = data[0]
    elif response_format == "tgi" or not isinstance(data, dict):
        raise ResponseFormatError(f"unexpected response: {body[:80]!r}")
    details = data.get("details") or {}
    if isinstance(details, dict) and isinstance(details.get("generated_tokens"), int):
        return int(details["generated_tokens"])
    text = data.get("generated_text")
    if not isinstance(text, str):
        raise ResponseFormatError(f"no generated_text in response: {body[:80]!r}")
    return len(text.split())


class StreamModelError(Exception):
    """An error object inside a model's stream (TGI ``data:{"error": ...}``)."""


class StreamParser:
    """Incremental parser of a streamed LMI (JSON lines) or TGI (SSE) response.

    Feed it each ``PayloadPart``'s bytes with its arrival time; lines may be split across
    parts. Records the arrival time of the first and last token and counts token events.
    """

    __slots__ = ("_buffer", "first_token", "generated_tokens", "last_token", "response_format",
                 "tokens")  # fmt: skip

    def __init__(self, response_format: str = "auto") -> None:
        self.response_format = response_format
        self._buffer = b""
        self.tokens = 0
        self.first_token: float | None = None
        self.last_token: float | None = None
        self.generated_tokens: int | None = None

    def feed(self, data: bytes, t: float) -> None:
        """Parse the complete lines of ``data`` (plus any remainder of earlier parts)."""
        buffer = self._buffer + data
        if b"\n" not in buffer:
            self._buffer = buffer
            return
        *lines, self._buffer = buffer.split(b"\n")
        for line in lines:
            self._line(line, t)

    def close(self, t: float) -> None:
        """Parse whatever is left after the last part."""
        if self._buffer.strip():
            self._line(self._buffer, t)
        self._buffer = b""

    def _line(self, line: bytes, t: float) -> None:
        line = line.strip()
        if not line:
            return
        if line.startswith(b"data:"):
            if self.response_format == "lmi":
                raise ResponseFormatError("server-sent events in an LMI stream")
            line = line[5:]
        elif self.response_format == "tgi":
            if line.startswith((b":", b"event:", b"id:", b"retry:")):
                return
            raise ResponseFormatError(f"not a server-sent event: {line[:80]!r}")
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise ResponseFormatError(f"stream line is not JSON: {line[:80]!r}") from exc
        if not isinstance(event, dict):
            return
        if event.get("error"):
            raise StreamModelError(str(event["error"]))
        token = event.get("token")
        if isinstance(token, dict) and not token.get("special", False):
            self.tokens += 1
            if self.first_token is None:
                self.first_token = t
            self.last_token = t
        details = event.get("details")
        if isinstance(details, dict) and isinstance(details.get("generated_tokens"), int):
            self.generated_tokens = int(details["generated_tokens"])

    @property
    def output_tokens(self) -> int:
        """``details.generated_tokens`` if the stream carried it, else the token events."""
        return self.generated_tokens if self.generated_tokens is not None else self.tokens


def classify_error(code: str | None, message: str = "", status: int | None = None) -> str:
    """The kind of an invocation error: ``throttling``, ``model_error``, ``timeout`` or ``other``.

    ``ThrottlingException``, ``ModelNotReadyException`` and HTTP 429 are throttling; a
    ``ModelError`` or ``ModelStreamError`` whose container ran past the invocation time limit
    (``ModelInvocationTimeExceeded``, "timed out") is a timeout, like a client read timeout;
    other ``ModelError``/``ModelStreamError`` are model errors.
    """
    lowered = (message or "").lower()
    if code in ("ThrottlingException", "ModelNotReadyException", "TooManyRequestsException"):
        return "throttling"
    if status == 429:
        return "throttling"
    if code in ("ModelInvocationTimeExceeded", "ReadTimeout", "Timeout"):
        return "timeout"
    if code in ("ModelError", "ModelStreamError", "StreamModelError"):
        return "timeout" if "timed out" in lowered else "model_error"
    return "other"

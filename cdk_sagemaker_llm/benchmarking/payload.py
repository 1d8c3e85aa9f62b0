"""What a benchmark sends and how it reads what comes back: the containers' request schemas.

Three request schemas (``response_format``), each as the serving containers document it:

* ``lmi`` / ``tgi`` / ``auto`` (the *inputs* API)::

      {"inputs": "...", "parameters": {"max_new_tokens": N, "details": true}, "stream": true}

  ``"stream": true`` is sent only for streaming benchmarks: both containers stream only when
  the body asks. LMI reads ``stream`` at the top level of the body (djl-serving's input
  parser moves it into the request's parameters; releases that read ``parameters.stream``
  overwrite or default it from the top-level field, so the top level works for all of them;
  "LMI handlers Inference API Schema", djl-serving ``lmi_input_output_schema.md``). TGI's
  ``CompatGenerateRequest`` (SageMaker's ``/invocations`` route) has ``stream: bool``
  defaulting to false at the top level (text-generation-inference ``router/src/lib.rs``).
  Responses: LMI ``{"generated_text", "details": {"finish_reason", "generated_tokens", ...}}``,
  TGI ``[{"generated_text", "details": {...}}]``. Streams: LMI JSON lines
  ``{"token": {"id", "text", "log_prob"}}``, the last line also carrying ``generated_text``
  and ``details``; TGI server-sent events ``data:{"token": {..., "special"}, ...}``.
* ``messages`` (OpenAI chat completions, served on ``/invocations`` by LMI >= 0.28 and TGI
  >= 1.4 whenever the body has ``messages``; djl-serving ``chat_input_output_schema.md``,
  TGI ``docs/source/messages_api.md``)::

      {"messages": [{"role": "user", "content": "..."}], "max_tokens": N,
       "stream": true, "stream_options": {"include_usage": true}}

  Response ``{"choices": [{"message": {"content"}}], "usage": {"completion_tokens"}}``.
  Stream: server-sent events ``data: {"choices": [{"delta": {"content"}}]}`` (LMI releases
  before the vLLM async engine send the same chunks as JSON lines; both are read), a last
  chunk with ``usage`` (and empty ``choices``) when ``include_usage`` is set, then
  ``data: [DONE]``.

Output tokens come from ``details.generated_tokens`` or ``usage.completion_tokens`` when
present, otherwise they are counted (stream token events, or whitespace-separated words of the
generated text without streaming). A streaming request answered in one piece (a container
that was not asked to stream) is a :class:`ResponseFormatError`, not a silent lack of TTFT.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError, is_token, note_unchecked
from ..planning.workload import Shape, Workload
from ..prop_types import typed_props
from .workloads import ShapedPrompts

if TYPE_CHECKING:
    from .samples import RequestSample

# Common English words that are a single token in the usual BPE vocabularies (Llama, Mistral,
# GPT-2 style), so ``n`` space-separated words are about ``n`` input tokens.
_WORDS = (
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "on", "was",
    "he", "by", "at", "from", "his", "an", "be", "this", "are", "or", "not", "but", "had",
)  # fmt: skip


class PayloadFormat(Enum):
    """The request schema sent to the serving container and the response format it answers in.

    Streaming benchmarks add ``"stream": true`` to the body: the containers stream only when
    the body asks.
    """

    AUTO = "auto"
    """The inputs API (``{"inputs", "parameters"}``); LMI or TGI answers detected per response."""
    LMI = "lmi"
    """LMI (DJL Serving): ``{"generated_text", "details"}``, JSON-lines streams."""
    TGI = "tgi"
    """Hugging Face TGI: ``[{"generated_text", "details"}]``, server-sent-event streams."""
    MESSAGES = "messages"
    """OpenAI chat completions (``{"messages", "max_tokens"}``, served by LMI and TGI): SSE
    ``choices[0].delta.content`` chunks; token counts from ``usage`` (streams ask for it with
    ``stream_options.include_usage``). For chat-tuned models."""
    COMPLETIONS = "completions"
    """OpenAI completions (``{"prompt", "max_tokens"}``): ``choices[0].text`` (streamed as SSE
    ``choices[0].text`` chunks), token counts from ``usage``. Only for an OpenAI-compatible
    target (``--target openai``), e.g. vLLM's ``/v1/completions``."""


FORMATS = tuple(member.value for member in PayloadFormat)
"""Accepted values of ``response_format`` (the CLI's ``--format``)."""


@typed_props
@dataclass(frozen=True)
class RequestProtocol:
    """How each request travels, whatever the workload: the container's request schema and
    whether the response streams.

    ::

        RequestProtocol(payload_format=PayloadFormat.MESSAGES, stream=True)
    """

    payload_format: PayloadFormat = PayloadFormat.AUTO
    """The request schema and response format (``MESSAGES`` for the chat-completions API);
    default AUTO (the inputs API, LMI or TGI answers detected)."""
    stream: bool = False
    """Use InvokeEndpointWithResponseStream and ask the container to stream (measures TTFT
    and inter-token latency); default False."""
    prefix_aware_id: str | None = None
    """Send this ``PrefixAwareId`` with every request (header
    ``X-Amzn-SageMaker-Prefix-Aware-Id``): a stable identifier that an endpoint with
    prefix-aware routing (``RoutingStrategy`` ``PREFIX_AWARE``) combines with the prompt's
    prefix to pick the instance, so that applications whose prompts share a prefix are routed
    apart (SageMaker Runtime API, ``InvokeEndpoint``); 1 to 64 characters
    (``PREFIX_AWARE_ID_MAX_LENGTH``) of letters, digits, ``-``, ``_``, ``.`` and ``:``.
    Default none."""

    def __post_init__(self) -> None:
        check_prefix_aware_id("RequestProtocol(prefix_aware_id)", self.prefix_aware_id)


PREFIX_AWARE_HEADER = "X-Amzn-SageMaker-Prefix-Aware-Id"
"""The ``PrefixAwareId`` member's header in botocore's ``sagemaker-runtime`` model."""

PREFIX_AWARE_ID_MAX_LENGTH = 64
"""The longest ``PrefixAwareId`` SageMaker accepts: botocore's ``sagemaker-runtime`` model,
shape ``PrefixAwareIdHeader`` (``max`` 64) of ``InvokeEndpoint`` and
``InvokeEndpointWithResponseStream``."""


def check_prefix_aware_id(prop: str, value: str | None) -> None:
    """A ``PrefixAwareId`` this library sends: 1 to 64 characters, letters, digits and
    ``-_.:`` (a conservative subset: the value travels in an HTTP header)."""
    if value is None:
        return
    if is_token(value):  # a deploy-time value: the service checks it
        note_unchecked(prop, "its characters and length")
        return
    if not 1 <= len(value) <= PREFIX_AWARE_ID_MAX_LENGTH or not all(
        c.isascii() and (c.isalnum() or c in "-_.:") for c in value
    ):
        raise ValidationError(
            prop,
            value,
            f"a PrefixAwareId is 1 to {PREFIX_AWARE_ID_MAX_LENGTH} letters, digits, '-', '_', "
            f"'.' or ':' (this one has {len(value)} characters)",
            "pass a stable name of your application, e.g. 'chat-app'",
        )


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
    prefix_aware_id: str | None = None
    """Sent as the ``PrefixAwareId`` header when set."""


@dataclass(frozen=True)
class PayloadSpec:
    """The stated payload of a benchmark.

    Either synthetic prompts of ``input_tokens`` tokens, or prompts read from a JSONL file
    (``prompts``: local path or ``s3://bucket/key``; each line ``{"inputs": ...}``,
    ``{"prompt": ...}``, ``{"text": ...}``, a JSON string, or, for the ``messages`` format,
    ``{"messages": [...]}``). ``output_tokens`` becomes ``max_new_tokens`` (``max_tokens``
    for ``messages``) unless a JSONL line sets its own.
    """

    input_tokens: int = 256
    """Input tokens of synthetic prompts. Default 256."""
    output_tokens: int = 128
    """``max_new_tokens`` (``max_tokens``) of each request. Default 128."""
    stream: bool = False
    """Use InvokeEndpointWithResponseStream and ask the container to stream (measures TTFT
    and inter-token latency). Default False: no ``"stream"`` in the body."""
    response_format: str = "auto"
    """``lmi``, ``tgi``, ``messages`` (OpenAI chat completions) or ``auto`` (the inputs API,
    response format detected from each response). Default auto."""
    prompts: str | None = None
    """JSONL prompts file (local path or S3 URI) instead of synthetic prompts."""
    parameters: dict[str, Any] = field(default_factory=dict)
    """Extra generation parameters merged into every request's ``parameters`` (the body's top
    level for ``messages``, e.g. ``temperature``)."""
    shape: Shape | None = None
    """A shaped workload's requests (``planning.workload``: shared prefixes, multi-turn, a
    trace) instead of alike synthetic prompts; None: alike."""
    prefix_aware_id: str | None = None
    """Sent as every request's ``PrefixAwareId`` header (``RequestProtocol.prefix_aware_id``)."""

    def __post_init__(self) -> None:
        if self.shape is not None and self.prompts:
            raise ValueError("a shaped workload builds its own prompts: drop prompts")
        check_prefix_aware_id("prefix_aware_id", self.prefix_aware_id)
        if self.response_format not in FORMATS:
            raise ValueError(
                f"response_format={self.response_format!r}: use one of {', '.join(FORMATS)}"
            )
        if self.input_tokens < 1 or self.output_tokens < 1:
            raise ValueError("input_tokens and output_tokens must be at least 1")

    @staticmethod
    def of(
        workload: Workload, protocol: RequestProtocol, *, prompts: str | None = None
    ) -> PayloadSpec:
        """The payload of ``workload``'s requests sent by ``protocol`` (with ``prompts``, a
        JSONL file's prompts instead of synthetic ones of ``workload.input_tokens``)."""
        return PayloadSpec(
            input_tokens=workload.input_tokens,
            output_tokens=workload.output_tokens,
            stream=protocol.stream,
            response_format=protocol.payload_format.value,
            prompts=prompts,
            shape=workload.shape,
            prefix_aware_id=protocol.prefix_aware_id,
        )

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
        if self.shape is not None:
            out["prompts"] = self.shape.to_dict()["kind"]
            out["workload"] = self.shape.to_dict()
        if self.prefix_aware_id is not None:
            out["prefix_aware_id"] = self.prefix_aware_id
        return out

    def build(self, s3_client: Any = None) -> RequestFactory:
        """A factory of request bodies (reads the prompts file once, if any)."""
        lines = load_prompts(self.prompts, s3_client) if self.prompts else None
        return RequestFactory(self, lines)


def load_prompts(location: str, s3_client: Any = None) -> list[dict[str, Any]]:
    """Prompts from a JSONL file, local or ``s3://bucket/key``: ``{"inputs", "parameters"}``
    or, for lines with a ``messages`` list, ``{"messages", "parameters"}``."""
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
        parameters = dict(item.get("parameters") or {})
        messages = item.get("messages")
        if messages is not None:
            if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
                raise ValueError(f"{location}:{number}: 'messages' must be a list of objects")
            prompts.append({"messages": messages, "parameters": parameters})
            continue
        inputs = item.get("inputs", item.get("prompt", item.get("text")))
        if not isinstance(inputs, str):
            raise ValueError(
                f"{location}:{number}: expected a string 'inputs', 'prompt' or 'text', "
                "or a 'messages' list"
            )
        prompts.append({"inputs": inputs, "parameters": parameters})
    if not prompts:
        raise ValueError(f"{location}: no prompts")
    return prompts


class RequestFactory:
    """Builds the ``index``-th request of a payload (cycling through JSONL prompts)."""

    def __init__(self, spec: PayloadSpec, prompts: Sequence[dict[str, Any]] | None) -> None:
        self.spec = spec
        self._prompts = prompts
        self._synthetic_cache: dict[int, bytes] = {}
        self._shaped = (
            None
            if spec.shape is None
            else ShapedPrompts(
                spec.shape, spec.output_tokens, messages=spec.response_format == "messages"
            )
        )
        if (
            prompts
            and spec.response_format != "messages"
            and any("messages" in prompt for prompt in prompts)
        ):
            raise ValueError(
                f"{spec.prompts}: 'messages' prompts need response_format='messages' "
                "(--format messages)"
            )

    def body(self, prompt: dict[str, Any]) -> dict[str, Any]:
        """The request body of one prompt (``inputs`` or ``messages``, plus ``parameters``)."""
        spec = self.spec
        if spec.response_format == "completions":
            if "messages" in prompt:
                raise ValueError(f"{spec.prompts}: 'messages' prompts need --format messages")
            return self._openai_body(
                {"prompt": prompt["inputs"], "max_tokens": spec.output_tokens}, prompt
            )
        if spec.response_format == "messages":
            messages = prompt.get("messages") or [{"role": "user", "content": prompt["inputs"]}]
            chat = {"messages": messages, "max_tokens": spec.output_tokens}
            return self._openai_body(chat, prompt)
        parameters = {"max_new_tokens": spec.output_tokens, "details": True}
        parameters.update(spec.parameters)
        parameters.update(prompt["parameters"])
        body = {"inputs": prompt["inputs"], "parameters": parameters}
        if spec.stream:
            body["stream"] = True
        return body

    def _openai_body(self, body: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any]:
        """An OpenAI-compatible body (completions or chat): ``body`` with the spec's and the
        prompt's parameters, and usage asked for in the last chunk when streaming."""
        body.update(self.spec.parameters)
        body.update(prompt["parameters"])
        if self.spec.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def __call__(self, index: int) -> InvocationRequest:
        spec = self.spec
        data: bytes | None
        if self._shaped is not None:
            data = json.dumps(self.body(self._shaped(index))).encode()
        elif self._prompts is None:
            key = index % len(_WORDS)
            data = self._synthetic_cache.get(key)
            if data is None:
                prompt = {"inputs": synthetic_prompt(spec.input_tokens, key), "parameters": {}}
                data = self._synthetic_cache[key] = json.dumps(self.body(prompt)).encode()
        else:
            data = json.dumps(self.body(self._prompts[index % len(self._prompts)])).encode()
        assert data is not None
        return InvocationRequest(
            data, spec.stream, spec.response_format, index, spec.prefix_aware_id
        )


class ResponseFormatError(ValueError):
    """A response that is not in the expected (or any known) format."""


def _chat_tokens(data: dict[str, Any], body: bytes) -> int:
    usage = data.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        return int(usage["completion_tokens"])
    choices = data.get("choices")
    first = choices[0] if choices and isinstance(choices[0], dict) else {}
    if isinstance(first.get("text"), str):  # a completion
        return len(first["text"].split())
    message = first.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise ResponseFormatError(f"no choices[0].message.content in response: {body[:80]!r}")
    return len(content.split())


def parse_response(body: bytes, response_format: str = "auto") -> int:
    """Output tokens of a non-streaming LMI, TGI or chat-completions response."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise ResponseFormatError(f"response is not JSON: {body[:80]!r}") from exc
    if response_format in ("messages", "completions") or (
        response_format == "auto" and isinstance(data, dict) and "choices" in data
    ):
        if not isinstance(data, dict) or "choices" not in data:
            raise ResponseFormatError(f"not a chat completion: {body[:80]!r}")
        return _chat_tokens(data, body)
    if isinstance(data, list):
        if response_format == "lmi" or not data or not isinstance(data[0], dict):
            raise ResponseFormatError(
                f"unexpected TGI-style response (a one-element list; pass the format tgi or "
                f"auto): {body[:80]!r}"
            )
        data = data[0]
    elif response_format == "tgi" or not isinstance(data, dict):
        raise ResponseFormatError(
            f"unexpected response (TGI answers a one-element list; for an object pass the "
            f"format lmi or auto): {body[:80]!r}"
        )
    details = data.get("details") or {}
    if isinstance(details, dict) and isinstance(details.get("generated_tokens"), int):
        return int(details["generated_tokens"])
    text = data.get("generated_text")
    if not isinstance(text, str):
        raise ResponseFormatError(f"no generated_text in response: {body[:80]!r}")
    return len(text.split())


class StreamModelError(Exception):
    """An error inside a model's stream (TGI ``data:{"error": ...}``, LMI
    ``finish_reason: "error"``); ``overloaded`` when TGI refused the request for load
    (``"error_type": "overloaded"``, its router's ``Overloaded``: 429 outside a stream)."""

    def __init__(self, message: str, *, overloaded: bool = False) -> None:
        super().__init__(message)
        self.overloaded = overloaded


_SSE_FIELDS = (b":", b"event:", b"id:", b"retry:")
_NOT_STREAMED = (
    "the container answered a streaming request in one piece: it streams only when the body "
    'asks ("stream": true)'
)


class StreamParser:
    """Incremental parser of a streamed LMI (JSON lines), TGI (SSE) or chat-completions (SSE
    or JSON lines) response.

    Feed it each ``PayloadPart``'s bytes with its arrival time; lines may be split across
    parts. Records the arrival time of the first and last token and counts token events
    (chat chunks with non-empty ``delta.content``).
    """

    __slots__ = ("_buffer", "complete", "done", "first_token", "gaps", "generated_tokens",
                 "last_token", "response_format", "tokens")  # fmt: skip

    def __init__(self, response_format: str = "auto") -> None:
        self.response_format = response_format
        self._buffer = b""
        self.tokens = 0
        self.first_token: float | None = None
        self.last_token: float | None = None
        self.generated_tokens: int | None = None
        self.gaps: list[float] = []
        """Every gap between consecutive token events (seconds)."""
        self.done = False
        """A chat stream's ``[DONE]`` arrived."""
        self.complete = False
        """The stream's last event arrived: an inputs-API event with a non-null
        ``generated_text`` (LMI's last JSON line, TGI's last event), a chat or completions
        choice with a non-null ``finish_reason``, or ``[DONE]``."""

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
        """Parse whatever is left after the last part; a :class:`ResponseFormatError` if the
        stream ended (cleanly) before its last event, so that a truncated answer counts as an
        error rather than a success with fewer tokens."""
        if self._buffer.strip():
            self._line(self._buffer, t)
        self._buffer = b""
        if not self.complete:
            raise ResponseFormatError(
                f"the stream ended before its last event (after {self.tokens} token events): "
                + (
                    "no choice with a finish_reason and no [DONE]"
                    if self.response_format in ("messages", "completions")
                    else "no event with generated_text"
                )
            )

    def _token(self, t: float) -> None:
        self.tokens += 1
        if self.first_token is None:
            self.first_token = t
        else:
            assert self.last_token is not None
            self.gaps.append(t - self.last_token)
        self.last_token = t

    def _payload(self, line: bytes) -> bytes | None:
        """The JSON of one stream line (an SSE ``data:`` field's value, or an LMI JSON line);
        None for a blank line, ``[DONE]``, or an SSE comment or other field."""
        line = line.strip()
        if not line:
            return None
        if line.startswith(b"data:"):
            if self.response_format == "lmi":
                raise ResponseFormatError("server-sent events in an LMI stream")
            line = line[5:].strip()
            if line == b"[DONE]":
                self.done = self.complete = True
                return None
        elif self.response_format != "lmi" and line.startswith(_SSE_FIELDS):
            return None  # an SSE comment or a field other than data
        elif self.response_format == "tgi":
            raise ResponseFormatError(f"not a server-sent event: {line[:80]!r}")
        return line

    def _line(self, raw: bytes, t: float) -> None:
        line = self._payload(raw)
        if line is None:
            return
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise ResponseFormatError(f"stream line is not JSON: {line[:80]!r}") from exc
        if not isinstance(event, dict):
            if isinstance(event, list) and self.tokens == 0:
                raise ResponseFormatError(_NOT_STREAMED)  # TGI's non-streamed [{...}]
            return
        if event.get("error"):
            overloaded = event.get("error_type") == "overloaded"
            raise StreamModelError(str(event["error"]), overloaded=overloaded)
        if "choices" in event or "usage" in event:
            self._chat_chunk(event, t)
        elif self.response_format in ("messages", "completions"):
            raise ResponseFormatError(f"not a completion chunk: {line[:80]!r}")
        else:
            self._inputs_event(event, t)

    def _inputs_event(self, event: dict[str, Any], t: float) -> None:
        token = event.get("token")
        details = event.get("details")
        if isinstance(details, dict) and details.get("finish_reason") == "error":
            raise StreamModelError("the model stopped with finish_reason 'error'")
        if isinstance(token, dict):
            if not token.get("special", False) and not token.get("special_token", False):
                self._token(t)
        elif "generated_text" in event and self.tokens == 0:
            raise ResponseFormatError(_NOT_STREAMED)
        if isinstance(details, dict) and isinstance(details.get("generated_tokens"), int):
            self.generated_tokens = int(details["generated_tokens"])
        if event.get("generated_text") is not None:
            self.complete = True

    def _chat_chunk(self, event: dict[str, Any], t: float) -> None:
        choices = event.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        if "message" in choice and self.tokens == 0:
            raise ResponseFormatError(_NOT_STREAMED)  # a non-streamed chat.completion
        delta = choice.get("delta")
        if isinstance(delta, dict) and delta.get("content"):
            self._token(t)
        elif isinstance(choice.get("text"), str) and choice["text"]:
            self._token(t)  # a completion chunk
        if choice.get("finish_reason") == "error":
            raise StreamModelError("the model stopped with finish_reason 'error'")
        if any(isinstance(c, dict) and c.get("finish_reason") is not None for c in choices):
            self.complete = True
        usage = event.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.generated_tokens = int(usage["completion_tokens"])

    @property
    def output_tokens(self) -> int:
        """``details.generated_tokens`` or ``usage.completion_tokens`` if the stream carried
        it, else the token events."""
        return self.generated_tokens if self.generated_tokens is not None else self.tokens

    def record(self, sample: RequestSample) -> None:
        """Copy the closed stream's token count, token times and gaps into ``sample``."""
        sample.output_tokens = self.output_tokens
        sample.stream_tokens = self.tokens
        sample.first_token = self.first_token
        sample.last_token = self.last_token
        sample.itl_gaps_s = self.gaps


def classify_error(
    code: str | None,
    message: str = "",
    status: int | None = None,
    original_status: int | None = None,
) -> str:
    """The kind of an invocation error: ``throttling``, ``model_error``, ``timeout`` or ``other``.

    ``ThrottlingException``, ``ModelNotReadyException`` and HTTP 429 are throttling, and so is
    a ``ModelError`` whose container answered 429 (``original_status``: SageMaker's
    ``OriginalStatusCode``; TGI's router refuses a request past ``max_concurrent_requests``
    with 429 "Model is overloaded"); a ``ModelError`` or ``ModelStreamError`` whose container
    ran past the invocation time limit (``ModelInvocationTimeExceeded``, "timed out") is a
    timeout, like a client read timeout; other ``ModelError``/``ModelStreamError`` are model
    errors.
    """
    lowered = (message or "").lower()
    if code in ("ThrottlingException", "ModelNotReadyException", "TooManyRequestsException"):
        return "throttling"
    if status == 429 or original_status == 429:
        return "throttling"
    if code in ("ModelInvocationTimeExceeded", "ReadTimeout", "Timeout"):
        return "timeout"
    if code in ("ModelError", "ModelStreamError", "StreamModelError"):
        return "timeout" if "timed out" in lowered else "model_error"
    return "other"

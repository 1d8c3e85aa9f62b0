"""A loopback SageMaker Runtime server that behaves like a continuous-batching LLM server.

It speaks the real REST protocol of ``InvokeEndpoint`` (``POST /endpoints/{name}/invocations``)
and ``InvokeEndpointWithResponseStream`` (``POST /endpoints/{name}/invocations-response-stream``,
an ``application/vnd.amazon.eventstream`` body of ``PayloadPart`` events), so a real boto3
``sagemaker-runtime`` client pointed at it with ``endpoint_url`` works unchanged (any dummy
credentials; signatures are not checked). The ``X-Amzn-SageMaker-Inference-Component`` header
names an inference component.

Request and response schemas (strict: what the containers accept and send; sources below):

* **Inputs API** ``{"inputs": str, "parameters": {"max_new_tokens": int, ...}, "stream": bool}``.
  The container streams only when the body asks: ``"stream": true`` at the top level (TGI
  reads nothing else; LMI, whose input parser moves the top-level field into the parameters,
  also honours ``parameters.stream`` when the top level has none).
  Non-streamed answer: LMI ``{"generated_text", "details": {"finish_reason",
  "generated_tokens", "inputs"}}``, TGI the same object in a one-element list.
  Streamed answer: LMI JSON lines (``application/jsonlines``) ``{"token": {"id", "text",
  "log_prob"}}``, the last line also carrying ``generated_text`` and ``details``; TGI
  server-sent events (``text/event-stream``) ``data:{"index", "token": {"id", "text",
  "logprob", "special"}, "generated_text", "details"}`` (both null until the last event).
  ``details`` comes only when ``parameters.details`` is true (TGI's ``GenerateParameters``
  default false): without it the object has none, and a stream's last event a null one.
  Sources: djl-serving ``serving/docs/lmi/user_guides/lmi_input_output_schema.md`` and
  ``djl_python/input_parser.py``; text-generation-inference ``router/src/lib.rs``
  (``CompatGenerateRequest``, ``StreamResponse``) and ``router/src/server.rs``
  (``/invocations`` dispatch).
* **Messages API** (OpenAI chat completions; both containers switch to it when the body has
  ``messages``): ``{"messages": [{"role", "content"}], "max_tokens": int, "stream": bool,
  "stream_options": {"include_usage": bool}}`` (``stream_options`` only with ``"stream":
  true``). Non-streamed answer ``{"id", "object": "chat.completion", "choices": [{"index",
  "message": {"role", "content"}, "finish_reason"}], "usage": {"prompt_tokens",
  "completion_tokens", "total_tokens"}}``. Streamed answer: server-sent events ``data: {...,
  "object": "chat.completion.chunk", "choices": [{"delta": {"role", "content"},
  "finish_reason"}]}`` per token, with ``include_usage`` one more chunk with ``"choices": []``
  and ``usage``, then ``data: [DONE]``. Sources: djl-serving
  ``serving/docs/lmi/user_guides/chat_input_output_schema.md``; TGI
  ``docs/source/messages_api.md``; OpenAI's chat-completions reference (``stream_options``).
* **OpenAI-compatible routes** (the same simulated engine, as a serving container run locally
  answers them): ``POST /v1/chat/completions`` (the messages API above) and
  ``POST /v1/completions`` (``{"model", "prompt": str, "max_tokens", "stream",
  "stream_options"}``; answer ``{"object": "text_completion", "choices": [{"text",
  "finish_reason"}], "usage"}``, streamed as ``data: {"choices": [{"text"}]}`` chunks, the
  usage chunk when asked, then ``data: [DONE]``), over plain HTTP: a stream is a chunked
  ``text/event-stream`` body. Sources: OpenAI's API reference (chat completions and
  completions, ``stream_options.include_usage``), vLLM's OpenAI-compatible server and TGI's
  messages API.
* **Routes.** ``InvokeEndpointWithResponseStream`` relays what the container sends as
  ``PayloadPart`` events (the ``X-Amzn-SageMaker-Content-Type`` header carries the
  container's content type): token by token when the body asked to stream, otherwise the whole
  answer in one part at the end. ``InvokeEndpoint`` returns the container's whole body, so a
  body that asked to stream gets the stream's text in one piece.
* **Errors.** A body the container refuses, or a container failure, is SageMaker's
  ``ModelError`` (HTTP 424, ``x-amzn-ErrorType``, ``OriginalStatusCode`` and
  ``OriginalMessage``: 424 for LMI's payload validation, 422 for TGI's, 500 for a failure).
  SageMaker's invocation limit is 60 s: a request unfinished ``invocation_timeout_s`` after
  arrival fails with ``ModelError`` before its first byte and with ``ModelStreamError``
  (``ModelInvocationTimeExceeded``) in the middle of a stream. Sources: the SageMaker Runtime
  API reference (``InvokeEndpoint``, ``InvokeEndpointWithResponseStream``, errors) and
  botocore's ``sagemaker-runtime`` service model.

This module is the server (connections, routing, batching, truth); its settings are
``simulator_config`` (``SimulatorConfig``), its ground truth ``simulator_truth``
(``TruthRecord``, read from another process), its command line ``simulator_cli``; what each
container reads from a body is ``simulator_requests``, how each answers (HTTP framing, errors,
whole and streamed bodies) ``simulator_responses``.

Serving a model (``SimulatorConfig(engine=EngineSimulation.of(...))``, ``cdk-sagemaker-llm
simulate --model``): each instance runs the planner's scheduler simulation of the engine
profile (``simulated_engine``: its policy over the step-cost model, each pass slept in real
time), and the truth also carries each request's times on that engine's virtual clock.

Otherwise, the step law (all times configurable and small by default, for fast tests):

* A scheduler runs decode *steps*. Each step emits one token for every request in the batch
  and lasts ``step_base_s + step_per_sequence_s x batch``, plus the prefill of requests that
  join the batch at that step (``prefill_per_input_token_s x input tokens``): per-token time
  grows with the batch.
* At most ``max_batch`` requests decode at once; the rest queue and join at step boundaries.
* With ``max_queue`` set, a request arriving while that many already wait is refused at once
  with ``ThrottlingException`` (HTTP 429, ``x-amzn-ErrorType`` header, JSON body), which
  botocore maps to a ``ClientError`` with that code.
* ``model_error_every=N`` fails every N-th invocation with ``ModelError`` (container status 500).
* ``instances=N`` puts N such servers behind the endpoint, each with its own batch, queue and
  prefix cache, and ``routing`` picks one per request as SageMaker's ``RoutingStrategy`` does:
  ``least_outstanding`` (``LEAST_OUTSTANDING_REQUESTS``, the default: fewest requests in
  flight, ties broken by a seeded draw), ``random`` (``RANDOM``), or ``prefix_aware``
  (``PREFIX_AWARE``: requests whose first ``prefix_length`` body bytes and ``PrefixAwareId``
  header agree go to the same instance unless it has ``concurrency_threshold`` requests in
  flight, then to the least outstanding one; the API reference's ``PrefixAwareRoutingConfig``
  and ``InvokeEndpoint``'s ``PrefixAwareId``). The instance is hashed from those bytes, so the
  choice is reproducible.
* ``prefix_cache_blocks=B`` gives each instance a prefix cache of ``B`` blocks of
  ``prefix_block_tokens`` prompt tokens (least recently used evicted), as vLLM's automatic
  prefix caching keeps whole blocks chained from the prompt's start: a request that joins the
  batch prefills only the tokens after its longest cached run of leading blocks
  (``TruthRecord.cached_tokens``), which shortens its TTFT. Default 0: no cache.

It binds only to 127.0.0.1 (port 0 by default) and records server-side ground truth for every
request (arrival, start of decoding, first token, end, tokens, outcome): :meth:`Simulator.truth`
in-process, or ``GET /_simulator/truth`` (and ``POST /_simulator/reset``) from another process.
Run standalone with ``cdk-sagemaker-llm simulate`` (or ``python -m
cdk_sagemaker_llm.benchmarking.simulator_cli``); it prints its URL.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import hashlib
import json
import random
import re
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from . import eventstream
from ._clock import now
from .simulator_config import ROUTINGS, SimulatorConfig
from .simulator_requests import ParsedBody, parse_body
from .simulator_responses import (
    LAST_CHUNK,
    TIMEOUT_MESSAGE,
    chunk,
    error,
    full_body,
    http_response,
    model_error,
    stream_chunk,
    stream_content_type,
)
from .simulator_truth import TruthRecord, fetch_truth, reset_truth

if TYPE_CHECKING:
    # Only a simulator that serves a model needs the engine simulation (imported where it
    # starts one): the step-law server ships without planning/scheduling in the benchmark
    # Lambda's asset (constructs/benchmark_workflow.py ENGINE_SOURCES).
    from ..planning.scheduling.state import Sequence as EngineSequence
    from .simulated_engine import EngineClock, EngineSimulation

__all__ = [
    "ROUTINGS",
    "Simulator",
    "SimulatorConfig",
    "TruthRecord",
    "fetch_truth",
    "reset_truth",
]
"""The server, and its settings and truth re-exported (where they lived before the split)."""

_PATH = re.compile(r"^/endpoints/([^/]+)/(invocations|invocations-response-stream)$")
_OPENAI_PATHS = {"/v1/chat/completions": "messages", "/v1/completions": "completions"}
_WORDS = ("the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "on")


def _engine_clock(engine: EngineSimulation) -> EngineClock:
    """The real-time clock of ``engine`` (imported here: see the TYPE_CHECKING block)."""
    from .simulated_engine import EngineClock

    return EngineClock(engine)


@dataclass(eq=False)
class _Request:
    truth: TruthRecord
    max_new_tokens: int
    writer: asyncio.StreamWriter
    done: asyncio.Future[None]
    include_usage: bool = False
    prompt: tuple[str, ...] = ()
    """The prompt's words (for the prefix cache)."""
    sequence: EngineSequence | None = None
    """With an engine simulation: the sequence the engine holds for it."""
    words: list[str] = field(default_factory=list)
    headers_sent: bool = False
    buffered: list[bytes] = field(default_factory=list)
    """The container's streamed bytes when the non-streaming route was called."""


class _Instance:
    """One server behind the endpoint: its queue, its batch, its prefix cache."""

    def __init__(self, index: int, engine: EngineSimulation | None = None) -> None:
        self.index = index
        self.clock = None if engine is None else _engine_clock(engine)
        """With an engine simulation: this instance's engine."""
        self.held: dict[EngineSequence, _Request] = {}
        """With an engine simulation: the request of each sequence the engine holds."""
        self.queue: collections.deque[_Request] = collections.deque()
        self.active: list[_Request] = []
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.cache: collections.OrderedDict[bytes, None] = collections.OrderedDict()

    @property
    def in_flight(self) -> int:
        return len(self.queue) + len(self.active)


def _block_keys(prompt: Sequence[str], block: int) -> list[bytes]:
    """Chained hashes of the prompt's whole blocks: block ``k``'s key covers blocks 0..k."""
    keys: list[bytes] = []
    previous = b""
    for start in range(0, len(prompt) - block + 1, block):
        previous = hashlib.sha256(
            previous + " ".join(prompt[start : start + block]).encode()
        ).digest()
        keys.append(previous)
    return keys


class Simulator:
    """The simulated server; use as a context manager or call :meth:`start` / :meth:`stop`.

    ``with Simulator(SimulatorConfig(max_batch=4)) as sim: url = sim.endpoint_url``
    """

    def __init__(self, config: SimulatorConfig | None = None, *, port: int = 0) -> None:
        self.config = config or SimulatorConfig()
        self._port = port
        self._truth: list[TruthRecord] = []
        self._instances: list[_Instance] = []
        self._rng = random.Random(self.config.routing_seed)
        self._invocations = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``: pass as ``endpoint_url`` to a sagemaker-runtime client."""
        return f"http://127.0.0.1:{self.port}"

    async def serve(self) -> None:
        """Start serving on the running loop (for use inside an existing event loop)."""
        self._loop = asyncio.get_running_loop()
        self._instances = [
            _Instance(index, self.config.engine) for index in range(self.config.instances)
        ]
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self._port, backlog=2048
        )
        self.port = self._server.sockets[0].getsockname()[1]
        for instance in self._instances:
            schedule = self._schedule if instance.clock is None else self._run_engine
            instance.task = asyncio.create_task(schedule(instance))

    async def aclose(self) -> None:
        """Stop serving (inside the loop that called :meth:`serve`)."""
        for instance in self._instances:
            if instance.task is not None:
                instance.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await instance.task
        if self._server is not None:
            self._server.close()
        connections = list(self._connections)
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    def start(self) -> Simulator:
        """Serve from a background thread with its own event loop; returns once listening."""
        ready = threading.Event()
        loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self.serve())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.aclose())
            loop.close()

        self._thread = threading.Thread(target=run, name="sagemaker-simulator", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        """Stop the background thread started by :meth:`start`."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- ground truth ------------------------------------------------------------------------

    def truth(self) -> list[TruthRecord]:
        """A copy of the ground truth recorded so far, in arrival order."""
        return [dataclasses.replace(record) for record in list(self._truth)]

    def reset(self) -> None:
        """Forget the recorded ground truth (and restart ``model_error_every`` counting)."""
        self._truth.clear()
        self._invocations = 0
        self._rng = random.Random(self.config.routing_seed)
        for instance in self._instances:
            instance.cache.clear()

    # -- HTTP --------------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                # The arrival: once the head is in, before the body is read and parsed (a
                # truth stamped after parsing misses this loop's work on the other requests
                # that arrived at the same moment; see benchmarks/ttft_streams.py).
                arrival = now()
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, target, _ = request_line.split(" ", 2)
                headers = {}
                for line in header_lines:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                if headers.get("expect", "").lower() == "100-continue":
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                await self._dispatch(
                    method, target.split("?", 1)[0], headers, body, writer, arrival
                )
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            writer.close()
            if task is not None:
                self._connections.discard(task)

    async def _dispatch(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
        arrival: float,
    ) -> None:
        request_id = str(uuid.uuid4())
        if path == "/_simulator/truth" and method == "GET":
            data = json.dumps([record.to_dict() for record in self._truth]).encode()
            writer.write(http_response(200, "OK", {"Content-Type": "application/json"}, data))
            return
        if path == "/_simulator/reset" and method == "POST":
            self.reset()
            writer.write(http_response(200, "OK", {}, b""))
            return
        if method == "POST" and path in _OPENAI_PATHS:
            await self._openai(_OPENAI_PATHS[path], body, writer, request_id, arrival)
            return
        match = _PATH.match(path)
        if method != "POST" or match is None:
            writer.write(error(404, "Not Found", "UnknownOperationException", request_id))
            return
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if self.config.response_format == "tgi" and content_type != "application/json":
            # TGI's axum Json extractor answers 415 "Expected request with `Content-Type:
            # application/json`" (an InvokeEndpoint without ContentType); SageMaker relays it.
            message = "Expected request with `Content-Type: application/json`"
            writer.write(model_error(request_id, 415, message))
            return
        try:
            parsed = self._parse_body(body)
        except (ValueError, KeyError, TypeError) as exc:
            # The container refuses the body; SageMaker relays that as ModelError (424).
            status = 422 if self.config.response_format == "tgi" else 424
            writer.write(model_error(request_id, status, f"invalid request body: {exc}"))
            return
        truth = TruthRecord(
            request_id=request_id,
            endpoint_name=unquote(match.group(1)),
            inference_component=headers.get("x-amzn-sagemaker-inference-component"),
            stream=match.group(2) == "invocations-response-stream",
            input_tokens=parsed.input_tokens,
            arrival=arrival,
            streamed=parsed.stream,
            api=parsed.api,
            details=parsed.details,
            prefix_aware_id=headers.get("x-amzn-sagemaker-prefix-aware-id"),
        )
        await self._admit(truth, parsed, body, writer)

    async def _admit(
        self, truth: TruthRecord, parsed: ParsedBody, body: bytes, writer: asyncio.StreamWriter
    ) -> None:
        """Record ``truth``, then fail it, throttle it or route and queue it for the engine
        (``body`` is what prefix-aware routing hashes)."""
        request_id = truth.request_id
        self._truth.append(truth)
        self._invocations += 1
        every = self.config.model_error_every
        if every and self._invocations % every == 0:
            truth.outcome, truth.end = "model_error", now()
            writer.write(model_error(request_id, 500, "simulated container failure"))
            return
        instance = self._route(body, truth.prefix_aware_id)
        truth.instance = instance.index
        in_server = instance.in_flight
        max_queue = self.config.max_queue
        if max_queue is not None and in_server >= self.config.max_batch + max_queue:
            truth.outcome, truth.end = "throttled", now()
            writer.write(
                error(
                    429,
                    "Too Many Requests",
                    "ThrottlingException",
                    request_id,
                    message="Rate exceeded: the model is overloaded.",
                )
            )
            return
        clock = instance.clock
        if clock is not None and self._beyond_context(clock, truth, parsed, writer):
            return
        if clock is not None and clock.refuses():
            # TGI's router answers 429 "Model is overloaded" beyond max_concurrent_requests
            # (text-generation-inference router/src/server.rs); SageMaker relays it (424).
            truth.outcome, truth.end = "throttled", now()
            writer.write(model_error(request_id, 429, "Model is overloaded"))
            return
        assert self._loop is not None
        request = _Request(
            truth,
            max(1, parsed.max_tokens),
            writer,
            self._loop.create_future(),
            include_usage=parsed.include_usage,
            prompt=parsed.prompt,
        )
        if clock is None:
            instance.queue.append(request)
        else:
            self._hand_to_engine(instance, clock, request)
        instance.wake.set()
        await request.done

    def _beyond_context(
        self,
        clock: EngineClock,
        truth: TruthRecord,
        parsed: ParsedBody,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Refuse at once a request whose prompt and ``max_new_tokens`` pass the model's
        context, as the containers validate it (vLLM: "This model's maximum context length is
        N tokens", relayed by LMI; TGI's ``ValidationError::MaxTotalTokens``, 422), instead of
        serving it until the invocation limit."""
        context = clock.engine.model.spec.max_context
        requested = truth.input_tokens + max(1, parsed.max_tokens)
        if requested <= context:
            return False
        truth.outcome, truth.end = "model_error", now()
        if self.config.response_format == "tgi":
            status = 422
            message = (
                f"`inputs` tokens + `max_new_tokens` must be <= {context}. Given: "
                f"{truth.input_tokens} `inputs` tokens and {max(1, parsed.max_tokens)} "
                "`max_new_tokens`"
            )
        else:
            status = 424
            message = (
                f"This model's maximum context length is {context} tokens. However, you "
                f"requested {requested} tokens ({truth.input_tokens} in the prompt, "
                f"{max(1, parsed.max_tokens)} in the completion)."
            )
        writer.write(model_error(truth.request_id, status, message))
        return True

    def _hand_to_engine(self, instance: _Instance, clock: EngineClock, request: _Request) -> None:
        """Queue ``request`` in the instance's engine, stamped on its virtual clock (the
        prefix cache's hit counts only where the engine caches prefixes)."""
        truth = request.truth
        truth.virtual_arrival = clock.virtual_now()
        if clock.policy.prefix_caching:
            truth.cached_tokens = self._cached_tokens(instance, request.prompt)
        request.sequence = clock.admit(
            truth.input_tokens, request.max_new_tokens, truth.cached_tokens, truth.virtual_arrival
        )
        instance.held[request.sequence] = request
        instance.active.append(request)

    def _route(self, body: bytes, prefix_aware_id: str | None) -> _Instance:
        """The instance a request goes to, by the configured routing strategy."""
        instances = self._instances
        if len(instances) == 1:
            return instances[0]
        config = self.config
        if config.routing == "random":
            return instances[self._rng.randrange(len(instances))]
        if config.routing == "prefix_aware":
            key = (prefix_aware_id or "").encode() + b"\0" + body[: config.prefix_length]
            digest = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
            chosen = instances[digest % len(instances)]
            if chosen.in_flight < config.concurrency_threshold:
                return chosen
        fewest = min(instance.in_flight for instance in instances)
        tied = [instance for instance in instances if instance.in_flight == fewest]
        return tied[self._rng.randrange(len(tied))] if len(tied) > 1 else tied[0]

    def _cached_tokens(self, instance: _Instance, prompt: Sequence[str]) -> int:
        """Look the prompt's leading blocks up in the instance's prefix cache (then cache all
        its whole blocks); returns the tokens found."""
        config = self.config
        if not config.prefix_cache_blocks:
            return 0
        keys = _block_keys(prompt, config.prefix_block_tokens)
        hits = 0
        for key in keys:
            if key not in instance.cache:
                break
            hits += 1
        for key in keys:
            instance.cache[key] = None
            instance.cache.move_to_end(key)
        while len(instance.cache) > config.prefix_cache_blocks:
            instance.cache.popitem(last=False)
        # At least the last prompt token is always computed (as vLLM does on a full hit).
        return min(hits * config.prefix_block_tokens, max(0, len(prompt) - 1))

    async def _openai(
        self, api: str, body: bytes, writer: asyncio.StreamWriter, request_id: str, arrival: float
    ) -> None:
        """An OpenAI-compatible request (``messages`` or ``completions``) for the same engine:
        streamed as a chunked ``text/event-stream`` body when the body asks, else one JSON."""
        try:
            parsed = self._parse_body(body, openai=api)
        except (ValueError, KeyError, TypeError) as exc:
            error = {
                "error": {
                    "message": f"invalid request body: {exc}",
                    "type": "invalid_request_error",
                    "code": 400,
                }
            }
            writer.write(
                http_response(400, "Bad Request", {"Content-Type": "application/json"},
                               json.dumps(error).encode("utf-8"))
            )  # fmt: skip
            return
        truth = TruthRecord(
            request_id=request_id, endpoint_name="openai", inference_component=None,
            stream=parsed.stream, input_tokens=parsed.input_tokens, arrival=arrival,
            streamed=parsed.stream, api=parsed.api, route="openai",
        )  # fmt: skip
        await self._admit(truth, parsed, body, writer)

    # -- the continuous-batching model ------------------------------------------------------

    async def _schedule(self, instance: _Instance) -> None:
        config = self.config
        while True:
            if not instance.active and not instance.queue:
                instance.wake.clear()
                await instance.wake.wait()
            t = now()
            self._expire(instance, t)
            prefill_tokens = 0
            while instance.queue and len(instance.active) < config.max_batch:
                request = instance.queue.popleft()
                request.truth.start = t
                cached = self._cached_tokens(instance, request.prompt)
                request.truth.cached_tokens = cached
                prefill_tokens += request.truth.input_tokens - cached
                instance.active.append(request)
            if not instance.active:
                continue
            step = (
                config.step_base_s
                + config.step_per_sequence_s * len(instance.active)
                + config.prefill_per_input_token_s * prefill_tokens
            )
            await asyncio.sleep(step)
            t = now()
            finished = []
            for request in instance.active:
                if self._emit_token(request, t):
                    finished.append(request)
            if finished:
                instance.active = [r for r in instance.active if r not in finished]

    async def _run_engine(self, instance: _Instance) -> None:
        """The engine simulation's passes in real time: plan, sleep ``time_scale`` x the pass's
        simulated seconds, then send each token the pass produced."""
        clock = instance.clock
        assert clock is not None
        scale = clock.engine.time_scale
        while True:
            if clock.idle:
                instance.wake.clear()
                await instance.wake.wait()
            self._expire(instance, now())
            planned = clock.next_pass()
            if planned is None:
                for sequence in clock.unschedulable():
                    self._refuse_unschedulable(instance, instance.held.pop(sequence))
                instance.wake.clear()
                if not clock.idle:
                    await instance.wake.wait()
                continue
            step, seconds = planned
            started = now()
            for sequence in (*(s for s, _ in step.prefills), *step.decodes):
                held = instance.held.get(sequence)
                if held is not None and held.truth.start is None:
                    held.truth.start = started
            await asyncio.sleep(seconds * scale)
            end, produced = clock.complete(step)
            self._deliver(instance, produced, end)

    def _deliver(self, instance: _Instance, produced: list[EngineSequence], end: float) -> None:
        """Send the token each sequence produced in the pass that ended at virtual ``end``."""
        t = now()
        for sequence in produced:
            request = instance.held.get(sequence)
            if request is None:  # timed out during the pass
                continue
            truth = request.truth
            if truth.virtual_first_token is None:
                truth.virtual_first_token = end
            if sequence.done:
                truth.virtual_end = end
            if self._emit_token(request, t):
                del instance.held[sequence]
                instance.active.remove(request)

    def _refuse_unschedulable(self, instance: _Instance, request: _Request) -> None:
        """A request whose prompt the engine's limits can never hold: the container refuses it
        (TGI's input validation, 422; LMI's, 424), relayed as ``ModelError``."""
        instance.active.remove(request)
        truth = request.truth
        truth.outcome, truth.end = "model_error", now()
        status = 422 if self.config.response_format == "tgi" else 424
        message = f"the prompt ({truth.input_tokens} tokens) exceeds the engine's token budget"
        request.writer.write(model_error(truth.request_id, status, message))
        request.done.set_result(None)

    def _expire(self, instance: _Instance, t: float) -> None:
        # With an engine simulation the limit is on the engine's clock: at --time-scale 0.05 a
        # request fails after 3 s of wall time, as it would after 60 s on the real endpoint.
        engine = self.config.engine
        limit = self.config.invocation_timeout_s * (engine.time_scale if engine else 1.0)
        expired = [r for r in [*instance.queue, *instance.active] if t - r.truth.arrival > limit]
        for request in expired:
            if request.sequence is not None and instance.clock is not None:
                instance.clock.drop(request.sequence)
                instance.held.pop(request.sequence, None)
            if request in instance.active:
                instance.active.remove(request)
            else:
                instance.queue.remove(request)
            truth = request.truth
            truth.outcome, truth.end = "timeout", t
            if request.headers_sent:
                request.writer.write(
                    chunk(
                        eventstream.exception_event(
                            "ModelStreamError", TIMEOUT_MESSAGE, "ModelInvocationTimeExceeded"
                        )
                    )
                    + LAST_CHUNK
                )
            else:
                request.writer.write(
                    error(
                        424,
                        "Failed Dependency",
                        "ModelError",
                        truth.request_id,
                        message=TIMEOUT_MESSAGE,
                        OriginalStatusCode=0,
                    )
                )
            request.done.set_result(None)

    def _emit_token(self, request: _Request, t: float) -> bool:
        """Emit one token of ``request`` at ``t``; True when it completed."""
        truth = request.truth
        index = truth.output_tokens
        truth.output_tokens += 1
        if truth.first_token is None:
            truth.first_token = t
        word = " " + _WORDS[index % len(_WORDS)]
        request.words.append(word)
        last = truth.output_tokens >= request.max_new_tokens
        if last:
            # Recorded before the last bytes go out: a client that reads the truth as soon as
            # its response ends must find the request complete.
            truth.outcome, truth.end = "ok", t
        if truth.route == "openai":
            self._emit_openai(request, index, word, last)
        elif truth.streamed:
            data = self._stream_chunk(request, index, word, last)
            if truth.stream:
                self._send_part(request, data, last, self._stream_content_type(truth))
            else:
                request.buffered.append(data)
        if last and truth.route == "openai":
            request.done.set_result(None)
        elif last:
            if not truth.streamed:
                body = json.dumps(self._full_body(request)).encode("utf-8")
                if truth.stream:  # one PayloadPart with the whole answer, as SageMaker relays it
                    self._send_part(request, body, True, "application/json")
                else:
                    request.writer.write(self._response(request, body, "application/json"))
            elif not truth.stream:  # InvokeEndpoint returns the whole stream as one body
                request.writer.write(
                    self._response(
                        request, b"".join(request.buffered), self._stream_content_type(truth)
                    )
                )
            request.done.set_result(None)
        return last

    def _emit_openai(self, request: _Request, index: int, word: str, last: bool) -> None:
        """An OpenAI-compatible route's bytes for one token: an SSE chunk of a chunked
        ``text/event-stream`` body, or, without streaming, the whole JSON at the end."""
        out = b""
        if request.truth.streamed:
            if not request.headers_sent:
                request.headers_sent = True
                out += http_response(
                    200, "OK",
                    {"Content-Type": "text/event-stream", "x-request-id": request.truth.request_id},
                    chunked=True,
                )  # fmt: skip
            out += chunk(self._stream_chunk(request, index, word, last))
            if last:
                out += LAST_CHUNK
        elif last:
            body = json.dumps(self._full_body(request)).encode("utf-8")
            out = http_response(
                200, "OK",
                {"Content-Type": "application/json", "x-request-id": request.truth.request_id},
                body,
            )  # fmt: skip
        if out:
            request.writer.write(out)

    def _parse_body(self, body: bytes, openai: str | None = None) -> ParsedBody:
        """What this server's container reads from ``body`` (``simulator_requests``)."""
        config = self.config
        return parse_body(body, config.response_format, config.default_max_new_tokens, openai)

    def _stream_content_type(self, truth: TruthRecord) -> str:
        return stream_content_type(truth.api, self.config.response_format)

    def _full_body(self, request: _Request) -> Any:
        return full_body(request.truth, "".join(request.words), self.config.response_format)

    def _stream_chunk(self, request: _Request, index: int, word: str, last: bool) -> bytes:
        """The container's streamed bytes for one token (``simulator_responses``)."""
        return stream_chunk(
            request.truth,
            index,
            word,
            "".join(request.words),
            last=last,
            include_usage=request.include_usage,
            response_format=self.config.response_format,
        )

    def _response(self, request: _Request, body: bytes, content_type: str) -> bytes:
        return http_response(
            200,
            "OK",
            {
                "x-amzn-RequestId": request.truth.request_id,
                "Content-Type": content_type,
                "x-Amzn-Invoked-Production-Variant": "AllTraffic",
            },
            body,
        )

    def _send_part(self, request: _Request, data: bytes, last: bool, content_type: str) -> None:
        out = b""
        if not request.headers_sent:
            request.headers_sent = True
            out += http_response(
                200,
                "OK",
                {
                    "x-amzn-RequestId": request.truth.request_id,
                    "Content-Type": "application/vnd.amazon.eventstream",
                    "X-Amzn-SageMaker-Content-Type": content_type,
                    "x-Amzn-Invoked-Production-Variant": "AllTraffic",
                },
                chunked=True,
            )
        out += chunk(eventstream.payload_part(data))
        if last:
            out += LAST_CHUNK
        request.writer.write(out)

"""What the requests look like: the one description the planner predicts for, the CLI and the
deploy-time benchmark send, and the benchmark's Lambda workers rebuild.

How the requests travel (the container's request schema, streaming or not) is the benchmark's
``RequestProtocol`` (``benchmarking.payload``), not part of the workload: the same workload is
served and predicted the same whichever schema carries it.

Besides every request alike (``Workload(input_tokens=..., output_tokens=...)``), three shapes,
each built by a factory: prompts that share prefixes (``Workload.shared_prefix``), multi-turn
conversations whose every turn resends the history (``Workload.multi_turn``) and the replay of
a trace of requests with their timestamps and token counts (``Workload.trace``, in the Mooncake
JSONL format that aiperf replays). The planner sees a shaped workload's mean tokens, and its
longest request (``longest_tokens``) for the model's context and the served ``max_model_len``;
the benchmark builds each request from the shape (``benchmarking.workloads``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..prop_types import typed_factory, typed_props

if TYPE_CHECKING:  # the managed-benchmark Lambda bundles planning/workload.py without catalog/
    from ..catalog.model_specs import ModelSpec

MAX_SHAPE_TOKENS = 200_000
"""Tokens of one prompt a shape may build."""
MAX_GROUPS = 10_000
"""Prefixes of a shared-prefix workload, conversations of a multi-turn one."""
MAX_TURNS = 64
MAX_TRACE_RECORDS = 100_000
DEFAULT_TRACE_BLOCK_TOKENS = 512
"""Tokens one Mooncake ``hash_ids`` entry stands for (the Mooncake traces' block size, aiperf's
default)."""


def _whole(prop: str, value: Any, minimum: int, maximum: int, example: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValidationError(
            prop,
            value,
            f"must be a whole number from {minimum} to {maximum}",
            f"pass e.g. {example}",
        )
    return value


@dataclass(frozen=True)
class SharedPrefix:
    """``prefixes`` distinct prefixes of ``prefix_tokens`` tokens, each followed by a unique
    suffix of ``suffix_tokens`` tokens in ``requests_per_prefix`` requests (see
    ``Workload.shared_prefix``)."""

    prefixes: int
    prefix_tokens: int
    requests_per_prefix: int
    suffix_tokens: int

    def describe(self) -> str:
        return (
            f"{self.prefixes} shared prefixes of {self.prefix_tokens} tokens x "
            f"{self.requests_per_prefix} requests (+{self.suffix_tokens} unique tokens)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "shared-prefix",
            "prefixes": self.prefixes,
            "prefix_tokens": self.prefix_tokens,
            "requests_per_prefix": self.requests_per_prefix,
            "suffix_tokens": self.suffix_tokens,
        }


@dataclass(frozen=True)
class MultiTurn:
    """``conversations`` conversations of ``turns`` turns; each turn adds ``turn_tokens`` user
    tokens after the history (earlier turns and their answers) and a ``system_tokens`` system
    prompt (see ``Workload.multi_turn``)."""

    conversations: int
    turns: int
    turn_tokens: int
    system_tokens: int = 0

    def describe(self) -> str:
        system = f", {self.system_tokens}-token system prompt" if self.system_tokens else ""
        return (
            f"{self.conversations} conversations x {self.turns} turns of {self.turn_tokens} "
            f"new tokens (history resent){system}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "multi-turn",
            "conversations": self.conversations,
            "turns": self.turns,
            "turn_tokens": self.turn_tokens,
            "system_tokens": self.system_tokens,
        }


@dataclass(frozen=True)
class TraceRecord:
    """One request of a trace: when it arrived (seconds after the trace's first request), its
    input and output tokens, and the blocks its prompt begins with (equal ids, equal text)."""

    timestamp_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Trace:
    """Requests replayed in order (see ``Workload.trace``)."""

    records: tuple[TraceRecord, ...]
    source: str
    """Where the records came from (a path, or ``inline``), as stated in results."""
    block_tokens: int = DEFAULT_TRACE_BLOCK_TOKENS

    @property
    def span_s(self) -> float:
        """Seconds from the first request to the last."""
        return self.records[-1].timestamp_s - self.records[0].timestamp_s

    @property
    def rate(self) -> float | None:
        """The trace's own request rate, ``(n - 1) / span``; None for one request or no span."""
        span = self.span_s
        return (len(self.records) - 1) / span if len(self.records) > 1 and span > 0 else None

    def offsets(self, speedup: float = 1.0) -> list[float]:
        """Send offsets of the records (seconds from the first), the gaps divided by
        ``speedup``."""
        first = self.records[0].timestamp_s
        return [(record.timestamp_s - first) / speedup for record in self.records]

    def describe(self) -> str:
        return f"trace {self.source} ({len(self.records)} requests over {self.span_s:g} s)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "trace",
            "source": self.source,
            "requests": len(self.records),
            "span_s": self.span_s,
            "block_tokens": self.block_tokens,
        }


Shape = SharedPrefix | MultiTurn | Trace


@typed_props
@dataclass(frozen=True)
class Workload:
    """Every request alike: ``input_tokens`` prompt tokens in, ``output_tokens`` generated out;
    or a shape built by a factory (``shared_prefix``, ``multi_turn``, ``trace``), whose mean
    tokens are ``input_tokens`` and ``output_tokens``.

    ::

        Workload(input_tokens=512, output_tokens=256)
    """

    __synth_decision__ = "The workload sizes the requests and the performance prediction"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    input_tokens: int
    """Prompt tokens of each request (a benchmark sends synthetic prompts of this length); for a
    shape, the mean over its requests."""
    output_tokens: int
    """Generated tokens of each request (a benchmark asks for this many: ``max_new_tokens``,
    or ``max_tokens`` for chat completions); for a trace, the mean."""
    shape: SharedPrefix | MultiTurn | Trace | None = None
    """How requests differ; None: every request alike. Build shapes with the factories."""

    def __post_init__(self) -> None:
        for prop in ("input_tokens", "output_tokens"):
            value = getattr(self, prop)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(prop, value, "must be a positive integer", "pass e.g. 512")

    @staticmethod
    @typed_factory
    def shared_prefix(
        *,
        prefixes: int,
        prefix_tokens: int,
        requests_per_prefix: int,
        suffix_tokens: int = 32,
        output_tokens: int = 128,
    ) -> Workload:
        """``prefixes`` distinct prompt prefixes of ``prefix_tokens`` tokens (a system prompt,
        a document), each shared by ``requests_per_prefix`` requests that append their own
        ``suffix_tokens`` tokens: what a server's prefix cache and SageMaker's prefix-aware
        routing (``RoutingStrategy`` ``PREFIX_AWARE``) pay off on. Request ``i`` uses prefix
        ``i % prefixes``, so the requests of one prefix are spread over the run.

        :param prefixes: 1 to 10,000.
        :param prefix_tokens: 1 to 200,000.
        :param requests_per_prefix: 1 to 10,000 (each request's suffix is unique within them).
        :param suffix_tokens: unique tokens after the prefix, 1 to 200,000; default 32.
        :param output_tokens: generated tokens; default 128.
        """
        owner = "Workload.shared_prefix"
        shape = SharedPrefix(
            prefixes=_whole(f"{owner}(prefixes)", prefixes, 1, MAX_GROUPS, "8"),
            prefix_tokens=_whole(
                f"{owner}(prefix_tokens)", prefix_tokens, 1, MAX_SHAPE_TOKENS, "1024"
            ),
            requests_per_prefix=_whole(
                f"{owner}(requests_per_prefix)", requests_per_prefix, 1, MAX_GROUPS, "16"
            ),
            suffix_tokens=_whole(
                f"{owner}(suffix_tokens)", suffix_tokens, 1, MAX_SHAPE_TOKENS, "32"
            ),
        )
        _check_prompt(owner, shape.prefix_tokens + shape.suffix_tokens)
        return Workload(
            shape.prefix_tokens + shape.suffix_tokens,
            _whole(f"{owner}(output_tokens)", output_tokens, 1, MAX_SHAPE_TOKENS, "128"),
            shape,
        )

    @staticmethod
    @typed_factory
    def multi_turn(
        *,
        conversations: int,
        turns: int,
        turn_tokens: int,
        output_tokens: int = 128,
        system_tokens: int = 0,
    ) -> Workload:
        """``conversations`` chats of ``turns`` turns each; turn ``t`` sends the system prompt,
        the earlier turns and their answers (``output_tokens`` each) and ``turn_tokens`` new
        tokens, as a chat client resends the history (``messages`` carries it as alternating
        user and assistant messages). Turn ``t`` of conversation ``c`` is request
        ``t x conversations + c``: at a concurrency of at most ``conversations``, a
        conversation's turns are sent in order. The answers in the history are synthetic text
        of ``output_tokens`` tokens, not what the model said (which would serialize the turns).

        :param conversations: 1 to 10,000.
        :param turns: 1 to 64.
        :param turn_tokens: new user tokens of each turn, 1 to 200,000.
        :param output_tokens: generated tokens of each turn; default 128.
        :param system_tokens: a system prompt shared by every conversation, 0 to 200,000;
            default 0 (none).
        """
        owner = "Workload.multi_turn"
        shape = MultiTurn(
            conversations=_whole(f"{owner}(conversations)", conversations, 1, MAX_GROUPS, "8"),
            turns=_whole(f"{owner}(turns)", turns, 1, MAX_TURNS, "4"),
            turn_tokens=_whole(f"{owner}(turn_tokens)", turn_tokens, 1, MAX_SHAPE_TOKENS, "128"),
            system_tokens=_whole(
                f"{owner}(system_tokens)", system_tokens, 0, MAX_SHAPE_TOKENS, "0"
            ),
        )
        output = _whole(f"{owner}(output_tokens)", output_tokens, 1, MAX_SHAPE_TOKENS, "128")
        longest = shape.system_tokens + shape.turns * shape.turn_tokens + (shape.turns - 1) * output
        _check_prompt(owner, longest)
        mean = (
            shape.system_tokens
            + shape.turn_tokens
            + (shape.turns - 1) * (shape.turn_tokens + output) / 2
        )
        return Workload(max(1, round(mean)), output, shape)

    @staticmethod
    @typed_factory
    def trace(
        records: str | Sequence[TraceRecord],
        *,
        block_tokens: int = DEFAULT_TRACE_BLOCK_TOKENS,
    ) -> Workload:
        """The requests of a trace, in order: each with its own input and output tokens, sent
        at its timestamp by ``BenchmarkLoad.trace_replay`` (any other load uses the token
        counts only).

        :param records: a JSONL file (local path), one request a line in the Mooncake trace
            format aiperf replays: ``{"timestamp": ms, "input_length": n, "output_length": m,
            "hash_ids": [...]}`` (``hash_ids`` optional: requests whose ids agree share those
            prompt blocks), or ``{"timestamp_s", "input_tokens", "output_tokens"}``; or the
            ``TraceRecord`` values. Timestamps must not decrease; at most 100,000 requests.
        :param block_tokens: tokens of one ``hash_ids`` block, 1 to 65,536; default 512
            (Mooncake's).
        """
        owner = "Workload.trace"
        block = _whole(f"{owner}(block_tokens)", block_tokens, 1, 65_536, "512")
        if isinstance(records, str):
            source, parsed = records, read_trace(records)
        else:
            source, parsed = "inline", list(records)
        trace = Trace(tuple(parsed), source, block)
        _check_trace(owner, trace)
        count = len(trace.records)
        return Workload(
            max(1, round(sum(r.input_tokens for r in trace.records) / count)),
            max(1, round(sum(r.output_tokens for r in trace.records) / count)),
            trace,
        )

    @property
    def total_tokens(self) -> int:
        """Input + output tokens: the KV cache one sequence reaches."""
        return self.input_tokens + self.output_tokens

    @property
    def longest_input_tokens(self) -> int:
        """Prompt tokens of the longest prompt: a multi-turn workload's last turn (the whole
        history), a trace's longest record; ``input_tokens`` otherwise."""
        shape = self.shape
        if isinstance(shape, MultiTurn):
            history = (shape.turns - 1) * (shape.turn_tokens + self.output_tokens)
            return shape.system_tokens + shape.turn_tokens + history
        if isinstance(shape, Trace):
            return max(record.input_tokens for record in shape.records)
        return self.input_tokens

    @property
    def longest_tokens(self) -> int:
        """Input + output tokens of the longest request (``total_tokens`` when every request
        is alike): the sequence length the server must accept."""
        shape = self.shape
        if isinstance(shape, MultiTurn):
            return self.longest_input_tokens + self.output_tokens
        if isinstance(shape, Trace):
            return max(record.input_tokens + record.output_tokens for record in shape.records)
        return self.total_tokens

    @property
    def mean_context(self) -> float:
        """Mean context length while decoding: input + half the output."""
        return self.input_tokens + self.output_tokens / 2

    def describe(self) -> str:
        """E.g. ``512 in / 256 out tokens``; a shape adds its description."""
        mean = "mean " if self.shape is not None else ""
        text = f"{mean}{self.input_tokens} in / {self.output_tokens} out tokens"
        return text if self.shape is None else f"{text}: {self.shape.describe()}"


def check_context(spec: ModelSpec, tokens: int, prop: str, value: object = None) -> None:
    """Raise ValidationError naming ``prop`` (and ``value``, default ``tokens``) when sequences
    of ``tokens`` (prompt + output) exceed ``spec.max_context``: vLLM refuses to start with a
    ``max_model_len`` above the length it derives from the model's config.json
    (``max_position_embeddings``, times a RoPE scaling factor) unless
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` ("User-specified max_model_len ... is greater than the
    derived max_model_len"; vLLM engine arguments, ``--max-model-len``, and environment
    variables), and TGI validates ``max_total_tokens`` and ``max_input_tokens`` against the
    model's configuration. ``predict``, ``recommend``, ``size`` and ``decide`` (``LlmService``)
    call it before planning."""
    if tokens <= spec.max_context:
        return
    raise ValidationError(
        prop,
        tokens if value is None else value,
        f"{tokens} tokens per sequence exceed {spec.name}'s context of {spec.max_context} "
        "tokens (max_context, its max_position_embeddings): vLLM refuses to start with a "
        "longer max_model_len and TGI with a longer max_total_tokens",
        f"keep prompt + output within {spec.max_context} tokens (shorter prompts or outputs), "
        "use a model with a longer context, or, for a RoPE-scaled model, a custom spec with "
        "its scaled context (ModelSpec.custom(max_context=...), --max-context)",
    )


def check_workload_context(spec: ModelSpec, workload: Workload, prop: str = "workload") -> None:
    """``check_context`` of the input + output tokens of ``workload``'s longest request (a
    shape's mean can fit while its longest request does not, and the server rejects that)."""
    longest = workload.longest_tokens
    where = "" if longest == workload.total_tokens else "the longest request has "
    check_context(spec, longest, prop, f"{workload.describe()} ({where}{longest} in all)")


def _check_prompt(owner: str, tokens: int) -> None:
    if tokens > MAX_SHAPE_TOKENS:
        raise ValidationError(
            owner, tokens, f"its longest prompt would have {tokens} tokens, more than "
            f"{MAX_SHAPE_TOKENS}", "use fewer or shorter parts",
        )  # fmt: skip


def _check_trace(owner: str, trace: Trace) -> None:
    if not 1 <= len(trace.records) <= MAX_TRACE_RECORDS:
        raise ValidationError(
            f"{owner}(records)", len(trace.records),
            f"a trace has 1 to {MAX_TRACE_RECORDS} requests", "pass a non-empty trace",
        )  # fmt: skip
    previous = trace.records[0].timestamp_s
    for index, record in enumerate(trace.records):
        where = f"{owner}(records)[{index}]"
        if not isinstance(record, TraceRecord):
            raise ValidationError(where, record, "not a TraceRecord", "pass TraceRecord values")
        if record.timestamp_s < previous or record.timestamp_s < 0:
            raise ValidationError(
                f"{where}.timestamp_s", record.timestamp_s,
                "timestamps are at least 0 and do not decrease", "sort the trace by timestamp",
            )  # fmt: skip
        previous = record.timestamp_s
        for prop in ("input_tokens", "output_tokens"):
            _whole(f"{where}.{prop}", getattr(record, prop), 1, MAX_SHAPE_TOKENS, "512")
        if len(record.hash_ids) * trace.block_tokens > record.input_tokens + trace.block_tokens:
            raise ValidationError(
                f"{where}.hash_ids", len(record.hash_ids),
                f"{len(record.hash_ids)} blocks of {trace.block_tokens} tokens exceed the "
                f"request's {record.input_tokens} input tokens",
                "pass the trace's block size as block_tokens",
            )  # fmt: skip


def read_trace(path: str) -> list[TraceRecord]:
    """The records of a JSONL trace file (see ``Workload.trace``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(
            "Workload.trace(records)", path, f"cannot be read ({exc.strerror})",
            "pass the path of a JSONL trace file",
        ) from exc  # fmt: skip
    return parse_trace(text, path)


def parse_trace(text: str, source: str = "trace") -> list[TraceRecord]:
    """Records of JSONL trace text (Mooncake keys, or ``timestamp_s``/``input_tokens``/
    ``output_tokens``)."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise ValidationError(
                where, line[:60], "is not JSON", "one JSON object a line"
            ) from exc
        if not isinstance(item, dict):
            raise ValidationError(where, line[:60], "is not a JSON object", "one object a line")
        if "timestamp_s" in item:
            timestamp = item["timestamp_s"]
        elif "timestamp" in item:
            timestamp = item["timestamp"] / 1000 if _number(item["timestamp"]) else None
        else:
            timestamp = None
        if not _number(timestamp):
            raise ValidationError(
                f"{where}.timestamp", item.get("timestamp", item.get("timestamp_s")),
                "each request needs a timestamp", 'add "timestamp" (ms) or "timestamp_s"',
            )  # fmt: skip
        tokens = []
        for keys in (("input_length", "input_tokens"), ("output_length", "output_tokens")):
            value = next((item[key] for key in keys if key in item), None)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(
                    f"{where}.{keys[0]}", value, "must be a positive whole number of tokens",
                    f'add "{keys[0]}" (or "{keys[1]}")',
                )  # fmt: skip
            tokens.append(value)
        hash_ids = item.get("hash_ids") or []
        if not isinstance(hash_ids, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) for h in hash_ids
        ):
            raise ValidationError(
                f"{where}.hash_ids", hash_ids, "must be a list of integers", "fix or drop it"
            )
        records.append(TraceRecord(float(timestamp), tokens[0], tokens[1], tuple(hash_ids)))
    return records


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)

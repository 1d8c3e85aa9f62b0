"""The requests of a shaped workload (``planning.workload``): shared prefixes, multi-turn
conversations, a replayed trace.

:class:`ShapedPrompts` turns request ``index`` into its prompt: text for the inputs API, or
``messages`` for chat completions, and its own ``max_new_tokens`` / ``max_tokens`` where the
shape sets one (a trace). Prompts are single-token English words (about one token each in the
usual BPE vocabularies, as ``payload.synthetic_prompt``), drawn from a seeded generator, so
the same workload always sends the same bytes and two different parts (two prefixes, two
suffixes) never share more than a word or two by chance:

* shared prefix: request ``i`` is prefix ``i % prefixes`` followed by suffix ``i``; after
  ``prefixes x requests_per_prefix`` requests the suffixes repeat.
* multi-turn: request ``i`` is turn ``(i // conversations) % turns`` of conversation
  ``i % conversations``: the system prompt, the earlier turns with their (synthetic) answers,
  and the new turn; a conversation starts over after its last turn, with new text.
* trace: request ``i`` is record ``i % len(records)``: its ``hash_ids`` blocks (the same id,
  the same text: Mooncake's prefix sharing), then text unique to the request, ``input_tokens``
  in all; its own output tokens.

The ``PrefixAwareId`` header (SageMaker Runtime ``InvokeEndpoint`` /
``InvokeEndpointWithResponseStream``, ``X-Amzn-SageMaker-Prefix-Aware-Id`` in botocore's
``sagemaker-runtime`` model) is a protocol setting (``RequestProtocol.prefix_aware_id``), not part
of the shape: per the API reference it is a stable identifier that the endpoint's prefix-aware
routing combines with the prompt's prefix, to keep applications whose prompts share a prefix
apart.
"""

from __future__ import annotations

import random
from typing import Any

from ..planning.workload import MultiTurn, Shape, SharedPrefix, Trace

# Common English words that are a single token in Llama, Mistral and GPT-2 style vocabularies.
VOCABULARY = (
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "on", "was",
    "he", "by", "at", "from", "his", "an", "be", "this", "are", "or", "not", "but", "had",
    "have", "they", "you", "one", "all", "were", "we", "when", "your", "can", "said", "there",
    "use", "each", "which", "she", "do", "how", "their", "if", "will", "up", "other", "about",
    "out", "many", "then", "them", "these", "so", "some", "her", "would", "make", "like",
    "him", "into", "time", "has", "look", "two", "more", "write", "go", "see", "number", "no",
    "way", "could", "people", "my", "than", "first", "water", "been", "call", "who", "its",
    "now", "find", "long", "down", "day", "did", "get", "come", "made", "may", "part",
)  # fmt: skip

MAX_RUN_TRACE_RECORDS = 1000
"""Trace requests a deploy-time run carries (it travels in the workflow's state, at most
256 KB): ``EndpointBenchmark`` checks it at synth time, its handlers at every step."""
MAX_RUN_TRACE_BLOCKS = 4000
"""``hash_ids`` entries over all of those requests."""

_PREFIX, _SUFFIX, _SYSTEM, _TURN, _ANSWER, _BLOCK, _TAIL = range(7)


def words(kind: int, key: int, count: int) -> str:
    """``count`` words drawn by a generator seeded with ``(kind, key)``: the same part of the
    same workload is always the same text."""
    if count <= 0:
        return ""
    rng = random.Random(kind * 1_000_003 + key)
    return " ".join(rng.choices(VOCABULARY, k=count))


class ShapedPrompts:
    """Request ``index``'s prompt of a shape: ``{"inputs" | "messages", "parameters"}``, the
    form ``payload.RequestFactory.body`` takes (see the module docstring)."""

    def __init__(self, shape: Shape, output_tokens: int, *, messages: bool) -> None:
        self.shape = shape
        self.output_tokens = output_tokens
        self.messages = messages
        self._cache: dict[tuple[int, int], str] = {}

    def _part(self, kind: int, key: int, count: int) -> str:
        cached = self._cache.get((kind, key))
        if cached is None:
            if len(self._cache) > 4096:
                self._cache.clear()
            cached = self._cache[(kind, key)] = words(kind, key, count)
        return cached

    def __call__(self, index: int) -> dict[str, Any]:
        shape = self.shape
        if isinstance(shape, SharedPrefix):
            return self._shared_prefix(shape, index)
        if isinstance(shape, MultiTurn):
            return self._multi_turn(shape, index)
        return self._trace(shape, index)

    def _text(self, text: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
        prompt: dict[str, Any] = {"inputs": text, "parameters": parameters or {}}
        if self.messages:
            prompt["messages"] = [{"role": "user", "content": text}]
        return prompt

    def _shared_prefix(self, shape: SharedPrefix, index: int) -> dict[str, Any]:
        group = index % shape.prefixes
        unique = index % (shape.prefixes * shape.requests_per_prefix)
        prefix = self._part(_PREFIX, group, shape.prefix_tokens)
        return self._text(f"{prefix} {words(_SUFFIX, unique, shape.suffix_tokens)}")

    def _multi_turn(self, shape: MultiTurn, index: int) -> dict[str, Any]:
        conversation = index % shape.conversations
        round_ = index // shape.conversations
        turn = round_ % shape.turns
        session = (round_ // shape.turns) * shape.conversations + conversation
        system = self._part(_SYSTEM, 0, shape.system_tokens) if shape.system_tokens else ""
        messages: list[dict[str, str]] = []
        if system:
            messages.append({"role": "system", "content": system})
        for earlier in range(turn + 1):
            key = session * shape.turns + earlier
            messages.append({"role": "user", "content": self._part(_TURN, key, shape.turn_tokens)})
            if earlier < turn:
                messages.append(
                    {"role": "assistant", "content": self._part(_ANSWER, key, self.output_tokens)}
                )
        if self.messages:
            return {"messages": messages, "parameters": {}}
        return {"inputs": " ".join(m["content"] for m in messages), "parameters": {}}

    def _trace(self, shape: Trace, index: int) -> dict[str, Any]:
        position = index % len(shape.records)
        record = shape.records[position]
        parts: list[str] = []
        left = record.input_tokens
        for block in record.hash_ids:
            if left <= 0:
                break
            take = min(shape.block_tokens, left)
            text = self._part(_BLOCK, block, shape.block_tokens)
            parts.append(text if take == shape.block_tokens else " ".join(text.split(" ")[:take]))
            left -= take
        if left > 0:
            parts.append(words(_TAIL, index, left))
        text = " ".join(parts)
        key = "max_tokens" if self.messages else "max_new_tokens"
        return self._text(text, {key: record.output_tokens})


def run_keys(shape: Shape | None, prefix_aware_id: str | None) -> dict[str, Any]:
    """The deploy-time run keys (``Workload``, ``PrefixAwareId``) of a shape and a
    ``PrefixAwareId``, as ``EndpointBenchmark`` writes them and its handlers read them
    (``lambdas.benchmark.run_workload``); none for neither."""
    keys: dict[str, Any] = {}
    if isinstance(shape, SharedPrefix):
        keys["Workload"] = {
            "Kind": "shared-prefix", "Prefixes": shape.prefixes,
            "PrefixTokens": shape.prefix_tokens, "RequestsPerPrefix": shape.requests_per_prefix,
            "SuffixTokens": shape.suffix_tokens,
        }  # fmt: skip
    elif isinstance(shape, MultiTurn):
        keys["Workload"] = {
            "Kind": "multi-turn", "Conversations": shape.conversations, "Turns": shape.turns,
            "TurnTokens": shape.turn_tokens, "SystemTokens": shape.system_tokens,
        }  # fmt: skip
    elif isinstance(shape, Trace):
        keys["Workload"] = {
            "Kind": "trace",
            "BlockTokens": shape.block_tokens,
            "Records": [
                [round(r.timestamp_s, 6), r.input_tokens, r.output_tokens, list(r.hash_ids)]
                for r in shape.records
            ],
        }
    if prefix_aware_id is not None:
        keys["PrefixAwareId"] = prefix_aware_id
    return keys

"""The loopback simulator's request wire formats: what each container family reads from a
request body, as strictly as the containers do (the schemas and their sources are in
``simulator``'s module docstring): the inputs API (LMI reads ``parameters.stream`` when the
top level has no ``stream``; TGI reads only the top level), the messages API and the OpenAI
completions API."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def parse_body(
    body: bytes,
    response_format: str,
    default_max_new_tokens: int,
    openai: str | None = None,
) -> ParsedBody:
    """What the container reads from a request body (strict, as the containers are):
    ``response_format`` ``lmi`` or ``tgi`` (which reads only a top-level ``stream``);
    ``openai``: the OpenAI-compatible route's API (``messages`` or ``completions``). Raises
    ``ValueError``, ``KeyError`` or ``TypeError`` for a body the container refuses."""
    payload = json.loads(body)
    if not isinstance(payload, dict):
        raise TypeError("the body must be a JSON object")
    default = default_max_new_tokens
    if openai == "completions":
        return _completion(payload)
    if openai == "messages" and "messages" not in payload:
        raise KeyError("messages")
    if "messages" in payload:
        messages = payload["messages"]
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list")
        prompt: list[str] = []
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in ROLES:
                raise ValueError(f"each message needs a role in {ROLES}")
            prompt += _content_text(message.get("content")).split()
        stream, include_usage = _openai_stream(payload)
        return ParsedBody(
            api="messages",
            input_tokens=len(prompt),
            prompt=tuple(prompt),
            # OpenAI's newer name first (vLLM's bench serve sends it), then max_tokens.
            max_tokens=_count(
                payload,
                "max_completion_tokens" if "max_completion_tokens" in payload else "max_tokens",
                default,
            ),
            stream=stream,
            include_usage=include_usage,
        )
    inputs = payload["inputs"]
    if not isinstance(inputs, str):
        raise TypeError("'inputs' must be a string")
    if not inputs:
        raise ValueError("`inputs` cannot be empty")  # TGI's ValidationError::EmptyInput
    parameters = payload.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise TypeError("'parameters' must be an object")
    if "stream" in payload or response_format == "tgi":
        stream = _flag(payload, "stream")  # TGI reads only the top level
    else:
        stream = _flag(parameters, "stream")  # LMI falls back to parameters.stream
    return ParsedBody(
        api="inputs",
        input_tokens=len(inputs.split()),
        prompt=tuple(inputs.split()),
        max_tokens=_count(parameters, "max_new_tokens", default),
        stream=stream,
        details=_flag(parameters, "details"),
    )


ROLES = ("system", "user", "assistant", "tool")
"""The message roles the messages API accepts."""


def _openai_stream(payload: dict[str, Any]) -> tuple[bool, bool]:
    """``stream`` and ``stream_options.include_usage`` of an OpenAI-compatible body (the options
    only with ``"stream": true``, as OpenAI's API refuses them otherwise)."""
    stream = _flag(payload, "stream")
    options = payload.get("stream_options")
    if options is not None and (not stream or not isinstance(options, dict)):
        raise ValueError("'stream_options' is allowed only with \"stream\": true")
    return stream, bool(options and _flag(options, "include_usage"))


def _completion(payload: dict[str, Any]) -> ParsedBody:
    """What an OpenAI-compatible server reads from a completions body."""
    prompt = payload["prompt"]
    if not isinstance(prompt, str):
        raise TypeError("'prompt' must be a string")
    stream, include_usage = _openai_stream(payload)
    return ParsedBody(
        api="completions",
        input_tokens=len(prompt.split()),
        max_tokens=_count(payload, "max_tokens", 16),  # OpenAI's default
        stream=stream,
        include_usage=include_usage,
    )


@dataclass(frozen=True)
class ParsedBody:
    """What the container read from a request body."""

    api: str
    """``inputs``, ``messages`` or ``completions``."""
    input_tokens: int
    """Prompt tokens (one per whitespace-separated word)."""
    max_tokens: int
    """Tokens to generate (``max_new_tokens``, ``max_tokens`` or ``max_completion_tokens``)."""
    stream: bool
    """Whether the body asked the container to stream."""
    include_usage: bool = False
    """OpenAI's ``stream_options.include_usage``: one more chunk with the usage."""
    prompt: tuple[str, ...] = ()
    """The prompt's words (for the prefix cache)."""
    details: bool = False
    """The inputs API's ``parameters.details``: TGI and LMI answer with ``details``
    (``finish_reason``, ``generated_tokens``) only when asked (TGI's ``GenerateParameters``
    ``details``, default false; LMI's output formatters likewise)."""


def _flag(data: dict[str, Any], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise TypeError(f"'{key}' must be true or false")
    return value


def _count(data: dict[str, Any], key: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"'{key}' must be a positive integer")
    return value


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    raise ValueError("a message's content must be a string or a list of parts")

"""The loopback simulator's response wire formats: HTTP/1.1 framing, SageMaker's errors, and each
container family's answer, whole or streamed token by token (the schemas and their sources are
in ``simulator``'s module docstring): LMI's JSON lines and object, TGI's server-sent events and
one-element list, the messages and completions APIs' chunks and objects."""

from __future__ import annotations

import json
from typing import Any, Protocol

TIMEOUT_MESSAGE = (
    "Your invocation timed out while waiting for a response from container primary. "
    "Review the latency metrics for each container in Amazon CloudWatch, resolve the issue, "
    "and try again."
)
"""SageMaker's message when an invocation passes its 60-second limit."""


class Answer(Protocol):
    """What an answer's encoding reads of its request (``simulator.TruthRecord`` has it)."""

    request_id: str
    api: str
    arrival: float
    input_tokens: int
    output_tokens: int
    details: bool


def http_response(
    status: int, reason: str, headers: dict[str, str], body: bytes = b"", *, chunked: bool = False
) -> bytes:
    """An HTTP/1.1 response head (and ``body``); ``chunked``: a chunked body follows."""
    lines = [f"HTTP/1.1 {status} {reason}"]
    all_headers = dict(headers)
    if chunked:
        all_headers["Transfer-Encoding"] = "chunked"
    else:
        all_headers["Content-Length"] = str(len(body))
    lines += [f"{name}: {value}" for name, value in all_headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked HTTP body."""
    return f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n"


LAST_CHUNK = b"0\r\n\r\n"
"""The chunk that ends a chunked HTTP body."""


def error(status: int, reason: str, code: str, request_id: str, **body: Any) -> bytes:
    """A SageMaker Runtime error: ``x-amzn-ErrorType`` names ``code``; ``body`` is its JSON
    (``message`` defaults to the code)."""
    payload = json.dumps({"message": body.pop("message", code), **body}).encode("utf-8")
    return http_response(
        status,
        reason,
        {
            "x-amzn-RequestId": request_id,
            "x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.sagemaker/",
            "Content-Type": "application/json",
        },
        payload,
    )


def model_error(request_id: str, status: int, message: str) -> bytes:
    """SageMaker's ``ModelError`` (424) relaying a container's error status and message."""
    kind = "client" if status < 500 else "server"
    return error(
        424,
        "Failed Dependency",
        "ModelError",
        request_id,
        message=f'Received {kind} error ({status}) from primary with message "{message}".',
        OriginalStatusCode=status,
        OriginalMessage=message,
    )


def stream_content_type(api: str, response_format: str) -> str:
    """The container's content type for a streamed answer: LMI's inputs API streams JSON lines,
    everything else server-sent events."""
    if api == "inputs" and response_format == "lmi":
        return "application/jsonlines"
    return "text/event-stream"


def _details(answer: Answer) -> dict[str, Any]:
    return {"finish_reason": "length", "generated_tokens": answer.output_tokens, "inputs": None}


def _usage(answer: Answer) -> dict[str, int]:
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.input_tokens + answer.output_tokens,
    }


def _chat_head(answer: Answer, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{answer.request_id}",
        "object": kind,
        "created": int(answer.arrival),
        "model": "simulated",
    }


def full_body(answer: Answer, text: str, response_format: str) -> Any:
    """The whole answer's JSON (before encoding) when the body did not ask to stream."""
    if answer.api == "completions":
        return {
            **_chat_head(answer, "text_completion"),
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}],
            "usage": _usage(answer),
        }
    if answer.api == "messages":
        return {
            **_chat_head(answer, "chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": "length",
                }
            ],
            "usage": _usage(answer),
        }
    result: dict[str, Any] = {"generated_text": text}
    if answer.details:  # only when asked, as TGI and LMI answer
        result["details"] = _details(answer)
    return [result] if response_format == "tgi" else result


def stream_chunk(
    answer: Answer,
    index: int,
    word: str,
    text: str,
    *,
    last: bool,
    include_usage: bool,
    response_format: str,
) -> bytes:
    """The container's streamed bytes for token ``index`` (``word``; ``text``: the answer so
    far, sent with the last token by the inputs API)."""
    if answer.api in ("messages", "completions"):
        return _openai_chunk(answer, word, last=last, include_usage=include_usage)
    if response_format == "tgi":
        event: dict[str, Any] = {
            "index": index,
            "token": {"id": index, "text": word, "logprob": -0.5, "special": False},
            "generated_text": text if last else None,
            "details": _details(answer) if last and answer.details else None,
        }
        return b"data:" + json.dumps(event).encode("utf-8") + b"\n\n"
    event = {"token": {"id": index, "text": word, "log_prob": -0.5}}
    if last:
        event["generated_text"] = text
        if answer.details:
            event["details"] = _details(answer)
    return json.dumps(event).encode("utf-8") + b"\n"


def _openai_chunk(answer: Answer, word: str, *, last: bool, include_usage: bool) -> bytes:
    """A messages or completions API chunk (the usage chunk and ``[DONE]`` after the last)."""
    kind = "chat.completion.chunk" if answer.api == "messages" else "text_completion"
    choice: dict[str, Any] = (
        {"index": 0, "delta": {"role": "assistant", "content": word}}
        if answer.api == "messages"
        else {"index": 0, "text": word}
    )
    choice.update(logprobs=None, finish_reason="length" if last else None)
    out = b"data: " + json.dumps({**_chat_head(answer, kind), "choices": [choice]}).encode()
    out += b"\n\n"
    if last:
        if include_usage:
            usage = {**_chat_head(answer, kind), "choices": [], "usage": _usage(answer)}
            out += b"data: " + json.dumps(usage).encode("utf-8") + b"\n\n"
        out += b"data: [DONE]\n\n"
    return out

"""An OpenAI-compatible target: the same closed- and open-loop engine, metrics, searches and
``results.json``, driving ``POST {base_url}/chat/completions`` or ``{base_url}/completions``
instead of SageMaker Runtime (a serving container run locally before deploying, vLLM's or
TGI's OpenAI-compatible server, or any endpoint that speaks the API).

The protocol, as documented by OpenAI's API reference ("Create chat completion", "Create
completion": ``stream``, ``stream_options.include_usage``; https://platform.openai.com/docs/
api-reference/chat/create) and served by vLLM ("OpenAI-Compatible Server",
https://docs.vllm.ai/en/stable/serving/openai_compatible_server.html) and TGI ("Messages API",
https://huggingface.co/docs/text-generation-inference/messages_api):

* ``base_url`` ends where the OpenAI SDKs' does, e.g. ``http://127.0.0.1:8000/v1``; the body
  carries ``model`` when one is given (vLLM checks it against the served model; TGI ignores it)
  and ``max_tokens``; ``Authorization: Bearer <api key>`` when a key is given.
* Streaming (``"stream": true``): the answer is server-sent events over a chunked HTTP body,
  ``data: {json}`` per chunk (chat: ``choices[0].delta.content``; completions:
  ``choices[0].text``), with ``stream_options.include_usage`` one more chunk whose ``usage``
  carries ``completion_tokens`` (and empty ``choices``), then ``data: [DONE]``. Token counts
  come from ``usage`` when the server offers it, else from the content chunks.
* Errors: an HTTP status >= 400 with ``{"error": {"message", "type", "code"}}`` (OpenAI, TGI)
  or vLLM's ``{"object": "error", "message", "type", "code"}``; 429 counts as throttling.

:class:`OpenAIInvoker` is :class:`~.invokers.AsyncInvoker`'s asyncio HTTP/1.1 client (one
kept-alive connection per worker, the same clock placement) without SigV4 and with these
routes, so both targets measure alike: one test drives both against the simulator's one engine.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlsplit

from ._http import body_chunks
from .invokers import AsyncInvoker, _HttpError
from .payload import InvocationRequest, StreamParser
from .samples import RequestSample

TARGETS = ("sagemaker", "openai")
"""What ``benchmark --target`` drives: SageMaker Runtime (default) or an OpenAI-compatible
server."""
ROUTES = {"messages": "/chat/completions", "completions": "/completions"}
"""The route of each OpenAI request schema, under ``base_url``."""


class OpenAIInvoker(AsyncInvoker):
    """Closed- and open-loop client of an OpenAI-compatible server (see the module docstring).

    :param base_url: e.g. ``http://127.0.0.1:8000/v1`` (what the OpenAI SDKs call base URL).
    :param api_key: sent as ``Authorization: Bearer``; default ``OPENAI_API_KEY`` if set,
        else none.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        read_timeout_s: float = 70.0,
        connect_timeout_s: float = 10.0,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base URL {base_url!r}: expected http(s)://host[:port][/v1]")
        self.endpoint_name = ""
        self.inference_component = None
        self.region = None  # type: ignore[assignment]  # no region: not SageMaker
        self.endpoint_url = base_url.rstrip("/")
        self.read_timeout_s = read_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._host_header = parts.netloc
        self._base_path = parts.path.rstrip("/")

    def _encode(self, request: InvocationRequest) -> bytes:
        route = ROUTES.get(request.response_format)
        if route is None:
            raise ValueError(
                f"format {request.response_format!r}: an OpenAI-compatible target takes "
                "messages (chat completions) or completions"
            )
        headers = {
            "Host": self._host_header,
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if request.stream else "application/json",
        }
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        lines = [f"POST {self._base_path}{route} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(request.body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + request.body

    @staticmethod
    def _http_error(status: int, headers: dict[str, str], body: bytes) -> _HttpError:
        message = body.decode("utf-8", "replace")
        code: str | None = None
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            nested = data.get("error")
            error: dict[str, Any] = nested if isinstance(nested, dict) else data
            message = str(error.get("message", message))
            code = str(error.get("type") or error.get("code") or "") or None
        return _HttpError(status, code or f"HTTP{status}", message)

    async def _read_stream(
        self,
        reader: Any,
        headers: dict[str, str],
        request: InvocationRequest,
        sample: RequestSample,
    ) -> None:
        """Server-sent events over a chunked (or length-delimited, or close-delimited) body,
        fed to the parser as they arrive."""
        from ._clock import now

        parser = StreamParser(request.response_format)
        async for data in body_chunks(reader, headers):
            parser.feed(data, now())
        parser.close(now())
        parser.record(sample)
        sample.request_id = headers.get("x-request-id")

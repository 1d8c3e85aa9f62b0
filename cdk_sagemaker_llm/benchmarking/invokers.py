"""Invokers: closed-loop clients that keep N requests in flight against SageMaker Runtime.

An invoker has ``invoke_many(next_request, concurrency) -> list[RequestSample]``: it runs
``concurrency`` workers, each sending one request at a time and taking the next one from
``next_request()`` as soon as its previous request completes, until ``next_request()``
returns ``None``. That is what keeps exactly ``concurrency`` requests in flight.

* :class:`AsyncInvoker` (default): one event loop, one persistent HTTP/1.1 connection per
  worker, requests signed with botocore's SigV4 signer, event streams decoded by the lean
  ``EventStreamDecoder`` (checked against botocore's parser in tests). It drives hundreds of
  streams from one process on one CPU.
* :class:`BotoInvoker`: a thread pool of blocking boto3 calls sharing one client
  (``max_pool_connections`` = concurrency), the approach of AWS's benchmarking notebook;
  kept as a baseline and for callers that need boto3's full behaviour (retries, endpoints).

Both use only boto3/botocore and the standard library.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from ._clock import now
from ._http import body_chunks, delimited
from .eventstream import EventStreamDecoder
from .payload import (
    PREFIX_AWARE_HEADER,
    InvocationRequest,
    ResponseFormatError,
    StreamModelError,
    StreamParser,
    classify_error,
    parse_response,
)
from .region import REGION_SOURCES, resolve_region
from .samples import RequestSample

NextRequest = Callable[[], InvocationRequest | None]
"""Returns the next request to send, or ``None`` when the level is done (thread-safe)."""

_SIGNING_NAME = "sagemaker"


class Invoker(Protocol):
    """What the engine drives."""

    def invoke_many(self, next_request: NextRequest, concurrency: int) -> list[RequestSample]:
        """Run ``concurrency`` closed-loop workers until ``next_request()`` returns None."""
        ...


def default_endpoint_url(region: str) -> str:
    """The public SageMaker Runtime endpoint of ``region``."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://runtime.sagemaker.{region}.{suffix}"


def _short(message: str) -> str:
    return message if len(message) <= 300 else message[:297] + "..."


_STALE_CONNECTION_ERRORS = frozenset(
    {"IncompleteReadError", "ConnectionResetError", "BrokenPipeError", "ConnectionAbortedError"}
)


def _stale(sample: RequestSample) -> bool:
    return sample.request_id is None and sample.error_code in _STALE_CONNECTION_ERRORS


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        self.writer.close()


def _status_or_none(value: object) -> int | None:
    """SageMaker's ``OriginalStatusCode`` (an integer in botocore's model) as an int, if any."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


class _HttpError(Exception):
    def __init__(
        self, status: int, code: str | None, message: str, original_status: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.original_status = original_status


class _SampleHook:
    """The ``on_sample`` hook both invokers call with each finished request."""

    on_sample: Callable[[RequestSample], None] | None = None
    """Called with each finished request's sample (e.g. live progress); default none."""

    def _report(self, sample: RequestSample) -> None:
        if self.on_sample is not None:
            self.on_sample(sample)


class AsyncInvoker(_SampleHook):
    """Asyncio client over raw HTTP/1.1 with SigV4 signing (see module docstring).

    ``endpoint_url`` defaults to the region's SageMaker Runtime endpoint; point it at any
    SageMaker-Runtime-compatible server (e.g. the loopback simulator). Credentials come from
    the usual chain of ``session`` (a ``boto3.Session`` or botocore session; default: a new
    one). Requests are not retried: a throttled request is recorded as a throttling error.
    """

    def __init__(
        self,
        endpoint_name: str,
        *,
        inference_component: str | None = None,
        region: str | None = None,
        endpoint_url: str | None = None,
        session: Any = None,
        read_timeout_s: float = 70.0,
        connect_timeout_s: float = 10.0,
    ) -> None:
        import botocore.session
        from botocore.auth import SigV4Auth

        if session is None:
            session = botocore.session.get_session()
        botocore_session = getattr(session, "_session", session)  # boto3.Session wraps one
        region = resolve_region(region, botocore_session)
        if not region:
            raise ValueError(f"no region: pass region= or set one of {REGION_SOURCES}")
        credentials = botocore_session.get_credentials()
        if credentials is None:
            raise ValueError("no AWS credentials found in the usual credential chain")
        self.endpoint_name = endpoint_name
        self.inference_component = inference_component
        self.region = region
        self.endpoint_url = (endpoint_url or default_endpoint_url(region)).rstrip("/")
        self.read_timeout_s = read_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._signer = SigV4Auth(credentials, _SIGNING_NAME, region)
        parts = urlsplit(self.endpoint_url)
        self._host = parts.hostname or "localhost"
        self._tls = parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._host_header = parts.netloc
        self._base_path = parts.path.rstrip("/")

    # -- public --------------------------------------------------------------------------

    def invoke_many(self, next_request: NextRequest, concurrency: int) -> list[RequestSample]:
        """Run ``concurrency`` closed-loop workers on a fresh event loop (see module doc)."""
        return asyncio.run(self.invoke_many_async(next_request, concurrency))

    async def invoke_many_async(
        self, next_request: NextRequest, concurrency: int
    ) -> list[RequestSample]:
        """:meth:`invoke_many` inside a running event loop."""
        samples: list[RequestSample] = []
        ssl_context = ssl.create_default_context() if self._tls else None

        async def worker() -> None:
            connection: _Connection | None = None
            try:
                while (request := next_request()) is not None:
                    sample, connection = await self._send(request, connection, ssl_context)
                    samples.append(sample)
                    self._report(sample)
            finally:
                if connection is not None:
                    connection.close()

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return samples

    # -- one request ---------------------------------------------------------------------

    async def _send(
        self,
        request: InvocationRequest,
        connection: _Connection | None,
        ssl_context: ssl.SSLContext | None,
    ) -> tuple[RequestSample, _Connection | None]:
        """Send ``request`` on ``connection`` (a kept-alive one) or a new one; returns its
        sample and the connection to keep for the next request (None: closed)."""
        reused = connection is not None
        for _attempt in range(2):
            if connection is None:
                reused = False
                start = now()
                try:
                    connection = await self._connect(ssl_context)
                except (TimeoutError, OSError) as exc:
                    return self._failure(start, "ConnectionError", str(exc)), None
            sample, keep = await self._invoke(connection, request)
            if not keep:
                connection.close()
                connection = None
            # A keep-alive connection the server closed while idle fails before any
            # response: not the endpoint's error, so retry once on a new one.
            if not (reused and _stale(sample)):
                break
        return sample, connection

    async def _connect(self, ssl_context: ssl.SSLContext | None) -> _Connection:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                self._host,
                self._port,
                ssl=ssl_context,
                server_hostname=self._host if ssl_context else None,
                limit=1 << 20,
            ),
            self.connect_timeout_s,
        )
        return _Connection(reader, writer)

    def _encode(self, request: InvocationRequest) -> bytes:
        from botocore.awsrequest import AWSRequest

        suffix = "invocations-response-stream" if request.stream else "invocations"
        path = f"{self._base_path}/endpoints/{quote(self.endpoint_name, safe='')}/{suffix}"
        headers = {
            "Host": self._host_header,
            "Content-Type": "application/json",
            "X-Amzn-SageMaker-Accept" if request.stream else "Accept": "application/json",
        }
        if self.inference_component:
            headers["X-Amzn-SageMaker-Inference-Component"] = self.inference_component
        if request.prefix_aware_id:
            headers[PREFIX_AWARE_HEADER] = request.prefix_aware_id
        aws_request = AWSRequest(
            method="POST", url=self.endpoint_url + path[len(self._base_path) :], data=request.body,
            headers=headers,
        )  # fmt: skip
        self._signer.add_auth(aws_request)
        lines = [f"POST {path} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in aws_request.headers.items()]
        lines.append(f"Content-Length: {len(request.body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + request.body

    def _failure(
        self, start: float, code: str, message: str, status: int | None = None
    ) -> RequestSample:
        return RequestSample(
            start=start,
            end=now(),
            error=classify_error(code, message, status),
            error_code=code,
            error_message=_short(message),
            error_status=status,
        )

    async def _invoke(
        self, connection: _Connection, request: InvocationRequest
    ) -> tuple[RequestSample, bool]:
        """Send ``request``; returns the sample and whether the connection can be reused."""
        data = self._encode(request)
        start = now()
        sample = RequestSample(start=start, end=start)
        code: str | None
        original: int | None = None
        try:
            async with asyncio.timeout(self.read_timeout_s):
                connection.writer.write(data)
                status, headers = await self._read_head(connection.reader)
                sample.request_id = headers.get("x-amzn-requestid")
                if status >= 300:
                    body = await self._read_body(connection.reader, headers)
                    raise self._http_error(status, headers, body)
                if request.stream:
                    await self._read_stream(connection.reader, headers, request, sample)
                else:
                    body = await self._read_body(connection.reader, headers)
                    sample.output_tokens = parse_response(body, request.response_format)
                sample.end = now()
            keep = headers.get("connection", "").lower() != "close" and delimited(headers)
            return sample, keep
        except TimeoutError:
            code, message, status, keep = "ReadTimeout", "client read timeout", None, False
        except _HttpError as exc:
            # An error event inside a stream (status 200) leaves the body unfinished.
            keep = exc.status >= 300 and delimited(headers)
            code, message, status = exc.code, exc.message, exc.status
            original = exc.original_status
        except ResponseFormatError as exc:
            code, message, status, keep = "ResponseFormatError", str(exc), None, False
        except StreamModelError as exc:
            code, message, status, keep = "StreamModelError", str(exc), None, False
            original = 429 if exc.overloaded else None
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            code, message, status, keep = type(exc).__name__, str(exc), None, False
        sample.end = now()
        sample.error = classify_error(code, message, status, original)
        sample.error_code = code
        sample.error_message = _short(message)
        sample.error_status = status
        return sample, keep

    @staticmethod
    async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            status_line, *lines = head.decode("latin-1").split("\r\n")
            status = int(status_line.split(" ", 2)[1])
            if status != 100:
                break
        headers = {}
        for line in lines:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        return status, headers

    @staticmethod
    async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        return b"".join([data async for data in body_chunks(reader, headers)])

    @staticmethod
    def _http_error(status: int, headers: dict[str, str], body: bytes) -> _HttpError:
        code = headers.get("x-amzn-errortype", "").split(":", 1)[0] or None
        message = body.decode("utf-8", "replace")
        original = None
        try:
            data = json.loads(body)
            if isinstance(data, dict):
                code = code or str(data.get("__type", data.get("code", ""))) or None
                message = str(data.get("message", data.get("Message", message)))
                original = _status_or_none(data.get("OriginalStatusCode"))
        except ValueError:
            pass
        if code and "#" in code:
            code = code.rsplit("#", 1)[1]
        return _HttpError(status, code or f"HTTP{status}", str(message), original)

    async def _read_stream(
        self,
        reader: asyncio.StreamReader,
        headers: dict[str, str],
        request: InvocationRequest,
        sample: RequestSample,
    ) -> None:
        events = EventStreamDecoder()
        parser = StreamParser(request.response_format)
        async for data in body_chunks(reader, headers):
            t = now()
            for event_headers, payload in events.feed(data):
                message_type = event_headers.get(":message-type")
                if message_type == "event":
                    if event_headers.get(":event-type") == "PayloadPart":
                        parser.feed(payload, t)
                elif message_type in ("exception", "error"):
                    code = event_headers.get(":exception-type") or event_headers.get(":error-code")
                    try:
                        detail = json.loads(payload)
                    except ValueError:
                        detail = {}
                    text = detail.get("Message", event_headers.get(":error-message", ""))
                    inner = detail.get("ErrorCode")
                    raise _HttpError(200, inner if inner == "ModelInvocationTimeExceeded"
                                     else str(code), str(text))  # fmt: skip
        parser.close(now())
        parser.record(sample)


class BotoInvoker(_SampleHook):
    """A thread pool of blocking boto3 calls sharing one client (the baseline approach).

    ``client`` defaults to a ``sagemaker-runtime`` client (created on first use, kept across
    levels, recreated when a level needs a larger pool) with ``max_pool_connections``
    equal to the concurrency and ``max_attempts`` attempts in all (default 1: no retries, so
    throttling is counted rather than hidden) in ``retry_mode`` (default ``standard``; the
    ``adaptive`` mode also rate-limits the client after throttling, which changes the load).
    """

    def __init__(
        self,
        endpoint_name: str,
        *,
        inference_component: str | None = None,
        region: str | None = None,
        endpoint_url: str | None = None,
        session: Any = None,
        client: Any = None,
        max_attempts: int = 1,
        retry_mode: str = "standard",
        read_timeout_s: float = 70.0,
    ) -> None:
        self.endpoint_name = endpoint_name
        self.inference_component = inference_component
        self.region = region
        self.endpoint_url = endpoint_url
        self.session = session
        self.client = client
        self.max_attempts = max_attempts
        self.retry_mode = retry_mode
        self.read_timeout_s = read_timeout_s
        self._owned_pool: int | None = None

    def _client(self, concurrency: int) -> Any:
        if self.client is not None and (
            self._owned_pool is None or self._owned_pool >= concurrency
        ):
            return self.client
        import boto3
        from botocore.config import Config

        session = self.session or boto3.session.Session()
        self.region = resolve_region(self.region, session)
        retries: Any = {"total_max_attempts": self.max_attempts, "mode": self.retry_mode}
        self._owned_pool = max(10, concurrency)
        self.client = session.client(
            "sagemaker-runtime",
            region_name=self.region,
            endpoint_url=self.endpoint_url,
            config=Config(
                max_pool_connections=max(10, concurrency),
                retries=retries,
                read_timeout=self.read_timeout_s,
                tcp_keepalive=True,
            ),
        )
        return self.client

    def _parameters(self, request: InvocationRequest) -> dict[str, Any]:
        """The invocation's parameters, but ``Accept`` (its name differs between the calls)."""
        kwargs: dict[str, Any] = {
            "EndpointName": self.endpoint_name,
            "Body": request.body,
            "ContentType": "application/json",
        }
        if self.inference_component:
            kwargs["InferenceComponentName"] = self.inference_component
        if request.prefix_aware_id:
            kwargs["PrefixAwareId"] = request.prefix_aware_id
        return kwargs

    def invoke_one(self, client: Any, request: InvocationRequest) -> RequestSample:
        """Send one request with ``client`` and measure it."""
        from botocore.exceptions import (
            ClientError,
            EventStreamError,
            ReadTimeoutError,
        )

        kwargs = self._parameters(request)
        start = now()
        sample = RequestSample(start=start, end=start)
        status: int | None = None
        original: int | None = None
        try:
            if request.stream:
                response = client.invoke_endpoint_with_response_stream(**kwargs)
                sample.request_id = response["ResponseMetadata"].get("RequestId")
                parser = StreamParser(request.response_format)
                for event in response["Body"]:
                    part = event.get("PayloadPart")
                    if part is not None:
                        parser.feed(part["Bytes"], now())
                parser.close(now())
                parser.record(sample)
            else:
                response = client.invoke_endpoint(Accept="application/json", **kwargs)
                sample.request_id = response["ResponseMetadata"].get("RequestId")
                body = response["Body"].read()
                sample.output_tokens = parse_response(body, request.response_format)
            sample.end = now()
            return sample
        except EventStreamError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code")
            message = error.get("Message", str(exc))
            if "ModelInvocationTimeExceeded" in str(exc.response):
                code = "ModelInvocationTimeExceeded"
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code, message = error.get("Code"), error.get("Message", str(exc))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            original = _status_or_none(exc.response.get("OriginalStatusCode"))
            sample.request_id = exc.response.get("ResponseMetadata", {}).get("RequestId")
        except ReadTimeoutError as exc:
            code, message = "ReadTimeout", str(exc)
        except (ResponseFormatError, StreamModelError) as exc:
            code, message = type(exc).__name__, str(exc)
            original = 429 if getattr(exc, "overloaded", False) else None
        except Exception as exc:  # any other client-side failure counts as "other"
            code, message = type(exc).__name__, str(exc)
        sample.end = now()
        sample.error = classify_error(code, message, status, original)
        sample.error_code = code
        sample.error_message = _short(str(message))
        sample.error_status = status
        return sample

    def invoke_many(self, next_request: NextRequest, concurrency: int) -> list[RequestSample]:
        """Run ``concurrency`` threads, each a closed-loop worker (see module docstring)."""
        client = self._client(concurrency)
        samples: list[RequestSample] = []
        lock = threading.Lock()

        def worker() -> None:
            while (request := next_request()) is not None:
                sample = self.invoke_one(client, request)
                with lock:
                    samples.append(sample)
                self._report(sample)

        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for future in [pool.submit(worker) for _ in range(concurrency)]:
                future.result()
        return samples

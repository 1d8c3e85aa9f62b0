"""The 1-stream TTFT offset: how much of "client TTFT - server TTFT" is the client's.

    .venv/bin/python benchmarks/ttft_offset.py [--requests 300]

At one stream every tool reads TTFT about a millisecond above the server's truth (issue 22).
This splits that offset into its parts, each measured on its own:

1. **offset**: per request, the client's TTFT (first token read - request sent) minus the
   simulator's (first token emitted - request head read), matched by request id; the
   simulator runs in its own process, one stream, for the SageMaker route (event stream) and
   the OpenAI route (server-sent events).
2. **loopback floor**: the same asyncio HTTP/1.1 client against a server process that answers
   each request with one chunk at once: write -> first byte read, with no simulator, no JSON and
   no event-stream encoding on either side. What any client on this machine pays.
3. **client parse**: in process, the client's work between the first chunk's bytes arriving
   and the first-token timestamp being taken (response head, chunk size, read), and after it
   (event-stream decode, JSON, token accounting: outside the measured TTFT, by clock placement).
4. **client send**: from the request's start timestamp to the bytes handed to the socket
   (SigV4 signing happens before the start timestamp, so it is not in TTFT).

The rest of the offset is the server's: reading the request head before it records the
arrival, and encoding and writing the first chunk after it records the first token. (Before
2026-11-25 the simulator recorded the arrival after reading and parsing the body.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("AWS_ACCESS_KEY_ID", "dummy")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "dummy")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdk_sagemaker_llm.benchmarking import AsyncInvoker, PayloadSpec, eventstream, run_level
from cdk_sagemaker_llm.benchmarking.openai_target import OpenAIInvoker
from cdk_sagemaker_llm.benchmarking.payload import StreamParser
from cdk_sagemaker_llm.benchmarking.simulator import fetch_truth, reset_truth

_FLOOR_SERVER = r"""
import asyncio
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n0\r\n\r\n"
            )
    except Exception:
        writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p10, p90 = ordered[len(ordered) // 10], ordered[9 * len(ordered) // 10]
    return (
        f"p50 {statistics.median(ordered) * 1000:.3f} ms, p10 {p10 * 1000:.3f}, "
        f"p90 {p90 * 1000:.3f}"
    )


def offsets(target: str, requests: int) -> list[float]:
    """Client TTFT - server TTFT per request, one stream, simulator in its own process."""
    server = subprocess.Popen(
        [sys.executable, "-m", "cdk_sagemaker_llm.benchmarking.simulator_cli",
         "--response-format", "tgi", "--step-base-s", "0.032", "--step-per-sequence-s", "0"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        if target == "openai":
            invoker: AsyncInvoker = OpenAIInvoker(f"{url}/v1")
            spec = PayloadSpec(16, 4, True, "messages")
        else:
            invoker = AsyncInvoker("ep", region="us-east-1", endpoint_url=url)
            spec = PayloadSpec(16, 4, True, "tgi")
        factory = spec.build()
        run_level(invoker, factory, 1, requests=5)  # warm-up
        reset_truth(url)
        samples = run_level(invoker, factory, 1, requests=requests)
        truth = {r.request_id: r for r in fetch_truth(url)}
    finally:
        server.terminate()
        server.wait(10)
    out = []
    for sample in samples:
        record = truth.get(sample.request_id or "")
        if record is not None and sample.ttft_s is not None and record.ttft_s is not None:
            out.append(sample.ttft_s - record.ttft_s)
    return out


def loopback_floor(requests: int) -> list[float]:
    """Write -> first byte read of the same client against a server that answers at once."""
    server = subprocess.Popen(
        [sys.executable, "-c", _FLOOR_SERVER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())

        async def measure() -> list[float]:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
            times = []
            for _ in range(requests + 5):
                start = time.perf_counter()
                writer.write(request)
                await reader.readuntil(b"\r\n\r\n")
                times.append(time.perf_counter() - start)
                await reader.readuntil(b"0\r\n\r\n")
            writer.close()
            return times[5:]

        return asyncio.run(measure())
    finally:
        server.terminate()
        server.wait(10)


def client_parse(iterations: int) -> tuple[list[float], list[float]]:
    """In process: the client's work on the first chunk before the first-token timestamp
    (head, chunk size, read) and after it (decode, JSON, accounting)."""
    head = (
        b"HTTP/1.1 200 OK\r\nx-amzn-RequestId: 1\r\nContent-Type: "
        b"application/vnd.amazon.eventstream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    part = eventstream.payload_part(
        b'data:{"index":0,"token":{"id":0,"text":" the","logprob":-0.5,"special":false},'
        b'"generated_text":null,"details":null}\n\n'
    )
    chunk = f"{len(part):x}\r\n".encode() + part + b"\r\n"
    before, after = [], []

    async def once() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(head + chunk)
        t0 = time.perf_counter()
        await AsyncInvoker._read_head(reader)
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        data = (await reader.readexactly(size + 2))[:-2]
        t1 = time.perf_counter()  # where the invoker takes the first-token timestamp
        decoder = eventstream.EventStreamDecoder()
        parser = StreamParser("tgi")
        for headers, payload in decoder.feed(data):
            if headers.get(":event-type") == "PayloadPart":
                parser.feed(payload, t1)
        t2 = time.perf_counter()
        before.append(t1 - t0)
        after.append(t2 - t1)

    async def run() -> None:
        for _ in range(iterations):
            await once()

    asyncio.run(run())
    return before, after


def client_send(iterations: int) -> list[float]:
    """From the start timestamp to the request bytes handed to a (loopback) socket."""
    invoker = AsyncInvoker("ep", region="us-east-1", endpoint_url="http://127.0.0.1:9")
    request = PayloadSpec(16, 4, True, "tgi").build()(0)
    data = invoker._encode(request)
    times = []

    async def run() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(iterations):
            start = time.perf_counter()
            async with asyncio.timeout(70):
                writer.write(data)
            times.append(time.perf_counter() - start)
        writer.close()
        server.close()

    asyncio.run(run())
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    for target in ("sagemaker", "openai"):
        print(f"offset, {target} route: {_ms(offsets(target, args.requests))}")
    print(f"loopback floor (write -> first byte): {_ms(loopback_floor(args.requests))}")
    before, after = client_parse(5000)
    print(f"client parse before the first-token timestamp: {_ms(before)}")
    print(f"client parse after it (not in TTFT): {_ms(after)}")
    print(f"client send (start timestamp -> socket): {_ms(client_send(5000))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The lean event-stream decoder agrees with botocore's parser, byte for byte."""

from __future__ import annotations

import struct

import pytest
from botocore.eventstream import EventStreamBuffer

from cdk_sagemaker_llm.benchmarking.eventstream import (
    EventStreamDecoder,
    EventStreamError,
    encode_message,
    exception_event,
    payload_part,
)


def botocore_messages(data: bytes) -> list[tuple[dict[str, object], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [(dict(message.headers), message.payload) for message in buffer]


def typed_header_message() -> bytes:
    """A message with every header value type botocore knows (built by hand)."""

    def header(name: str, kind: int, value: bytes) -> bytes:
        return struct.pack("!B", len(name)) + name.encode() + struct.pack("!B", kind) + value

    raw = b"".join(
        [
            header("t", 0, b""),
            header("f", 1, b""),
            header("b", 2, struct.pack("!b", -3)),
            header("s", 3, struct.pack("!h", -300)),
            header("i", 4, struct.pack("!i", 70000)),
            header("l", 5, struct.pack("!q", -(2**40))),
            header("x", 6, struct.pack("!H", 3) + b"\x00\x01\x02"),
            header("str", 7, struct.pack("!H", 5) + "héllo".encode()[:5]),
            header("ts", 8, struct.pack("!q", 1_700_000_000_000)),
            header("u", 9, bytes(range(16))),
        ]
    )
    import binascii

    payload = b'{"ok": true}'
    total = 12 + len(raw) + len(payload) + 4
    prelude = struct.pack("!II", total, len(raw))
    prelude += struct.pack("!I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + raw + payload
    return body + struct.pack("!I", binascii.crc32(body) & 0xFFFFFFFF)


STREAM = (
    payload_part(b'{"token": {"id": 1, "text": "Hi"}}\n')
    + payload_part(b'{"token": {"id": 2, "text": "!"}}\n{"generated_text": "Hi!"}\n')
    + exception_event("ModelStreamError", "too slow", "ModelInvocationTimeExceeded")
    + encode_message({":message-type": "event", ":event-type": "PayloadPart"}, b"")
)


def test_agrees_with_botocore_on_sagemaker_events() -> None:
    assert list(EventStreamDecoder().feed(STREAM)) == botocore_messages(STREAM)


def test_agrees_with_botocore_on_every_header_type() -> None:
    message = typed_header_message()
    ours = list(EventStreamDecoder().feed(message))
    theirs = botocore_messages(message)
    assert [payload for _, payload in ours] == [payload for _, payload in theirs]
    our_headers, their_headers = ours[0][0], theirs[0][0]
    assert our_headers.keys() == their_headers.keys()
    for name in ("t", "f", "b", "s", "i", "l", "x"):
        assert our_headers[name] == their_headers[name], name


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_messages_split_across_reads(chunk: int) -> None:
    decoder = EventStreamDecoder()
    messages = []
    for start in range(0, len(STREAM), chunk):
        messages += list(decoder.feed(STREAM[start : start + chunk]))
    assert messages == botocore_messages(STREAM)


@pytest.mark.parametrize("position", [2, 9, 20, -2])
def test_corruption_is_detected(position: int) -> None:
    corrupted = bytearray(payload_part(b"data"))
    corrupted[position] ^= 0xFF
    with pytest.raises(EventStreamError):
        list(EventStreamDecoder().feed(bytes(corrupted)))

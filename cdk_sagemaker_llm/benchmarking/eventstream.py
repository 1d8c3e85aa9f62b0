"""Encoder for the AWS event stream binary framing (``application/vnd.amazon.eventstream``).

Each message is::

    total length (uint32 BE) | headers length (uint32 BE) | prelude CRC32 (uint32 BE)
    headers | payload | message CRC32 (uint32 BE, over everything before it)

and each header is ``name length (uint8) | name | type (uint8) | value``; string values
(type 7) carry a uint16 BE length. Decoding is left to botocore (``botocore.eventstream``).
"""

from __future__ import annotations

import binascii
import json
import struct

_STRING = 7


def _header(name: str, value: str) -> bytes:
    raw_name = name.encode("utf-8")
    raw_value = value.encode("utf-8")
    return (
        struct.pack("!B", len(raw_name))
        + raw_name
        + struct.pack("!BH", _STRING, len(raw_value))
        + raw_value
    )


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event stream message with string ``headers`` and ``payload``, CRCs included."""
    raw_headers = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack("!II", total, len(raw_headers))
    prelude += struct.pack("!I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + raw_headers + payload
    return body + struct.pack("!I", binascii.crc32(body) & 0xFFFFFFFF)


def payload_part(data: bytes) -> bytes:
    """A SageMaker Runtime ``PayloadPart`` event carrying ``data``."""
    return encode_message(
        {
            ":event-type": "PayloadPart",
            ":content-type": "application/octet-stream",
            ":message-type": "event",
        },
        data,
    )


def exception_event(exception_type: str, message: str, error_code: str | None = None) -> bytes:
    """A modelled stream exception such as ``ModelStreamError`` or ``InternalStreamFailure``."""
    body: dict[str, str] = {"Message": message}
    if error_code is not None:
        body["ErrorCode"] = error_code
    return encode_message(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps(body).encode("utf-8"),
    )

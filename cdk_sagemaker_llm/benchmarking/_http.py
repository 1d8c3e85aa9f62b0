"""An HTTP/1.1 response body as it arrives, for the asyncio clients of both targets.

The framing is RFC 9112's ("HTTP/1.1", section 6.3, https://www.rfc-editor.org/rfc/rfc9112
#section-6.3): a chunked transfer coding (section 7.1) wins over ``Content-Length``; with
neither, the body runs until the server closes the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

READ_SIZE = 1 << 16
"""The most bytes one read of a length- or close-delimited body takes."""


def delimited(headers: Mapping[str, str]) -> bool:
    """Whether the body's end is marked (chunked or ``Content-Length``), so that the connection
    can carry another request; a close-delimited body ends with the connection."""
    return is_chunked(headers) or "content-length" in headers


def is_chunked(headers: Mapping[str, str]) -> bool:
    """Whether the body uses the chunked transfer coding (headers' names in lower case)."""
    return headers.get("transfer-encoding", "").lower() == "chunked"


async def body_chunks(
    reader: asyncio.StreamReader, headers: Mapping[str, str]
) -> AsyncIterator[bytes]:
    """Yield the body of a response whose head is read, piece by piece as it arrives: each
    chunk of a chunked body (chunk extensions and trailers dropped), else reads of at most
    :data:`READ_SIZE` bytes up to ``Content-Length`` or, with neither, until the connection
    closes. ``headers`` are the response's, names in lower case.

    :raises asyncio.IncompleteReadError: the connection closed before the body's marked end.
    """
    if is_chunked(headers):
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":
                    pass  # a trailer field
                return
            yield (await reader.readexactly(size + 2))[:-2]
    length = headers.get("content-length")
    remaining = int(length) if length is not None else -1
    while remaining != 0:
        data = await reader.read(READ_SIZE if remaining < 0 else min(remaining, READ_SIZE))
        if not data:
            if remaining > 0:
                raise asyncio.IncompleteReadError(b"", remaining)
            return
        if remaining > 0:
            remaining -= len(data)
        yield data

"""The HTTP/1.1 body reader both asyncio clients share (``benchmarking._http``)."""

from __future__ import annotations

import asyncio

import pytest

from cdk_sagemaker_llm.benchmarking._http import READ_SIZE, body_chunks, delimited


def _chunks(data: bytes, headers: dict[str, str], *, eof: bool = True) -> list[bytes]:
    async def read() -> list[bytes]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        if eof:
            reader.feed_eof()
        return [chunk async for chunk in body_chunks(reader, headers)]

    return asyncio.run(read())


def test_chunked_body_yields_each_chunk_and_drops_extensions_and_trailers() -> None:
    data = b"5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT"
    assert _chunks(data, {"transfer-encoding": "chunked"}, eof=False) == [
        b"hello",
        b" ",
        b"world",
    ]


def test_chunked_wins_over_content_length() -> None:
    data = b"3\r\nabc\r\n0\r\n\r\n"
    headers = {"transfer-encoding": "Chunked", "content-length": "99"}
    assert _chunks(data, headers, eof=False) == [b"abc"]


def test_content_length_reads_no_further_than_the_body() -> None:
    assert b"".join(_chunks(b"abcdefNEXT", {"content-length": "6"}, eof=False)) == b"abcdef"
    assert _chunks(b"", {"content-length": "0"}, eof=False) == []


def test_a_large_body_comes_in_bounded_reads() -> None:
    body = b"x" * (READ_SIZE * 2 + 5)
    chunks = _chunks(body, {"content-length": str(len(body))})
    assert b"".join(chunks) == body
    assert max(len(chunk) for chunk in chunks) <= READ_SIZE


def test_without_length_the_body_runs_until_the_connection_closes() -> None:
    assert b"".join(_chunks(b"data: 1\n\ndata: 2\n\n", {})) == b"data: 1\n\ndata: 2\n\n"
    assert not delimited({})
    assert delimited({"content-length": "0"})
    assert delimited({"transfer-encoding": "chunked"})


@pytest.mark.parametrize(
    ("data", "headers"),
    [
        (b"abc", {"content-length": "10"}),
        (b"5\r\nab", {"transfer-encoding": "chunked"}),
    ],
)
def test_a_body_cut_short_raises_incomplete_read(data: bytes, headers: dict[str, str]) -> None:
    with pytest.raises(asyncio.IncompleteReadError):
        _chunks(data, headers)

"""The local route's input limits without a cluster (issue 30 item 2; the same route is exercised
end to end on the real Ray Serve app in test_local_serving.py): the body is bounded from
``Content-Length`` before a byte is read and while a chunked body streams, and image count and
size are checked from the image header before decoding, so a 312-byte PNG that declares
20,000 x 20,000 px is refused without being decoded."""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import zlib

import pytest
from fastapi import HTTPException
from starlette.requests import Request

from hyperpod_rl.base import format_validation_error
from hyperpod_rl.serve.local import MAX_BODY_BYTES, ChatRequest, _decode_images, _read_body


def _fail(status: int, code: str, message: str) -> HTTPException:
    return HTTPException(status_code=status, detail={"code": code, "message": message})


def _png_header_only(width: int, height: int) -> bytes:
    """A valid PNG whose header declares width x height, with only its first rows of data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer = zlib.compressobj(9)
    idat = packer.compress((b"\0" + b"\0" * width * 3) * 2) + packer.flush()
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", idat)
        + chunk(b"IEND", b"")
    )


def _request(*images: bytes) -> ChatRequest:
    parts = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(i).decode()}} for i in images]
    return ChatRequest.model_validate({"model": "maze", "messages": [{"role": "user", "content": parts}]})


def test_a_decompression_bomb_is_refused_from_its_header() -> None:
    bomb = _png_header_only(20_000, 20_000)
    assert len(bomb) < 1000
    with pytest.raises(OverflowError, match=r"image declares more than \d+ pixels; the limit is 4194304 pixels \(2048 px per side\)"):
        _decode_images(_request(bomb))


def test_an_image_over_our_limit_but_under_pils_is_refused_before_decoding() -> None:
    with pytest.raises(OverflowError, match=r"image is 3000x3000 px; the limit is 2048 px per side and 4194304 pixels"):
        _decode_images(_request(_png_header_only(3000, 3000)))  # would fail to decode: it holds 2 rows of data


def test_images_per_request_are_capped() -> None:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (16, 16), "white").save(buf, format="PNG")
    assert len(_decode_images(_request(*[buf.getvalue()] * 8))[0]["content"]) == 8
    with pytest.raises(OverflowError, match=r"more than 8 images; the limit is 8 per request"):
        _decode_images(_request(*[buf.getvalue()] * 9))


def _starlette_request(headers: dict[str, str], chunks: list[bytes], sent: list[int]) -> Request:
    async def receive() -> dict:
        if chunks:
            body = chunks.pop(0)
            sent.append(len(body))
            return {"type": "http.request", "body": body, "more_body": bool(chunks)}
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "query_string": b"",
    }
    return Request(scope, receive)


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    sent: list[int] = []
    request = _starlette_request({"content-length": str(1 << 30)}, [b"x" * 1024] * 4, sent)
    with pytest.raises(HTTPException) as info:
        asyncio.run(_read_body(request, _fail))
    assert info.value.status_code == 413 and sent == []  # not one chunk was read
    assert info.value.detail["message"].startswith(f"the request body is {1 << 30} bytes; the limit is {MAX_BODY_BYTES} bytes")


def test_a_chunked_body_is_cut_off_as_soon_as_it_passes_the_limit() -> None:
    sent: list[int] = []
    mib = 1024 * 1024
    request = _starlette_request({}, [b"x" * mib] * 40, sent)
    with pytest.raises(HTTPException) as info:
        asyncio.run(_read_body(request, _fail))
    assert info.value.status_code == 413 and info.value.detail["code"] == "request_too_large"
    assert sum(sent) == MAX_BODY_BYTES + mib  # stopped at the first chunk over the limit, not at the end


def test_a_body_within_the_limit_is_read_whole_and_a_bad_length_is_a_400() -> None:
    assert asyncio.run(_read_body(_starlette_request({"content-length": "5"}, [b"he", b"llo"], []), _fail)) == b"hello"
    with pytest.raises(HTTPException) as info:
        asyncio.run(_read_body(_starlette_request({"content-length": "12x"}, [b"{}"], []), _fail))
    assert info.value.status_code == 400


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"temperature": 1e-320}, "temperature: too small to sample with"),  # positive, yet zero to torch
        ({"temperature": 5e-3}, "temperature: too small to sample with"),
        ({"temperature": float("inf")}, "temperature: give a finite number, not inf or nan"),
        ({"temperature": float("nan")}, "temperature: give a finite number, not inf or nan"),
        ({"temperature": 1e308}, "temperature: must be <= 2.0"),
        ({"temperature": -0.5}, "temperature: must be >= 0.0"),
        ({"seed": 2**64}, "seed: must be <= 9223372036854775807"),
        ({"seed": -(2**63) - 1}, "seed: must be >= -9223372036854775808"),
        ({"model": "m" * 300}, "model: must be 0..256 characters long"),
    ],
)
def test_sampling_values_at_their_extremes_are_refused_by_the_request_model(change: dict, expected: str) -> None:
    """Issue 42 item 1: the route validates with ChatRequest before the model runs (400 invalid_request)."""
    from pydantic import ValidationError

    body = {"model": "maze", "messages": [{"role": "user", "content": "hi"}], **change}
    with pytest.raises(ValidationError) as info:
        ChatRequest.model_validate(body)
    assert expected in format_validation_error(info.value, what="chat-completions request", model=ChatRequest)


def test_sampling_values_at_the_edges_of_their_ranges_are_accepted() -> None:
    for change in ({"temperature": 0.0}, {"temperature": 0.01}, {"temperature": 2.0}, {"seed": 2**63 - 1}, {"seed": -(2**63)}):
        req = ChatRequest.model_validate({"model": "maze", "messages": [{"role": "user", "content": "hi"}], **change})
        assert getattr(req, next(iter(change))) == next(iter(change.values()))

"""``multipart/form-data`` bodies (audio uploads, image edits): parsed under limits,
refused with a 400 naming the problem, and written again unchanged but for a field."""

from __future__ import annotations

import httpx
import pytest

from faregate.errors import GatewayError
from faregate.multipart import FilePart, is_multipart, parse_form


def encode(data: dict[str, str | list[str]], files: list[tuple[str, tuple[str, bytes, str]]]) -> tuple[bytes, str]:
    request = httpx.Request("POST", "http://x.invalid/", data=data, files=files)
    return request.read(), request.headers["content-type"]


def test_fields_files_and_repeated_names() -> None:
    raw, ctype = encode({"model": "gpt-image-1", "prompt": "a cat"},
                        [("image[]", ("a.png", b"\x89PNG-a", "image/png")),
                         ("image[]", ("b.png", b"\x89PNG-b", "image/png"))])
    form = parse_form(raw, ctype)
    assert form.fields == {"model": "gpt-image-1", "prompt": "a cat"}
    assert [p.data for p in form.lists["image[]"] if isinstance(p, FilePart)] == [b"\x89PNG-a", b"\x89PNG-b"]
    assert form.files["image[]"].filename == "b.png"


def test_with_field_rewrites_one_field_and_keeps_the_rest() -> None:
    raw, ctype = encode({"model": "whisper-1", "language": "en"}, [("file", ("a.wav", b"RIFF....", "audio/wav"))])
    form = parse_form(raw, ctype).with_field("model", "whisper-large")
    body, new_type = form.encode()
    again = parse_form(body, new_type)
    assert again.fields == {"model": "whisper-large", "language": "en"}
    assert again.files["file"] == FilePart("a.wav", "audio/wav", b"RIFF....")


def test_too_many_parts_is_a_400() -> None:
    raw, ctype = encode({f"f{i}": "x" for i in range(10)}, [("file", ("a", b"1", "text/plain"))])
    with pytest.raises(GatewayError) as refused:
        parse_form(raw, ctype, max_parts=5)
    assert refused.value.status == 400 and "parts" in refused.value.message


def test_a_huge_text_field_is_a_400() -> None:
    raw, ctype = encode({"prompt": "x" * 5000}, [("file", ("a", b"1", "text/plain"))])
    with pytest.raises(GatewayError) as refused:
        parse_form(raw, ctype, max_field_bytes=1000)
    assert refused.value.status == 400


@pytest.mark.parametrize("ctype", ["multipart/form-data", "multipart/form-data; boundary=" + "b" * 71])
def test_a_bad_boundary_is_a_400(ctype: str) -> None:
    with pytest.raises(GatewayError) as refused:
        parse_form(b"--x\r\n", ctype)
    assert refused.value.status == 400 and "boundary" in refused.value.message


def test_garbage_is_a_400_not_a_crash() -> None:
    with pytest.raises(GatewayError) as refused:
        parse_form(b"\x00\x01garbage without parts", "multipart/form-data; boundary=zzz")
    assert refused.value.status == 400


def test_is_multipart() -> None:
    assert is_multipart("multipart/form-data; boundary=abc")
    assert is_multipart("Multipart/Form-Data")
    assert not is_multipart("application/json")
    assert not is_multipart(None)

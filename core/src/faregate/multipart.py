"""``multipart/form-data`` bodies (audio uploads, image edits): read with Werkzeug's
parser under limits, and written again with httpx when a field must change upstream.

The body is read whole first, under the route's byte cap (the edge refuses a larger
declared length before reading a byte), so parsing never waits on the client; the
parser then bounds the number of parts and the size of each text field, so a body of
thousands of tiny parts or one huge "field" is a 400, not a slow request."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from email.message import Message

import httpx
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.formparser import MultiPartParser

from faregate.errors import bad_request

MULTIPART = "multipart/form-data"
#: parts (fields and files) one form may hold
MAX_PARTS = 64
#: bytes of one text field (a prompt, a language code …); files are bounded by the body cap
MAX_FIELD_BYTES = 1 << 20


@dataclass(slots=True, frozen=True)
class FilePart:
    """One uploaded file: its field name's value."""

    filename: str
    content_type: str
    data: bytes


@dataclass(slots=True)
class Form:
    """A parsed form: text ``fields`` and ``files`` by name (the last of a repeated name;
    ``lists`` keeps every value of names sent more than once, e.g. ``image[]``)."""

    fields: dict[str, str] = field(default_factory=dict)
    files: dict[str, FilePart] = field(default_factory=dict)
    lists: dict[str, list[str | FilePart]] = field(default_factory=dict)

    def encode(self) -> tuple[bytes, str]:
        """The form as a new ``multipart/form-data`` body and its content type (with the
        boundary); every value of repeated names is kept."""
        data: list[tuple[str, str]] = []
        files: list[tuple[str, tuple[str, bytes, str]]] = []
        for name, values in self.lists.items():
            for value in values:
                if isinstance(value, FilePart):
                    files.append((name, (value.filename, value.data, value.content_type)))
                else:
                    data.append((name, value))
        # httpx writes multipart only around files: every form relayed here carries one
        assert files, "a form without files is not relayed as multipart"
        request = httpx.Request("POST", "http://form.invalid/", data=_group(data), files=files)
        body = request.read()
        return body, request.headers["content-type"]

    def with_field(self, name: str, value: str) -> Form:
        """A copy with ``name`` set to ``value`` (replacing every earlier value)."""
        lists = dict(self.lists)
        lists[name] = [value]
        return Form({**self.fields, name: value}, dict(self.files), lists)


def _group(pairs: list[tuple[str, str]]) -> dict[str, str | list[str]]:
    grouped: dict[str, str | list[str]] = {}
    for name, value in pairs:
        earlier = grouped.get(name)
        if earlier is None:
            grouped[name] = value
        elif isinstance(earlier, list):
            earlier.append(value)
        else:
            grouped[name] = [earlier, value]
    return grouped


def is_multipart(content_type: str | None) -> bool:
    return bool(content_type) and content_type.split(";", 1)[0].strip().lower() == MULTIPART  # type: ignore[union-attr]


def _boundary(content_type: str) -> bytes:
    message = Message()
    message["content-type"] = content_type
    boundary = message.get_param("boundary")
    if not isinstance(boundary, str) or not 1 <= len(boundary) <= 70:
        raise bad_request("multipart/form-data needs a boundary of 1 to 70 characters", code="bad_request_body")
    return boundary.encode("latin-1", "replace")


def parse_form(raw: bytes, content_type: str, *, max_parts: int = MAX_PARTS,
               max_field_bytes: int = MAX_FIELD_BYTES) -> Form:
    """``raw`` (a whole ``multipart/form-data`` body) as a :class:`Form`; 400 when it is
    malformed or passes the limits."""
    parser = MultiPartParser(max_form_memory_size=max_field_bytes, max_form_parts=max_parts)
    try:
        fields, files = parser.parse(io.BytesIO(raw), _boundary(content_type), len(raw))
    except RequestEntityTooLarge:
        raise bad_request(f"the form holds more than {max_parts} parts or a field over {max_field_bytes} bytes",
                          code="bad_request_body") from None
    except ValueError:
        raise bad_request("request body is not valid multipart/form-data", code="bad_request_body") from None
    form = Form()
    for name, value in fields.items(multi=True):
        form.fields[name] = value
        form.lists.setdefault(name, []).append(value)
    for name, storage in files.items(multi=True):
        part = FilePart(storage.filename or "", storage.mimetype or "application/octet-stream", storage.read())
        form.files[name] = part
        form.lists.setdefault(name, []).append(part)
    return form

"""What OTLP/HTTP asks of a profiles server and client, as opentelemetry-proto's
``docs/specification.md`` ("OTLP/HTTP") words it for ``v1development`` profiles.

- ``POST /v1development/profiles``, the body an ``ExportProfilesServiceRequest`` as binary
  protobuf (``Content-Type: application/x-protobuf``) or OTLP JSON (``application/json``);
  ``Content-Encoding: gzip`` optional. The answer uses the request's content type.
- Failures carry a ``google.rpc.Status`` body (code, message). Only 429, 502, 503 and 504 are
  retryable, and a ``Retry-After`` (seconds) tells the client when; every other 4xx/5xx makes
  the client drop the data.
- ``OTLP-Profiles-Development-Version`` (opentelemetry-proto#857): absent means ``1``; more than
  one value, a malformed one or a version the server does not read is a 400, before the body is
  decoded. A server that decodes and re-encodes (as we do) picks the version it sends on its
  own side: the one it writes, ours being the only one we read (``1``).

``google.rpc.Status`` is not in opentelemetry-proto's wheel (it is googleapis-common-protos'):
its two fields we write are encoded here by hand rather than pulling a package in for them.
"""

from __future__ import annotations

import email.utils
import enum
import json
import math
import time
from dataclasses import dataclass
from typing import NamedTuple

PROFILES_PATH = "/v1development/profiles"
HEALTH_PATH = "/health"
VERSION_HEADER = "OTLP-Profiles-Development-Version"
# The development versions we read and write (profiles.proto's of opentelemetry-proto 1.45).
SUPPORTED_VERSIONS = frozenset({"1"})
WRITTEN_VERSION = "1"
DEFAULT_VERSION = "1"  # what an absent header means: never "the newest"

PROTOBUF_TYPE = "application/x-protobuf"
JSON_TYPE = "application/json"
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})

# google.rpc.Code values the status bodies carry.
CODE_INVALID_ARGUMENT = 3
CODE_RESOURCE_EXHAUSTED = 8
CODE_UNAVAILABLE = 14


class BodyType(enum.StrEnum):
    PROTOBUF = "protobuf"
    JSON = "json"

    @property
    def content_type(self) -> str:
        return PROTOBUF_TYPE if self is BodyType.PROTOBUF else JSON_TYPE


def body_type(content_type: str | None) -> BodyType | None:
    """The OTLP encoding a ``Content-Type`` names (parameters such as charset ignored), or None."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == PROTOBUF_TYPE:
        return BodyType.PROTOBUF
    if media == JSON_TYPE:
        return BodyType.JSON
    return None


class VersionProblem(NamedTuple):
    message: str


def development_version(values: list[str]) -> str | VersionProblem:
    """The development version the header ``values`` (every occurrence) name, or why it is refused.

    An exact match against :data:`SUPPORTED_VERSIONS` refuses malformed values too: empty,
    leading zeros, ``1, 2`` joined by an intermediary.
    """
    if len(values) > 1:
        return VersionProblem(f"{VERSION_HEADER} must have exactly one value, got {len(values)}")
    version = values[0].strip() if values else DEFAULT_VERSION
    if version not in SUPPORTED_VERSIONS:
        shown = version if len(version) <= 32 else version[:32] + "..."
        supported = ", ".join(sorted(SUPPORTED_VERSIONS))
        return VersionProblem(f"unsupported {VERSION_HEADER} {shown!r}: this server reads {supported}")
    return version


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def status_body(code: int, message: str, encoding: BodyType) -> bytes:
    """A ``google.rpc.Status`` (field 1 ``code``, field 2 ``message``) in ``encoding``."""
    if encoding is BodyType.JSON:
        return json.dumps({"code": code, "message": message}).encode()
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` asks to wait (delay-seconds or an HTTP date), None when absent or
    unreadable (the caller's own backoff then)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_after_text(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1 (0 would invite a hot loop)."""
    return str(max(1, math.ceil(seconds)))


@dataclass(frozen=True)
class Answer:
    """What the server sends back to the exporter."""

    status: int
    body: bytes
    content_type: str
    retry_after: float | None = None
    close: bool = False

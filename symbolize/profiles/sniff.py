"""Which profile format some bytes are, from the bytes alone (never the file name).

- gperftools CPU profile: the first three words read ``0, 3, 0`` in one of the four word
  size / byte order layouts (:func:`symbolize.profiles.cpu.cpu_layout`). A pprof protobuf cannot
  start so: field number 0 is invalid in protobuf, so a message never starts with a zero byte.
- gperftools heap profile: the first line is ``heap profile: N: N [N: N] @ <kind>[/<rate>]``;
  the kind says which (``heap_v2``, ``heapz_v2``, ``heapprofile``; others are named and refused).
- anything else is taken for pprof protobuf; when that fails, :func:`describe_text` says what
  text the bytes looked like, and :func:`describe_protobuf` what protobuf message, for the error
  message. An OpenTelemetry profiles export (opentelemetry-proto,
  ``opentelemetry/proto/profiles/v1development/profiles.proto``: ``ProfilesData``, and
  ``collector/profiles/v1development/profiles_service.proto``: ``ExportProfilesServiceRequest``,
  both ``resource_profiles = 1; dictionary = 2``) is told by its shape: ``ResourceProfiles`` holds
  only messages and strings (``resource = 1; scope_profiles = 2; schema_url = 3``), where a pprof
  ``ValueType`` in field 1 holds only numbers.
"""

from __future__ import annotations

import enum
import re

from google.protobuf.empty_pb2 import Empty
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from symbolize.profiles.cpu import cpu_layout
from symbolize.profiles.heap_v2 import HEAP_V2_KINDS, LEGACY_KIND, read_heap_header

__all__ = ["ProfileFormat", "describe_protobuf", "describe_text", "sniff_format"]

_SNIFF_BYTES = 4096


class ProfileFormat(enum.Enum):
    PPROF = "pprof protobuf"
    GPERFTOOLS_CPU = "gperftools CPU profile"
    HEAP_V2 = "gperftools heap_v2 text profile"
    LEGACY_HEAP = "gperftools legacy heap profile (heapprofile)"
    OTHER_HEAP = "gperftools heap profile of another kind"


def sniff_format(data: bytes) -> ProfileFormat:
    """The format of (already gunzipped) profile bytes; PPROF when nothing else matches."""
    if cpu_layout(data) is not None:
        return ProfileFormat.GPERFTOOLS_CPU
    if data[:64].lstrip()[:13] == b"heap profile:":
        first_line = data[:_SNIFF_BYTES].split(b"\n", 1)[0].decode("ascii", errors="replace")
        header = read_heap_header(first_line)
        if header is not None and header.kind in HEAP_V2_KINDS:
            return ProfileFormat.HEAP_V2
        if header is not None and header.kind == LEGACY_KIND:
            return ProfileFormat.LEGACY_HEAP
        return ProfileFormat.OTHER_HEAP
    return ProfileFormat.PPROF


# First-line shapes of text profiles this toolkit does not read, and what they are.
_TEXT_KINDS = (
    (re.compile(r"heap profile:"), "a gperftools heap profile whose header does not parse"),
    (re.compile(r"--- symbol"), "a pprof symbolized legacy profile (--- symbol section)"),
    (re.compile(r"--- contention"), "a gperftools contention profile"),
    (re.compile(r"(--- )?threadz"), "a threadz profile"),
    (re.compile(r"MAPPED_LIBRARIES:"), "a maps section without a profile before it"),
    (re.compile(r"\s*[\[{]"), "JSON"),
    (re.compile(r"\S.*;\S.* \d+\s*$"), "collapsed stacks (frame;frame count)"),
    (re.compile(r"\S+\s+\d+\s+(\[\d+\]\s+)?\d+\.\d+:"), "perf script output"),
)


def describe_text(data: bytes) -> str | None:
    """What a text (not protobuf) input looks like, e.g. "JSON"; None for bytes that are not text."""
    head = data[:_SNIFF_BYTES]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a character cut by the sniff window is still text
            return None
        text = head[: exc.start].decode("utf-8")
    if not text or any(ord(char) < 0x20 and char not in "\t\r\n" for char in text):
        return None
    first_line = text.lstrip().split("\n", 1)[0]
    for pattern, kind in _TEXT_KINDS:
        if pattern.match(first_line):
            return kind
    return f"text starting {first_line[:60]!r}"


# Protobuf wire type of length-delimited fields (messages, strings, packed numbers).
_LENGTH_DELIMITED = 2
OPENTELEMETRY_EXPORT = "an OpenTelemetry profiles export (ProfilesData or ExportProfilesServiceRequest)"


def _wire_fields(data: bytes) -> list[tuple[int, int, object]] | None:
    """``(field number, wire type, value)`` of each field of the message in ``data``, read with
    no schema; None for bytes that are not a protobuf message."""
    message = Empty()
    try:
        message.ParseFromString(data)
    except DecodeError:
        return None
    unknown = UnknownFieldSet(message)
    return [
        (field.field_number, field.wire_type, field.data) for field in map(unknown.__getitem__, range(len(unknown)))
    ]


def _holds_only(data: object, numbers: range) -> bool:
    """Whether ``data`` is a message whose every field is length-delimited, numbered in ``numbers``."""
    fields = _wire_fields(data) if isinstance(data, bytes) else None
    return fields is not None and all(number in numbers and wire == _LENGTH_DELIMITED for number, wire, _ in fields)


def describe_protobuf(data: bytes) -> str:
    """What a protobuf message that is not a pprof Profile looks like, for the error message."""
    fields = _wire_fields(data)
    if fields is None:
        return "neither text nor a protobuf message"
    resources = [value for number, wire, value in fields if number == 1 and wire == _LENGTH_DELIMITED]
    if (
        resources
        and all(number in (1, 2) and wire == _LENGTH_DELIMITED for number, wire, _ in fields)
        and all(_holds_only(resource, range(1, 4)) for resource in resources)
    ):
        return OPENTELEMETRY_EXPORT
    return "a protobuf message that is not a pprof Profile"

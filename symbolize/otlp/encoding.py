"""OTLP profiles bytes: protobuf and OTLP JSON, read and written.

``ProfilesData`` (profiles.proto) and ``ExportProfilesServiceRequest`` (profiles_service.proto)
have the same fields under the same numbers and JSON names (``resource_profiles`` = 1,
``dictionary`` = 2), so the same bytes are either message: both are read as ProfilesData. Protobuf
and JSON are told apart by their bytes: a JSON object starts with ``{`` (after a UTF-8 BOM and
white space), as no serialized message of these two does (0x7B would be field 15, wire
type 3) unless its first field is 123 bytes long (:func:`is_json`). gzip (RFC 1952) is
recognised by its magic, as for pprof.

OTLP JSON (opentelemetry-proto ``docs/specification.md``, "JSON Protobuf Encoding") is the proto3
JSON mapping with lowerCamelCase keys, enums as integers and 64-bit integers as decimal strings
(numbers accepted too), except that ``traceId`` and ``spanId`` are hex, not base64; the
Collector's pdata writes ``profileId`` as hex as well, and so do we. Unknown keys are ignored.

Caps, as for pprof (:mod:`symbolize.pprof`): the inflated size, and the entries (dictionary
entries, location lines, samples) counted before protobuf builds them, from the wire format
(protobuf) or the parsed JSON.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.profiles.v1development.profiles_pb2 import ProfilesData

from symbolize.errors import MalformedInputError
from symbolize.formats.errors import InputLimitError, configured_limit

# pprof's wire walk, shared: the same reading of keys and lengths, the same stop at bad bytes.
from symbolize.pprof import GZIP_MAGIC, MAX_ENTRIES_SETTING, MAX_PROFILE_ENTRIES, _nested_messages, _next_field, gunzip


class Encoding(enum.StrEnum):
    PROTOBUF = "protobuf"
    JSON = "json"


_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\r\n"
# ProfilesData / ExportProfilesServiceRequest, ResourceProfiles, ScopeProfiles, Profile and
# ProfilesDictionary field numbers the entry count walks.
_RESOURCE_PROFILES = 1
_DICTIONARY = 2
_SCOPE_PROFILES = 2
_PROFILES = 2
_SAMPLES = 2
_LOCATION_TABLE = 2
_LOCATION_LINES = 3
# JSON fields whose bytes are hex: (where they are, their byte length).
_HEX_IDS = {"traceId": 16, "spanId": 8, "profileId": 16}


def is_json(data: bytes) -> bool:
    """Whether ``data`` (gunzipped) is JSON text: an object, as OTLP JSON always is.

    A message whose first field is ``resource_profiles`` starts with 0x0A, a newline to JSON, and
    one 123 bytes long then has ``{``: bytes that start so are JSON only when they parse as JSON.
    """
    if data.removeprefix(_BOM).lstrip(_WHITESPACE)[:1] != b"{":
        return False
    if data[:1] != b"\n":
        return True
    try:
        json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


def read_profiles_data(data: bytes, path: Path | str = "<memory>") -> tuple[ProfilesData, Encoding, bool]:
    """Decode OTLP profile bytes (either message, protobuf or JSON, gzipped or not).

    Returns the message, its encoding and whether it was gzipped. MalformedInputError (naming
    ``path``) for bytes that are neither, InputLimitError past the caps.
    """
    was_gzipped = data[:2] == GZIP_MAGIC
    if was_gzipped:
        data = gunzip(data, path)
    if is_json(data):
        return _from_json(data, path), Encoding.JSON, was_gzipped
    _check_entries(_count_wire_entries(data), path)
    message = ProfilesData()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise MalformedInputError(f"not an OpenTelemetry profiles export: {exc}", path) from exc
    return message, Encoding.PROTOBUF, was_gzipped


def encode_profiles_data(message: ProfilesData, encoding: Encoding) -> bytes:
    """``message`` as protobuf, or as OTLP JSON (compact, UTF-8)."""
    if encoding is Encoding.PROTOBUF:
        data: bytes = message.SerializeToString()
        return data
    tree = json_format.MessageToDict(message, use_integers_for_enums=True)
    _recode_ids(tree, _base64_to_hex)
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode()


def _check_entries(count: int, path: Path | str) -> None:
    limit = configured_limit(MAX_ENTRIES_SETTING, MAX_PROFILE_ENTRIES)
    if count > limit:
        raise InputLimitError(
            "the export holds more entries (dictionary entries, location lines, samples) than the cap",
            path,
            None,
            limit=limit,
            setting=MAX_ENTRIES_SETTING,
            unit="entries",
        )


def _from_json(data: bytes, path: Path | str) -> ProfilesData:
    try:
        tree = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MalformedInputError(f"not an OpenTelemetry profiles export: invalid JSON: {exc}", path) from exc
    if not isinstance(tree, dict):
        raise MalformedInputError("not an OpenTelemetry profiles export: JSON that is not an object", path)
    _check_entries(_count_json_entries(tree), path)
    _recode_ids(tree, _hex_to_base64)
    message = ProfilesData()
    try:
        json_format.ParseDict(tree, message, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise MalformedInputError(f"not an OpenTelemetry profiles export: {exc}", path) from exc
    return message


def _items(node: object, key: str) -> list[Any]:
    """``node[key]`` when ``node`` is an object and that is a list, else nothing (bad shapes are
    left for the JSON mapping to refuse)."""
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, list) else []


def _count_json_entries(tree: dict[str, Any]) -> int:
    dictionary = tree.get("dictionary")
    count = 0
    if isinstance(dictionary, dict):
        count += sum(len(value) for value in dictionary.values() if isinstance(value, list))
        count += sum(len(_items(location, "lines")) for location in _items(dictionary, "locationTable"))
    for resource in _items(tree, "resourceProfiles"):
        for scope in _items(resource, "scopeProfiles"):
            count += sum(len(_items(profile, "samples")) for profile in _items(scope, "profiles"))
    return count


def _hex_to_base64(text: str, size: int) -> str:
    if len(text) != 2 * size:
        return text  # not the spec's hex: left to the JSON mapping (base64), as some exporters write
    try:
        return base64.b64encode(bytes.fromhex(text)).decode()
    except ValueError:
        return text


def _base64_to_hex(text: str, size: int) -> str:
    try:
        return base64.b64decode(text, validate=True).hex()
    except binascii.Error:
        return text


def _recode_ids(tree: dict[str, Any], recode: Any) -> None:
    """Rewrites the ID fields (module docstring) of a JSON tree in place with ``recode``."""
    targets = [*_items(tree.get("dictionary"), "linkTable")]
    for resource in _items(tree, "resourceProfiles"):
        for scope in _items(resource, "scopeProfiles"):
            targets.extend(_items(scope, "profiles"))
    for target in targets:
        if not isinstance(target, dict):
            continue
        for key, size in _HEX_IDS.items():
            value = target.get(key)
            if isinstance(value, str):
                target[key] = recode(value, size)


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """``(field number, body start, body end)`` of each length-delimited field of the message in
    ``data[start:end]``, read as pprof's count reads them (:func:`symbolize.pprof._next_field`):
    bytes that are no well-formed message end the walk, for protobuf to say what is wrong."""
    position = start
    while position < end:
        field, length, position = _next_field(data, position)
        if position < 0:
            return
        if length >= 0:
            yield field, position, min(position + length, end)
            position += length


def _count_wire_entries(data: bytes) -> int:
    """The entries a serialized export holds (module docstring), from its wire format; 0 for
    one too small to hold more than the cap (an entry takes 2 bytes at least)."""
    if len(data) <= 2 * configured_limit(MAX_ENTRIES_SETTING, MAX_PROFILE_ENTRIES):
        return 0
    count = 0
    for number, start, end in _fields(data, 0, len(data)):
        if number == _DICTIONARY:
            for table, entry_start, entry_end in _fields(data, start, end):
                count += 1
                if table == _LOCATION_TABLE:
                    count += _nested_messages(data, entry_start, entry_end, _LOCATION_LINES)
        elif number == _RESOURCE_PROFILES:
            for scope_field, scope_start, scope_end in _fields(data, start, end):
                if scope_field == _SCOPE_PROFILES:
                    for profile_field, profile_start, profile_end in _fields(data, scope_start, scope_end):
                        if profile_field == _PROFILES:
                            count += _nested_messages(data, profile_start, profile_end, _SAMPLES)
    return count

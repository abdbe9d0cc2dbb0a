"""Reading and writing pprof profiles (``perftools.profiles.Profile``, profile.proto).

A profile file is the serialized message, optionally gzip-compressed (RFC 1952);
compression is recognised by the gzip magic bytes, never by the file name. gperftools'
heap (``heap_v2``, ``heapprofile``) and CPU profiles are recognised by their bytes too and
parsed into the same message (:mod:`symbolize.profiles`); other text is refused, saying
what it looked like.
Fields this toolkit does not know are kept by protobuf and written back as read.

Inflating is capped (a gzip bomb is hostile input): a profile may inflate to at most
:data:`INFLATE_FACTOR` times its compressed size and never past
:data:`MAX_PROFILE_SIZE` (1 GiB; ``SYMBOLIZE_MAX_PROFILE_SIZE``, in bytes, or the
module attribute changes it). The stream is inflated piece by piece, so a gzip
bomb stops at the cap with :class:`InputLimitError`, its memory never allocated.

What a profile holds is capped too: the protobuf runtime spends 30-50 bytes on each message,
and a sample, location, line, label, function, mapping or string can be encoded in 2 bytes
(100 MB of one-field locations, 830 KB gzipped, took the runtime past 3 GB, where it died of
SIGSEGV). :func:`count_entries` walks the wire format (protobuf encoding, the ``Profile``
message of profile.proto) before protobuf sees it, and refuses more than
:data:`MAX_PROFILE_ENTRIES` entries (2,097,152; ``SYMBOLIZE_MAX_PROFILE_ENTRIES``) with
:class:`InputLimitError`, having read at most that many.
"""

from __future__ import annotations

import contextlib
import gzip as gzip_module
import os
import stat
import tempfile
import zlib
from pathlib import Path

from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from symbolize.errors import SymbolizeError, os_error
from symbolize.formats.errors import InputLimitError, MalformedInputError, configured_limit
from symbolize.formats.native import kernels
from symbolize.profiles import OPENTELEMETRY_EXPORT, describe_protobuf, describe_text, parse_foreign_profile
from symbolize.proto.profile_pb2 import Profile
from symbolize.tempfiles import PROFILE_TEMPORARY, remove_stale_temporaries

__all__ = ["GZIP_MAGIC", "Profile", "StringTable", "parse_profile", "read_profile", "write_profile"]

GZIP_MAGIC = b"\x1f\x8b"
# The absolute cap on an inflated profile, in bytes; SYMBOLIZE_MAX_PROFILE_SIZE overrides it.
MAX_PROFILE_SIZE = 1 << 30
MAX_SIZE_SETTING = "SYMBOLIZE_MAX_PROFILE_SIZE"
# A profile inflates to at most this many times its compressed size (real ones: 5-20x).
INFLATE_FACTOR = 128
_INFLATE_STEP = 1 << 20
# The most entries a profile may hold: its samples, locations and their lines, functions,
# mappings, strings and labels together; SYMBOLIZE_MAX_PROFILE_ENTRIES overrides it. Real
# profiles hold thousands to hundreds of thousands; at this cap protobuf holds ~100 MB of them,
# and the Python walk that counts them (without the compiled kernels) takes seconds.
MAX_PROFILE_ENTRIES = 1 << 21
MAX_ENTRIES_SETTING = "SYMBOLIZE_MAX_PROFILE_ENTRIES"
# profile.proto field numbers: Profile's repeated messages and strings, and the messages
# repeated inside a Sample (its labels) and a Location (its lines).
_PROFILE_TABLES = frozenset({1, 2, 3, 4, 5, 6})
_SAMPLE = 2
_LOCATION = 4
_SAMPLE_LABEL = 3
_LOCATION_LINE = 4
_LENGTH_DELIMITED = 2
# Profile field -> the one-byte key of the messages nested in its entries.
_NESTED_IN = {_SAMPLE: _SAMPLE_LABEL << 3 | _LENGTH_DELIMITED, _LOCATION: _LOCATION_LINE << 3 | _LENGTH_DELIMITED}
# What a refused input is told this toolkit reads.
_READ = "read: pprof protobuf; gperftools heap_v2, heapprofile and CPU profiles"


def parse_profile(data: bytes, path: Path | str = "<memory>") -> tuple[Profile, bool]:
    """Decode profile bytes, gunzipping them first when they start with the gzip magic.

    Returns the message and whether the bytes were gzipped. ``path`` only names
    the source in errors. gperftools profiles are parsed by :mod:`symbolize.profiles`;
    text that is no profile read here raises ``MalformedInputError("not a profile: ...")``.
    """
    was_gzipped = data[:2] == GZIP_MAGIC
    if was_gzipped:
        data = gunzip(data, path)
    if not data:
        # Protobuf reads no bytes as a Profile with nothing in it; no producer writes that.
        raise MalformedInputError("not a profile: the file is empty", path)
    foreign = parse_foreign_profile(data, path)
    if foreign is not None:
        return foreign, was_gzipped
    # A serialized Profile is never all text: string_table[0] == "" alone encodes as b"2\x00".
    looks_like = describe_text(data)
    if looks_like is not None:
        raise MalformedInputError(f"not a profile: {looks_like} ({_READ})", path)
    count_entries(data, path)
    profile = Profile()
    try:
        profile.ParseFromString(data)
    except DecodeError as exc:
        looks_like = describe_protobuf(data)
        if looks_like == OPENTELEMETRY_EXPORT:
            raise MalformedInputError(f"not a profile: {looks_like} ({_READ})", path) from exc
        raise MalformedInputError(f"not a pprof profile: {exc}", path) from exc
    problem = _not_a_profile(profile)
    if problem is not None:
        looks_like = describe_protobuf(data)
        if looks_like != OPENTELEMETRY_EXPORT:
            looks_like += f": {problem}"
        raise MalformedInputError(f"not a profile: {looks_like} ({_READ})", path)
    if profile.string_table[0] != "":
        raise MalformedInputError("string_table[0] must be the empty string", path)
    return profile, was_gzipped


def count_entries(data: bytes, path: Path | str = "<memory>") -> int:
    """The entries a serialized Profile holds (module docstring), counted from its wire format
    without decoding it; InputLimitError past the cap in force.

    A message of at most twice the cap in bytes is not walked (an entry takes 2 bytes at least)
    and 0 is returned. By the compiled twin where built (``native/src/profile_entries.rs``).
    """
    limit = configured_limit(MAX_ENTRIES_SETTING, MAX_PROFILE_ENTRIES)
    if len(data) <= 2 * limit:
        return 0
    count = kernels.count_profile_entries(data, limit) if kernels is not None else _count_entries(data, limit)
    if count > limit:
        raise InputLimitError(
            "profile holds more entries (samples, locations and their lines, functions, mappings, strings, "
            "labels) than the cap",
            path,
            None,
            limit=limit,
            setting=MAX_ENTRIES_SETTING,
            unit="entries",
        )
    return count


def _count_entries(data: bytes, limit: int) -> int:
    """The reference :func:`count_entries`: the entries of ``data``, or the count as it first
    passes ``limit`` (the walk stops there).

    Bytes that are no well-formed message end the count where they start (protobuf then says
    what is wrong with them); a key or length past the end reads as 0.
    """
    count = 0
    position, end = 0, len(data)
    tables, nested_in = _PROFILE_TABLES, _NESTED_IN
    while position < end:
        key = data[position]
        # Inline, the one-byte key and length almost every entry has: this loop is the walk's cost.
        if key < 0x80 and key & 7 == _LENGTH_DELIMITED and position + 1 < end and data[position + 1] < 0x80:
            field, length = key >> 3, data[position + 1]
            position += 2
        else:
            field, length, position = _next_field(data, position)
            if position < 0:
                break
            if length < 0:
                continue
        if field in tables:
            count += 1
            nested_key = nested_in.get(field)
            # A sample's labels and a location's lines are messages too; a body of 2 bytes or
            # less inside the data holds one only when it is that message, empty.
            if nested_key is not None:
                if length > 2 or position + length > end:
                    count += _nested_messages(data, position, min(position + length, end), nested_key >> 3)
                elif length == 2 and data[position] == nested_key and data[position + 1] == 0:
                    count += 1
            if count > limit:
                return count
        position += length
    return count


def _nested_messages(data: bytes, position: int, end: int, wanted: int) -> int:
    """How many length-delimited fields numbered ``wanted`` the message in ``data[position:end]`` holds."""
    count = 0
    while position < end:
        key = data[position]
        # Inline, a one-byte key of a one-byte varint (an id, a line number): most of what a
        # location or sample holds besides its lines and labels.
        if key < 0x80 and key & 7 == 0 and position + 1 < end and data[position + 1] < 0x80:
            position += 2
            continue
        field, length, position = _next_field(data, position)
        if position < 0:
            break
        if length >= 0:
            count += field == wanted
            position += length
    return count


def _next_field(data: bytes, position: int) -> tuple[int, int, int]:
    """The field whose key is at ``position``: (its number, the length of its body, the offset of
    that body) when length-delimited, else (its number, -1, the offset past its value); -1 for
    the offset at a wire type a Profile cannot hold (groups, reserved: the walk stops there)."""
    key, position = _varint(data, position)
    wire_type = key & 7
    if wire_type == _LENGTH_DELIMITED:
        length, position = _varint(data, position)
        return key >> 3, length, position
    if wire_type == 0:
        return key >> 3, -1, _varint(data, position)[1]
    if wire_type in (1, 5):
        return key >> 3, -1, position + (8 if wire_type == 1 else 4)
    return key >> 3, -1, -1


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """The base-128 varint at ``position`` and the offset past it; 0 and the end when cut short."""
    value = shift = 0
    end = len(data)
    while position < end:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    return 0, end


def _not_a_profile(profile: Profile) -> str | None:
    """Why a message protobuf read as a Profile is no pprof Profile; None when it is one.

    Protobuf reads any message as a Profile: one of pprof's field numbers with another wire
    type than profile.proto gives it is kept aside as an unknown field, as is a number pprof
    does not define. The first means another schema (an OpenTelemetry export's
    ``ResourceProfiles`` read as a ``ValueType``); the second may be a field pprof added after
    this copy of profile.proto, kept and written back. A message whose fields all fit still
    lacks the string table every pprof writer writes (profile.proto: ``string_table[0]`` is "").
    """
    mistyped = _mistyped_field(profile)
    if mistyped is not None:
        return mistyped
    if not profile.string_table:
        return "no string table"
    return None


# How many items of each table _mistyped_field looks into: a message of another schema shows in
# its first ones, and looking into every one costs as much as parsing again. A stray field
# further on is kept as unknown and written back as read: nothing is lost.
_ITEMS_CHECKED = 16


def _mistyped_field(message: Message) -> str | None:
    """The first field that has a profile.proto number but another wire type than profile.proto
    gives it, in ``message`` or the first items of each table inside it; None when none has."""
    unknown = UnknownFieldSet(message)
    known = message.DESCRIPTOR.fields_by_number
    for field in map(unknown.__getitem__, range(len(unknown))):
        if field.field_number in known:
            name = known[field.field_number].name
            return f"{message.DESCRIPTOR.name}.{name} (field {field.field_number}) has wire type {field.wire_type}"
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        for item in value[:_ITEMS_CHECKED] if descriptor.is_repeated else [value]:
            mistyped = _mistyped_field(item)
            if mistyped is not None:
                return mistyped
    return None


def max_profile_size() -> int:
    """The absolute cap in force: ``SYMBOLIZE_MAX_PROFILE_SIZE`` when set, else the module's."""
    return configured_limit(MAX_SIZE_SETTING, MAX_PROFILE_SIZE)


def gunzip(data: bytes, path: Path | str = "<memory>") -> bytes:
    """Inflate gzip ``data`` (RFC 1952, members one after another, as gzip.decompress reads them).

    Raises MalformedInputError for a corrupt or truncated stream and InputLimitError past the
    cap (module docstring), checked on every megabyte inflated.
    """
    absolute = max_profile_size()
    limit = min(absolute, INFLATE_FACTOR * len(data))
    setting = MAX_SIZE_SETTING if limit == absolute else None
    out = bytearray()
    rest = memoryview(data)
    try:
        while rest:
            # wbits 31: a gzip member, header and CRC-32/size trailer checked by zlib.
            inflater = zlib.decompressobj(31)
            pending = rest
            while not inflater.eof:
                piece = inflater.decompress(pending, min(_INFLATE_STEP, limit + 1 - len(out)))
                pending = memoryview(inflater.unconsumed_tail)
                if not piece and not pending and not inflater.eof:
                    raise MalformedInputError("corrupt gzip stream: truncated", path)
                out += piece
                if len(out) > limit:
                    raise InputLimitError(
                        f"gzip profile of {len(data)} bytes inflates past {limit} bytes"
                        + ("" if setting else f", {INFLATE_FACTOR} times its size"),
                        path,
                        None,
                        limit=limit,
                        setting=setting,
                    )
            rest = memoryview(inflater.unused_data)
            if bytes(rest[:2]) != GZIP_MAGIC and not any(rest):
                break  # zero padding after the last member, as gzip tolerates
    except zlib.error as exc:
        raise MalformedInputError(f"corrupt gzip stream: {exc}", path) from exc
    return bytes(out)


def read_profile(path: Path | str) -> tuple[Profile, bool]:
    """Read a pprof file; returns ``(profile, was_gzipped)``.

    Raises MalformedInputError (naming the file) for truncated or garbage input.
    """
    return parse_profile(read_profile_bytes(path), path)


def read_profile_bytes(path: Path | str) -> bytes:
    """The bytes of the profile file at ``path``; SymbolizeError naming it when it cannot be read."""
    path = Path(path)
    try:
        return path.read_bytes()
    except OSError as error:
        raise os_error(error, "read", path) from error


def serialize_profile(profile: Profile, *, gzip: bool) -> bytes:
    data: bytes = profile.SerializeToString()
    if gzip:
        # mtime=0 keeps the output reproducible for the same profile. Level 6 is what pprof's own
        # writer uses (Go's gzip default): a third faster than Python's default 9, 0.5% larger.
        data = gzip_module.compress(data, compresslevel=6, mtime=0)
    return data


def write_profile(profile: Profile, path: Path | str, *, gzip: bool) -> None:
    """Write ``profile`` to ``path`` atomically, with the mode a plain write would give.

    The bytes go to a temporary file in the same directory, are fsynced, then
    renamed over ``path`` with ``os.replace``: readers see the old file or the
    new one, never half of one. The file gets the mode of the one it replaces, or
    0666 less the umask for a new one, as ``open()`` would give (the temporary is 0600).
    On failure the temporary file is removed; one a killed process left behind is
    removed by a later write in the same directory
    (:func:`symbolize.tempfiles.remove_stale_temporaries`). Errors name ``path``.

    A symlink is written through: the file it leads to is the one replaced (:func:`output_target`),
    and anything that is not a regular file (a device such as ``/dev/null``, a FIFO, a socket) is
    refused, never replaced.
    """
    write_atomically(serialize_profile(profile, gzip=gzip), path)


def write_atomically(data: bytes, path: Path | str) -> None:
    """Write ``data`` to ``path`` as :func:`write_profile` writes a profile: atomically, through
    symlinks, never over anything but a regular file."""
    named = Path(path)
    path = output_target(named)
    remove_stale_temporaries(path.parent, PROFILE_TEMPORARY)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise os_error(error, "write", named) from error
    tmp_path = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as tmp_file:
            tmp_file.write(data)
            tmp_file.flush()
            os.fsync(tmp_file.fileno())
        os.chmod(tmp_path, _mode_for(path))
        os.replace(tmp_path, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        if isinstance(error, OSError):
            raise os_error(error, "write", named) from error
        raise


# What a file that is not a regular one is, by stat's file type, for the refusal.
_FILE_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def output_target(path: Path | str) -> Path:
    """The regular file writing ``path`` replaces: ``path``, or where its symlinks lead (which
    may not exist yet: it is created). Raises SymbolizeError, naming ``path``, when that is
    anything but a regular file: replacing a device node, a FIFO or a socket with a file would
    break whatever else uses it (``-o /dev/null`` as root would replace the system's)."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except OSError as error:
        raise os_error(error, "write", path) from error
    if stat.S_ISREG(mode):
        return target
    if stat.S_ISDIR(mode):
        raise SymbolizeError("cannot write: is a directory", path)  # as os_error words EISDIR
    kind = next((kind for is_kind, kind in _FILE_KINDS if is_kind(mode)), "not a regular file")
    shown = f"{kind}, {target}" if target != path else kind
    raise SymbolizeError(f"cannot write: not a regular file ({shown})", path)


def _mode_for(path: Path) -> int:
    """The permission bits ``open(path, "w")`` would leave: the existing file's, else 0666 less
    the umask (read by setting it, the only portable way, and set back at once)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


class StringTable:
    """Interns strings into ``profile.string_table``, appending only new ones.

    Existing entries keep their indices (the first occurrence wins for
    duplicates); an empty table gets its mandatory ``""`` at index 0.
    """

    def __init__(self, profile: Profile) -> None:
        self._strings = profile.string_table
        if len(self._strings) == 0:
            self._strings.append("")
        self._index: dict[str, int] = {}
        for index, text in enumerate(self._strings):
            self._index.setdefault(text, index)

    def intern(self, text: str) -> int:
        """Index of ``text``, appending it when it is new."""
        index = self._index.get(text)
        if index is None:
            index = len(self._strings)
            self._strings.append(text)
            self._index[text] = index
        return index

    def get(self, index: int) -> str:
        """The string at ``index``; "" for an index outside the table (as pprof does)."""
        if 0 <= index < len(self._strings):
            return str(self._strings[index])
        return ""

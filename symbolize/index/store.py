"""The index file format: named typed arrays behind a checked header, read through mmap.

Layout (little-endian)::

    magic "SYMIDX\\0" + u8 format version
    u32 header length, u32 array count, u32 CRC32 of the header that follows
    header: the key (UTF-8, length-prefixed), then per array: name (length-prefixed ASCII),
            type code (one byte of 'B', 'H', 'I', 'i', 'Q', 'q'), u64 offset, u64 count, u32 CRC32
    arrays, each 8-byte aligned

Arrays are mapped, not read: a lookup touches only the pages it needs, and each
array's CRC32 is checked the first time it is used, so a damaged file is
detected before any of its numbers is believed. Writing goes to a temporary
file in the same directory, then ``os.replace``: readers see the old file or the
new one, never half of one, and two writers racing leave one whole file.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from array import array
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal

from symbolize.formats.errors import MalformedInputError

MAGIC = b"SYMIDX\0"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<7sBIII")
_ENTRY = struct.Struct("<cQQI")
_ITEM_SIZES = {"B": 1, "H": 2, "I": 4, "i": 4, "Q": 8, "q": 8}
_TypeCode = Literal["B", "H", "I", "i", "Q", "q"]
_CASTS: dict[str, _TypeCode] = {"B": "B", "H": "H", "I": "I", "i": "i", "Q": "Q", "q": "q"}


def write_index(path: Path, key: str, arrays: Mapping[str, array[int] | bytes]) -> None:
    """Write ``arrays`` under ``key`` to ``path`` atomically."""
    entries = []
    # Each array's own bytes (a view, not a copy: a large file's arrays are tens of megabytes),
    # after the padding that aligns it.
    blobs: list[tuple[bytes, memoryview]] = []
    offset = 0
    for name, values in arrays.items():
        code = values.typecode if isinstance(values, array) else "B"
        if code not in _ITEM_SIZES or (isinstance(values, array) and values.itemsize != _ITEM_SIZES[code]):
            raise ValueError(f"array {name} has unsupported type {code}")  # a bug in the builder, not input
        data = memoryview(values).cast("B") if isinstance(values, array) else memoryview(bytes(values))
        padding = -offset % 8
        offset += padding
        blobs.append((b"\0" * padding, data))
        entries.append((name, code, offset, len(data) // _ITEM_SIZES[code], _crc32(data)))
        offset += len(data)
    header = bytearray(_short_bytes(key.encode()))
    for name, code, array_offset, count, crc in entries:
        header += _short_bytes(name.encode("ascii")) + _ENTRY.pack(code.encode(), array_offset, count, crc)
    # Imported here: a warm run reads indexes and never writes one.
    import tempfile

    from symbolize.errors import os_error
    from symbolize.tempfiles import INDEX_TEMPORARY, remove_stale_temporaries

    header += b"\0" * (-(len(header) + _PREFIX.size) % 8)
    prefix = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(header), len(entries), zlib.crc32(header))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent, INDEX_TEMPORARY)  # a killed build's (symbolize/tempfiles.py)
        handle, temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    except OSError as error:
        # Named by the cache's directory, what could not be written, never by our temporary's name.
        raise os_error(error, "write an index in this directory", path.parent) from error
    try:
        with os.fdopen(handle, "wb") as output:
            output.write(prefix)
            output.write(header)
            for zeros, data in blobs:
                output.write(zeros)
                output.write(data)
            output.flush()
            os.fsync(output.fileno())
        try:
            os.replace(temporary, path)
        except PermissionError:
            # Windows refuses to replace a file another process has mapped. That file is an
            # index of the same build, as good as ours: keep it and drop ours.
            if not path.exists():
                raise
            Path(temporary).unlink(missing_ok=True)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise os_error(error, "write", path) from error
        raise


def _crc32(data: memoryview) -> int:
    """zlib's CRC32 of ``data``: the compiled kernels' where they are built (the CPU's carry-less
    multiply: a tenth of zlib's instructions, a copy of a writable array included), else zlib's."""
    from symbolize.formats.native import kernels  # loaded already by any run that builds an index

    if kernels is None:
        return zlib.crc32(data)
    crc: int = kernels.crc32(data, 0, len(data))
    return crc


def _short_bytes(data: bytes) -> bytes:
    return struct.pack("<H", len(data)) + data


class IndexDamagedError(MalformedInputError):
    """An index file's contents do not match their checksums."""


class IndexFile:
    """A mapped index file; ``array(name)`` returns a typed, checked, zero-copy view."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < _PREFIX.size:
                raise MalformedInputError("index file is truncated", path)
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self._view = memoryview(self._map)
        try:
            self._entries = self._read_header(key)
        except (struct.error, UnicodeDecodeError, IndexError, KeyError) as error:
            self.close()
            raise MalformedInputError(f"index header is damaged: {error}", path) from error
        except MalformedInputError:
            self.close()
            raise
        self._checked: dict[str, memoryview] = {}

    def _read_header(self, key: str) -> dict[str, tuple[str, int, int, int]]:
        magic, version, header_length, count, crc = _PREFIX.unpack_from(self._view, 0)
        if magic != MAGIC or version != FORMAT_VERSION:
            raise MalformedInputError("not an index of this version", self.path)
        header = bytes(self._view[_PREFIX.size : _PREFIX.size + header_length])
        if len(header) != header_length or zlib.crc32(header) != crc:
            raise MalformedInputError("index header checksum does not match", self.path)
        position = 0
        stored_key, position = _read_short(header, position)
        if stored_key.decode() != key:
            raise MalformedInputError("index belongs to another file", self.path)
        base = _PREFIX.size + header_length
        entries = {}
        for _ in range(count):
            name, position = _read_short(header, position)
            code, offset, items, array_crc = _ENTRY.unpack_from(header, position)
            position += _ENTRY.size
            end = base + offset + items * _ITEM_SIZES[code.decode()]
            if end > len(self._view):
                raise MalformedInputError(f"index array {name.decode()} runs past the end of the file", self.path)
            entries[name.decode("ascii")] = (code.decode(), base + offset, items, array_crc)
        return entries

    def array_names(self) -> tuple[str, ...]:
        """The names of the arrays the header lists (none of them checked yet)."""
        return tuple(self._entries)

    def array(self, name: str) -> memoryview:
        view = self._checked.get(name)
        if view is None:
            entry = self._entries.get(name)
            if entry is None:
                raise IndexDamagedError(f"index has no array {name}", self.path)
            code, start, items, crc = entry
            raw = self._view[start : start + items * _ITEM_SIZES[code]]
            if zlib.crc32(raw) != crc:
                raise IndexDamagedError(f"index array {name} is damaged", self.path)
            view = self._checked[name] = raw.cast(_CASTS[code])
        return view

    def checked_contents(
        self, names: Iterable[str], crc32: Callable[[memoryview, int, int], int]
    ) -> tuple[memoryview, dict[str, tuple[str, int, int]]]:
        """The whole mapped file, and the type code, byte offset and item count of each array of
        ``names``, each checked against its CRC32 by ``crc32(data, start, length)``.

        For the compiled lookup kernel, which borrows the mapping (a read-only buffer) rather than
        a copy of the file: a copy cost a warm lookup of libpython a tenth of its time. The checks
        are those :meth:`array` makes, with the kernel's faster CRC32.
        """
        data = self._view
        places = {}
        for name in names:
            entry = self._entries.get(name)
            if entry is None:
                raise IndexDamagedError(f"index has no array {name}", self.path)
            code, start, items, crc = entry
            if crc32(data, start, items * _ITEM_SIZES[code]) != crc:
                raise IndexDamagedError(f"index array {name} is damaged", self.path)
            places[name] = (code, start, items)
        return data, places

    def close(self) -> None:
        for view in getattr(self, "_checked", {}).values():
            view.release()
        self._checked = {}
        try:
            self._view.release()
            self._map.close()
        except BufferError:
            pass  # a compiled lookup kernel still borrows the mapping: it is unmapped with the kernel


def _read_short(data: bytes, position: int) -> tuple[bytes, int]:
    (length,) = struct.unpack_from("<H", data, position)
    end = position + 2 + length
    if end > len(data):
        raise IndexError("length-prefixed field runs past the header")
    return data[position + 2 : end], end

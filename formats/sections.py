"""Decompression of ELF debug sections.

Implements the two encodings found in the wild:

- ``SHF_COMPRESSED`` sections (System V gABI, "Section Compression"): an
  ``Elf32_Chdr``/``Elf64_Chdr`` header, then the stream; ``ch_type`` 1 is
  ELFCOMPRESS_ZLIB, 2 is ELFCOMPRESS_ZSTD.
- legacy GNU ``.zdebug_*`` sections: the bytes ``ZLIB``, the uncompressed size
  as an 8-byte big-endian integer, then a zlib stream.

Every problem raises :class:`MalformedInputError` naming the file and the
section's offset in it.

The size a header declares is the attacker's to choose, and the output is
allocated up front, so it is capped before anything is inflated: a
section may decompress to at most :data:`SIZE_FACTOR` times the size of the
file holding it, and never more than :data:`MAX_DECOMPRESSED_SIZE` (1 GiB by
default; the environment variable ``SYMBOLIZE_MAX_SECTION_SIZE``, in bytes,
or assigning the module attribute, changes it). Past either,
:class:`InputLimitError` names the file, the section's offset and the cap.
Real debug sections compress 3-10x; a file's own size bounds them all.
"""

from __future__ import annotations

import struct
from pathlib import Path

from symbolize.formats.errors import InputLimitError, MalformedInputError, configured_limit

ELFCOMPRESS_ZLIB = 1
ELFCOMPRESS_ZSTD = 2

# The absolute cap on one decompressed section, in bytes; SYMBOLIZE_MAX_SECTION_SIZE overrides it.
MAX_DECOMPRESSED_SIZE = 1 << 30
MAX_SIZE_SETTING = "SYMBOLIZE_MAX_SECTION_SIZE"
# A section decompresses to at most this many times the size of its file.
SIZE_FACTOR = 64

_CHDR32 = struct.Struct("III")  # ch_type, ch_size, ch_addralign
_CHDR64 = struct.Struct("IIQQ")  # ch_type, ch_reserved, ch_size, ch_addralign
_ZDEBUG_MAGIC = b"ZLIB"


def decompress_chdr(
    data: bytes | memoryview,
    *,
    is_64: bool,
    little_endian: bool,
    path: Path,
    file_offset: int,
    file_size: int | None = None,
) -> bytes:
    """Decompress an ``SHF_COMPRESSED`` section whose raw bytes are ``data``.

    ``file_size``: the size of the file holding it, which bounds the output (module docstring).
    """
    order = "<" if little_endian else ">"
    header = struct.Struct(order + (_CHDR64 if is_64 else _CHDR32).format)
    if len(data) < header.size:
        raise MalformedInputError("compressed section shorter than its Chdr header", path, file_offset)
    if is_64:
        ch_type, _reserved, ch_size, _align = header.unpack_from(data)
    else:
        ch_type, ch_size, _align = header.unpack_from(data)
    stream = memoryview(data)[header.size :]
    if ch_type == ELFCOMPRESS_ZLIB:
        return _inflate(stream, ch_size, path, file_offset, file_size)
    if ch_type == ELFCOMPRESS_ZSTD:
        return _unzstd(stream, ch_size, path, file_offset, file_size)
    raise MalformedInputError(f"unknown section compression type {ch_type}", path, file_offset)


def decompress_zdebug(
    data: bytes | memoryview, *, path: Path, file_offset: int, file_size: int | None = None
) -> bytes:
    """Decompress a legacy ``.zdebug_*`` section whose raw bytes are ``data`` (``file_size`` as above)."""
    if len(data) < 12 or bytes(data[:4]) != _ZDEBUG_MAGIC:
        raise MalformedInputError(".zdebug section lacks its ZLIB header", path, file_offset)
    (size,) = struct.unpack_from(">Q", data, 4)
    return _inflate(memoryview(data)[12:], size, path, file_offset, file_size)


def max_decompressed_size() -> int:
    """The absolute cap in force: ``SYMBOLIZE_MAX_SECTION_SIZE`` when set, else the module's."""
    return configured_limit(MAX_SIZE_SETTING, MAX_DECOMPRESSED_SIZE)


def _check_size(size: int, path: Path, file_offset: int, file_size: int | None) -> None:
    limit = max_decompressed_size()
    if size > limit:
        raise InputLimitError(
            f"compressed section claims {size} bytes", path, file_offset, limit=limit, setting=MAX_SIZE_SETTING
        )
    if file_size is not None and size > SIZE_FACTOR * file_size:
        raise InputLimitError(
            f"compressed section claims {size} bytes, more than {SIZE_FACTOR} times its file's {file_size}",
            path,
            file_offset,
            limit=SIZE_FACTOR * file_size,
        )


def _inflate(stream: memoryview, size: int, path: Path, file_offset: int, file_size: int | None) -> bytes:
    _check_size(size, path, file_offset, file_size)
    import zlib  # here: most files have no compressed sections, and every ELF open imported it

    inflater = zlib.decompressobj()
    try:
        # max_length bounds the output by the declared size, so a zlib bomb stops early.
        out = inflater.decompress(stream, size + 1)
    except zlib.error as err:
        raise MalformedInputError(f"bad zlib stream: {err}", path, file_offset) from err
    if len(out) != size or not inflater.eof:
        raise MalformedInputError(f"zlib stream gives {len(out)} bytes, header says {size}", path, file_offset)
    return out


def _unzstd(stream: memoryview, size: int, path: Path, file_offset: int, file_size: int | None) -> bytes:
    _check_size(size, path, file_offset, file_size)
    import pyzstd  # imported here: most files have no zstd sections, and it costs 40 ms to load

    decompressor = pyzstd.ZstdDecompressor()
    try:
        out: bytes = decompressor.decompress(stream, size + 1)
    except pyzstd.ZstdError as err:
        raise MalformedInputError(f"bad zstd stream: {err}", path, file_offset) from err
    if len(out) != size or not decompressor.eof:
        raise MalformedInputError(f"zstd stream gives {len(out)} bytes, header says {size}", path, file_offset)
    return out

"""The layout of a Microsoft Cabinet ([MS-CAB] 2.1-2.4): header, folders, files, data blocks.

Only what a symbol store's ``_`` file needs is accepted: one cabinet (no spanning to a previous
or next one), one folder, one file starting at the folder's start. Every count and size is
checked against the bytes present and the caller's output cap before anything is decompressed,
so a hostile header costs nothing. Failures raise :class:`MalformedInputError` (or its
:class:`InputLimitError`) naming the cabinet.

Hand-written rather than through a PyPI reader: cabarchive, the maintained pure-Python one, reads
MSZIP only and refuses an LZX folder while parsing, and none applies our caps before allocating;
the layout is five fixed structures.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from symbolize.formats.errors import InputLimitError, MalformedInputError, UnsupportedFormatError

CAB_MAGIC = b"MSCF"

HEADER = struct.Struct("<4sIIIIIBBHHHHH")  # [MS-CAB] 2.2 CFHEADER, up to iCabinet
FOLDER = struct.Struct("<IHH")  # 2.3 CFFOLDER: coffCabStart, cCFData, typeCompress
FILE = struct.Struct("<IIHHHH")  # 2.4 CFFILE: cbFile, uoffFolderStart, iFolder, date, time, attribs
DATA = struct.Struct("<IHH")  # 2.5 CFDATA: csum, cbData, cbUncomp

FLAG_PREV_CABINET = 0x0001
FLAG_NEXT_CABINET = 0x0002
FLAG_RESERVE_PRESENT = 0x0004

COMPRESS_NONE = 0
COMPRESS_MSZIP = 1
COMPRESS_QUANTUM = 2
COMPRESS_LZX = 3

# [MS-CAB] 2.5: "cbUncomp ... MUST NOT exceed 32768" for MSZIP and LZX frames; a block stored
# uncompressed is held to the same size, as makecab writes it.
MAX_BLOCK_OUTPUT = 32768
# [MS-CAB] 2.5's cbData cap for a block of compressed data (32768 plus the codecs' overhead).
MAX_BLOCK_INPUT = 32768 + 6144
MAX_NAME = 256  # 2.4: szName is at most CB_MAX_FILENAME (256) bytes with its NUL


@dataclass(frozen=True)
class DataBlock:
    """One CFDATA: its payload and how many bytes it decompresses to."""

    payload: bytes
    output_size: int


@dataclass(frozen=True)
class Cabinet:
    """The single file of a single-folder cabinet, its data blocks not yet decompressed."""

    name: str
    size: int
    compression: int  # COMPRESS_* (typeCompress & 0xF)
    window_bits: int  # LZX's window (typeCompress >> 8 & 0x1F); 0 otherwise
    blocks: tuple[DataBlock, ...]


def checksum(data: bytes, seed: int = 0) -> int:
    """[MS-CAB] 2.5's CFDATA checksum: XOR of little-endian 32-bit words, the tail folded in
    the spec's (big-endian-looking) order."""
    value = seed
    whole = len(data) - len(data) % 4
    for (word,) in struct.iter_unpack("<I", data[:whole]):
        value ^= word
    tail = 0
    for byte in data[whole:]:
        tail = (tail << 8) | byte
    return value ^ tail


def parse(data: bytes, *, path: str, max_bytes: int) -> Cabinet:
    """Check and read the cabinet's structure; the blocks' payloads are sliced, not decoded."""

    def fail(message: str, offset: int | None = None) -> MalformedInputError:
        return MalformedInputError(f"cabinet: {message}", path, offset)

    if len(data) < HEADER.size:
        raise fail(f"{len(data)} bytes is shorter than a cabinet header")
    (magic, _r1, declared_size, _r2, files_offset, _r3, minor, major, folders, files, flags, _set_id,
     _index) = HEADER.unpack_from(data, 0)
    if magic != CAB_MAGIC:
        raise fail("no MSCF signature", 0)
    if (major, minor) != (1, 3):
        raise UnsupportedFormatError(f"cabinet: version {major}.{minor}, not 1.3", path)
    if declared_size > len(data):
        raise fail(f"the header declares {declared_size} bytes, {len(data)} present", 8)
    if flags & (FLAG_PREV_CABINET | FLAG_NEXT_CABINET):
        raise fail("spans several cabinets (a symbol store's file is one)", 30)
    if folders != 1 or files != 1:
        raise fail(f"{folders} folders and {files} files, where a symbol store's file has one of each", 26)
    position = HEADER.size
    folder_reserve = data_reserve = 0
    if flags & FLAG_RESERVE_PRESENT:
        if position + 4 > len(data):
            raise fail("truncated reserve sizes", position)
        header_reserve, folder_reserve, data_reserve = struct.unpack_from("<HBB", data, position)
        position += 4 + header_reserve
    if position + FOLDER.size + folder_reserve > len(data):
        raise fail("truncated folder entry", position)
    first_block, block_count, compress = FOLDER.unpack_from(data, position)
    kind = compress & 0xF
    window_bits = (compress >> 8) & 0x1F if kind == COMPRESS_LZX else 0
    if kind == COMPRESS_QUANTUM:
        raise UnsupportedFormatError("cabinet: Quantum compression is not read", path)
    if kind not in (COMPRESS_NONE, COMPRESS_MSZIP, COMPRESS_LZX):
        raise fail(f"unknown compression type {compress:#06x}", position + 6)
    if kind == COMPRESS_LZX and not 15 <= window_bits <= 21:
        raise fail(f"LZX window of 2^{window_bits} bytes (a cabinet's is 2^15 to 2^21)", position + 6)

    if files_offset + FILE.size > len(data):
        raise fail("truncated file entry", files_offset)
    size, folder_start, folder_index, _date, _time, attributes = FILE.unpack_from(data, files_offset)
    if folder_index != 0 or folder_start != 0:
        raise fail(f"the file lies in folder {folder_index} at {folder_start}, not at the first one's start",
                   files_offset)
    if size > max_bytes:
        raise InputLimitError(f"cabinet: the file declares {size} bytes", path, files_offset, limit=max_bytes)
    name_start = files_offset + FILE.size
    name_end = data.find(b"\0", name_start, name_start + MAX_NAME)
    if name_end < 0:
        raise fail("the file name is unterminated or longer than 255 bytes", name_start)
    raw_name = data[name_start:name_end]
    # attribs 0x80 (_A_NAME_IS_UTF): UTF-8; otherwise the OEM code page, of which symbol names
    # use only ASCII: anything else is read as Latin-1 so that a name never fails to decode.
    try:
        name = raw_name.decode("utf-8" if attributes & 0x80 else "latin-1")
    except UnicodeDecodeError as error:
        raise fail("the file name is not UTF-8", name_start) from error

    blocks = []
    position = first_block
    total = 0
    for index in range(block_count):
        if position + DATA.size + data_reserve > len(data):
            raise fail(f"data block {index} is truncated", position)
        stored_sum, input_size, output_size = DATA.unpack_from(data, position)
        start = position + DATA.size + data_reserve
        if input_size > MAX_BLOCK_INPUT or output_size > MAX_BLOCK_OUTPUT:
            raise fail(f"data block {index} declares {input_size} bytes in, {output_size} out", position)
        if start + input_size > len(data):
            raise fail(f"data block {index} runs past the end", position)
        if kind == COMPRESS_NONE and input_size != output_size:
            raise fail(f"stored data block {index} has {input_size} bytes in, {output_size} out", position)
        payload = data[start:start + input_size]
        if stored_sum:
            # Reserve and payload as one run, then cbData and cbUncomp as one word (libmspack's order).
            sizes = checksum(data[position + 4:position + 8])
            computed = checksum(data[position + DATA.size:start + input_size], sizes)
            if computed != stored_sum:
                raise fail(f"data block {index} fails its checksum", position)
        total += output_size
        if total > max_bytes:
            raise InputLimitError("cabinet: the data blocks declare more output", path, position, limit=max_bytes)
        blocks.append(DataBlock(payload, output_size))
        position = start + input_size
    if total < size:
        raise fail(f"the data blocks hold {total} bytes, the file {size}")
    return Cabinet(name, size, kind, window_bits, tuple(blocks))

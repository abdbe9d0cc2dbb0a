"""Change the CodeView record of a real PE fixture, for discovery tests: the rest stays as built.

The debug directory entry (PE/COFF specification, "Debug Directory (Image Only)") is found with
pefile; a new record is appended to the file (an overlay), which ``PointerToRawData`` reaches.
"""

from __future__ import annotations

import struct

import pefile


def codeview_entry(data: bytes) -> int:
    """The file offset of the debug directory entry of the CodeView record."""
    image = pefile.PE(data=data, fast_load=True)
    image.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DEBUG"]])
    return int(next(entry.struct.get_file_offset() for entry in image.DIRECTORY_ENTRY_DEBUG if entry.struct.Type == 2))


def with_codeview(data: bytes, size: int, record: bytes | None = None) -> bytes:
    """``data`` whose CodeView entry says ``size`` bytes, of ``record`` (appended) or the record in place."""
    at = codeview_entry(data)
    out = bytearray(data)
    struct.pack_into("<I", out, at + 16, size)  # IMAGE_DEBUG_DIRECTORY.SizeOfData
    if record is not None:
        struct.pack_into("<II", out, at + 20, 0, len(out))  # AddressOfRawData (none), PointerToRawData
        out += record
    return bytes(out)


def rsds_head(data: bytes) -> bytes:
    """The 24 bytes of ``data``'s RSDS record before its path (signature, GUID, age)."""
    (offset,) = struct.unpack_from("<I", data, codeview_entry(data) + 24)
    return data[offset : offset + 24]

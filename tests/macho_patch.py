"""Change one field of a real Mach-O fixture, for discovery tests: the rest of the file stays as built.

Only the load commands and the symbol table are touched (thin 64-bit little-endian files: the
fixtures' layout; ``<mach-o/loader.h>``, ``<mach-o/nlist.h>``).
"""

from __future__ import annotations

import struct
from pathlib import Path

from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.symtab import N_OSO

LC_SYMTAB = 0x2


def with_oso_name(data: bytes, original: Path, name: str, mtime: int | None = None) -> bytes:
    """``data`` (``original``'s bytes: a thin 64-bit Mach-O whose string table ends the file) with
    its first ``N_OSO`` stab naming ``name`` (appended to the string table), recording ``mtime``
    when given."""
    with MachOFile(original) as image:
        oso = next(stab for stab in image.stabs() if stab.n_type == N_OSO)
    out = bytearray(data)
    (ncmds,) = struct.unpack_from("<I", out, 16)
    at = 32  # sizeof(mach_header_64)
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", out, at)
        if cmd == LC_SYMTAB:
            break
        at += size
    stroff, strsize = struct.unpack_from("<II", out, at + 16)
    assert stroff + strsize == len(out), "the string table must end the file"
    struct.pack_into("<I", out, oso.file_offset, strsize)  # nlist_64.n_strx
    if mtime is not None:
        struct.pack_into("<Q", out, oso.file_offset + 8, mtime)  # nlist_64.n_value
    added = name.encode() + b"\0"
    struct.pack_into("<I", out, at + 20, strsize + len(added))
    return bytes(out + added)

"""Microsoft Cabinet files as a symbol store writes them: the ``_`` form (``name.pd_``), one
cabinet holding one file, compressed with MSZIP (``symstore /compress`` on old versions, gcab)
or LZX (``symstore /compress``, makecab's default for it).

:func:`extract_single` checks the structure in Python (structure.py) and decodes with the
compiled kernels (the Rust ``cab`` crate, MSZIP via flate2 and LZX via lzxd) where they are
built and enabled, else with the Python reference (folder.py, lzx.py): the two give the same
bytes (tests/test_cab.py), and cabextract a third opinion.
"""

from __future__ import annotations

from symbolize.formats.cab.folder import decode_file
from symbolize.formats.cab.structure import CAB_MAGIC, COMPRESS_LZX, COMPRESS_NONE, Cabinet, parse
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.native import kernels

__all__ = ["CAB_MAGIC", "extract_single"]


def extract_single(data: bytes, *, path: str, max_bytes: int) -> tuple[str, bytes]:
    """The one file of a symstore ``_`` cabinet: its stored name and its bytes.

    ``path`` names the cabinet in errors (a URL or a file); ``max_bytes`` caps the file's size,
    declared and decoded. Raises MalformedInputError (InputLimitError past the cap) for a cabinet
    that is not one file in one folder, or that does not decode; UnsupportedFormatError for
    Quantum. The caller checks that the name is the one it asked for.
    """
    cabinet = parse(data, path=path, max_bytes=max_bytes)
    if kernels is None or cabinet.compression == COMPRESS_NONE:
        return cabinet.name, decode_file(cabinet, path)
    contents = decode_file_compiled(data, cabinet.size, path)
    if cabinet.compression == COMPRESS_LZX and _lzxd_may_have_mistranslated(cabinet, contents):
        return cabinet.name, decode_file(cabinet, path)
    return cabinet.name, contents


def _lzxd_may_have_mistranslated(cabinet: Cabinet, contents: bytes) -> bool:
    """Whether lzxd's E8 slip may be in `contents`: the reference must decode the file instead.

    lzxd 0.2.7 undoes an E8 call target of exactly 0 as if it were negative (``is_positive()``
    where libmspack, 7-Zip and [MS-PATCH] test ``>= 0``): it writes the translation size where
    ``-position`` belongs. That wrong value is E8 followed by the stream's translation size, so
    where that pattern does not occur the output is right; where it does (rarely), the Python
    reference decodes the file.
    """
    head = cabinet.blocks[0].payload[:6] if cabinet.blocks else b""
    if len(head) < 6:
        return False
    words = [int.from_bytes(head[i:i + 2], "little") for i in (0, 2, 4)]
    if not words[0] >> 15:
        return False  # no E8 translation in this stream
    size = ((words[0] & 0x7FFF) << 17 | words[1] << 1 | words[2] >> 15) & 0xFFFFFFFF
    return b"\xe8" + size.to_bytes(4, "little") in contents


def decode_file_compiled(data: bytes, size: int, path: str) -> bytes:
    """The one file's `size` bytes, decoded by the compiled kernels (the caller has parsed `data`)."""
    assert kernels is not None
    try:
        contents: bytes = kernels.cab_extract_single(data, size)
    except ValueError as error:
        raise MalformedInputError(f"cabinet: {error}", path) from error
    if len(contents) != size:
        raise MalformedInputError(f"cabinet: the file decodes to {len(contents)} bytes, not {size}", path)
    return contents

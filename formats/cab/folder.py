"""The Python reference decoders of a cabinet folder: stored, MSZIP ([MS-MCI]) and LZX (lzx.py).

MSZIP goes through zlib: each data block is "CK" and a raw deflate stream that ends in a final
block, whose back-references may reach into the previous block's output (given as zlib's
dictionary). Each block must decode to exactly its declared size.
"""

from __future__ import annotations

import zlib

from symbolize.formats.cab.lzx import LzxError, decompress
from symbolize.formats.cab.structure import COMPRESS_LZX, COMPRESS_MSZIP, COMPRESS_NONE, Cabinet
from symbolize.formats.errors import MalformedInputError

MSZIP_SIGNATURE = b"CK"
DEFLATE_WINDOW = 32768


def _mszip(cabinet: Cabinet, path: str) -> bytes:
    output = bytearray()
    for index, block in enumerate(cabinet.blocks):
        if block.payload[:2] != MSZIP_SIGNATURE:
            raise MalformedInputError(f"cabinet: MSZIP block {index} lacks its CK signature", path)
        history = bytes(output[-DEFLATE_WINDOW:])
        inflater = zlib.decompressobj(-15, zdict=history) if history else zlib.decompressobj(-15)
        try:
            piece = inflater.decompress(block.payload[2:], block.output_size + 1)
        except zlib.error as error:
            raise MalformedInputError(f"cabinet: MSZIP block {index}: {error}", path) from error
        if not inflater.eof or len(piece) != block.output_size:
            raise MalformedInputError(
                f"cabinet: MSZIP block {index} decodes to {len(piece)}{'' if inflater.eof else '+'} bytes, "
                f"not {block.output_size}", path)
        output += piece
    return bytes(output)


def decode_file(cabinet: Cabinet, path: str) -> bytes:
    """The cabinet's one file, decoded by the Python reference."""
    if cabinet.compression == COMPRESS_NONE:
        folder = b"".join(block.payload for block in cabinet.blocks)
    elif cabinet.compression == COMPRESS_MSZIP:
        folder = _mszip(cabinet, path)
    else:
        assert cabinet.compression == COMPRESS_LZX
        stream = b"".join(block.payload for block in cabinet.blocks)
        try:
            folder = decompress(stream, cabinet.window_bits, sum(block.output_size for block in cabinet.blocks))
        except LzxError as error:
            raise MalformedInputError(f"cabinet: LZX: {error}", path) from error
    return folder[:cabinet.size]

"""Writes MSF containers (LLVM's "The MSF File Format") from a list of streams, for tests.

Used to re-lay a real PDB's streams out with another block size, blocks in shuffled order and a
stream directory spanning several blocks (lld-link only writes 4 KB and larger blocks, each
stream contiguous), and to build small hostile files.
"""

from __future__ import annotations

import random
import struct

from symbolize.formats.pdb.msf import MSF_MAGIC, MsfFile


def streams_of(data: bytes) -> list[bytes]:
    """Every stream of an MSF file, read with our reader (checked against llvm-pdbutil elsewhere)."""
    msf = MsfFile(data, path=__import__("pathlib").Path("<streams_of>"))
    return [msf.stream(index) for index in range(msf.stream_count)]


def build_msf(streams: list[bytes | None], block_size: int, seed: int = 0) -> bytes:
    """An MSF file holding ``streams`` (None: a nil stream), data blocks in a shuffled order.

    Block 0 is the superblock, blocks 1 and 2 the free block maps (left zero), block 3 the
    block map listing the directory's blocks; every other block is placed at random.
    """
    rng = random.Random(seed)
    per_stream = [0 if s is None else -(-len(s) // block_size) for s in streams]
    directory_size = 4 + 4 * len(streams) + 4 * sum(per_stream)
    directory_blocks = -(-directory_size // block_size)
    total_data = sum(per_stream) + directory_blocks
    free = list(range(4, 4 + total_data))
    rng.shuffle(free)
    blocks = bytearray(block_size * (4 + total_data))
    stream_blocks = []
    for stream, count in zip(streams, per_stream, strict=True):
        mine = [free.pop() for _ in range(count)]
        for index, block in enumerate(mine):
            chunk = (stream or b"")[index * block_size : (index + 1) * block_size]
            blocks[block * block_size : block * block_size + len(chunk)] = chunk
        stream_blocks.append(mine)
    directory = struct.pack("<I", len(streams))
    directory += b"".join(struct.pack("<I", 0xFFFFFFFF if s is None else len(s)) for s in streams)
    directory += b"".join(struct.pack(f"<{len(mine)}I", *mine) for mine in stream_blocks)
    directory_list = [free.pop() for _ in range(directory_blocks)]
    for index, block in enumerate(directory_list):
        chunk = directory[index * block_size : (index + 1) * block_size]
        blocks[block * block_size : block * block_size + len(chunk)] = chunk
    struct.pack_into(f"<{directory_blocks}I", blocks, 3 * block_size, *directory_list)
    header = MSF_MAGIC + struct.pack("<IIIIII", block_size, 1, len(blocks) // block_size, len(directory), 0, 3)
    blocks[: len(header)] = header
    return bytes(blocks)

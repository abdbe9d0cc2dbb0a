"""The MSF container of a PDB: the superblock, the stream directory, and streams as bytes.

Implements LLVM's "The MSF File Format" (docs/PDB/MsfFile.rst): a file of fixed-size blocks
(512 to 32768 bytes, a power of two); block 0 holds the superblock; ``BlockMapAddr`` names the
block listing the blocks of the stream directory; the directory holds the stream count, each
stream's size (``0xFFFFFFFF`` for a nil stream) and each stream's block list. Blocks of a stream
need not be contiguous or in order, and the directory itself may span several blocks.

Two other containers share the ``.pdb`` extension and are recognised only to be refused with a
reason: MSFZ (the compressed "PDZ" container; its signature is in Microsoft's MSFZ Container
Specification) and the PDB 2.0 ("JG") format of Visual C++ 6 and older.

Every size and block index is checked against the file before it is used, so a hostile file
raises MalformedInputError (with the file offset) instead of reading past its end.
"""

from __future__ import annotations

import struct
from mmap import mmap
from pathlib import Path

from symbolize.formats.errors import MalformedInputError, UnsupportedFormatError

MSF_MAGIC = b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0"
MSFZ_MAGIC = b"Microsoft MSFZ Container\r\n\x1aALD\0\0"
PDB20_MAGIC = b"Microsoft C/C++ program database 2.00\r\n\x1aJG\0\0"
_SUPERBLOCK = struct.Struct("<IIIIII")  # BlockSize, FreeBlockMapBlock, NumBlocks, NumDirectoryBytes, 0, BlockMapAddr
_VALID_BLOCK_SIZES = (512, 1024, 2048, 4096, 8192, 16384, 32768)
_NIL_STREAM = 0xFFFFFFFF


def is_pdb_magic(head: bytes) -> bool:
    """Whether ``head`` (the file's first bytes) starts like any PDB container, readable or not."""
    return head.startswith((MSF_MAGIC[:24], MSFZ_MAGIC[:24], PDB20_MAGIC[:32]))


class MsfFile:
    """The streams of an MSF file held in ``data`` (bytes, or the file's read-only mmap); each
    stream is read on demand, as bytes, or as a view of ``data`` (:meth:`stream_view`)."""

    def __init__(self, data: bytes | mmap, path: Path) -> None:
        self.path = path
        self._data = data
        if data[: len(MSFZ_MAGIC)] == MSFZ_MAGIC:
            raise UnsupportedFormatError(
                "compressed PDB (MSFZ container): not supported; convert it with `pdbcopy` or "
                "`llvm-pdbutil` to a regular PDB",
                path,
            )
        if data[:32] == PDB20_MAGIC[:32]:
            raise UnsupportedFormatError("PDB 2.0 (Visual C++ 6 and older): not supported", path)
        if data[: len(MSF_MAGIC)] != MSF_MAGIC:
            raise MalformedInputError("not a PDB (no MSF 7.00 signature)", path, 0)
        if len(data) < len(MSF_MAGIC) + _SUPERBLOCK.size:
            raise MalformedInputError("truncated MSF superblock", path, len(MSF_MAGIC))
        block_size, _free_map, num_blocks, directory_bytes, _unknown, block_map_addr = _SUPERBLOCK.unpack_from(
            data, len(MSF_MAGIC)
        )
        if block_size not in _VALID_BLOCK_SIZES:
            raise MalformedInputError(f"bad MSF block size {block_size}", path, len(MSF_MAGIC))
        self.block_size = block_size
        self.num_blocks = num_blocks
        if num_blocks * block_size > len(data) + block_size:
            raise MalformedInputError(
                f"MSF claims {num_blocks} blocks of {block_size} bytes, the file has {len(data)} bytes",
                path,
                len(MSF_MAGIC) + 8,
            )
        directory_blocks = -(-directory_bytes // block_size)
        if directory_blocks * 4 > block_size:
            raise MalformedInputError(
                f"stream directory of {directory_bytes} bytes needs more block indexes than one block holds",
                path,
                len(MSF_MAGIC) + 12,
            )
        map_offset = self._block_offset(block_map_addr, "directory block map")
        if map_offset + 4 * directory_blocks > len(data):
            raise MalformedInputError("directory block map is cut short by the end of the file", path, map_offset)
        block_list = struct.unpack_from(f"<{directory_blocks}I", data, map_offset)
        directory = self._gather(block_list, directory_bytes, "stream directory")
        self._stream_blocks, self._stream_sizes = self._parse_directory(directory)

    def _block_offset(self, block: int, what: str) -> int:
        offset: int = block * self.block_size
        if block >= self.num_blocks or offset >= len(self._data):
            raise MalformedInputError(f"{what} names block {block}, past the end of the file", self.path, offset)
        if block == 0:
            raise MalformedInputError(f"{what} names block 0, the superblock", self.path, 0)
        return offset

    def _runs(self, blocks: tuple[int, ...] | list[int], size: int, what: str) -> list[tuple[int, int]]:
        """The file ranges holding ``size`` bytes of ``blocks`` in order (consecutive blocks as one
        range), each block checked to lie inside the file."""
        count = len(blocks)
        if count and count == -(-size // self.block_size) and list(blocks) == list(range(blocks[0], blocks[0] + count)):
            # One range when the blocks follow each other (as linkers write streams), each block
            # needed: the checks below then hold for all where they hold for the first and last.
            start, end = blocks[0] * self.block_size, blocks[0] * self.block_size + size
            if blocks[0] > 0 and blocks[-1] < self.num_blocks and end <= len(self._data):
                return [(start, end)]
        runs: list[tuple[int, int]] = []
        remaining = size
        run_start = run_end = -1  # file offsets of the run of consecutive blocks being gathered
        for block in blocks:
            offset = self._block_offset(block, what)
            take = min(remaining, self.block_size)
            if take <= 0:
                continue
            if offset + take > len(self._data):
                raise MalformedInputError(f"{what} block {block} is cut short by the file's end", self.path, offset)
            if offset != run_end:  # blocks in file order are read as one range
                if run_end > run_start:
                    runs.append((run_start, run_end))
                run_start = offset
            run_end = offset + take
            remaining -= take
        if remaining > 0:
            raise MalformedInputError(f"{what} has fewer blocks than its size needs", self.path)
        if run_end > run_start:
            runs.append((run_start, run_end))
        return runs

    def _gather(self, blocks: tuple[int, ...] | list[int], size: int, what: str) -> bytes:
        """``size`` bytes from ``blocks`` in order, each block checked to lie inside the file."""
        return b"".join([self._data[start:end] for start, end in self._runs(blocks, size, what)])

    def _parse_directory(self, directory: bytes) -> tuple[list[list[int]], list[int]]:
        if len(directory) < 4:
            raise MalformedInputError("stream directory shorter than its stream count", self.path)
        (count,) = struct.unpack_from("<I", directory, 0)
        if 4 + 4 * count > len(directory):
            raise MalformedInputError(f"stream directory claims {count} streams, more than it holds", self.path)
        sizes = list(struct.unpack_from(f"<{count}I", directory, 4))
        position = 4 + 4 * count
        blocks: list[list[int]] = []
        for index, size in enumerate(sizes):
            needed = 0 if size == _NIL_STREAM else -(-size // self.block_size)
            if position + 4 * needed > len(directory):
                raise MalformedInputError(
                    f"stream {index} ({size} bytes) has more blocks than the directory lists", self.path
                )
            blocks.append(list(struct.unpack_from(f"<{needed}I", directory, position)))
            position += 4 * needed
        return blocks, [0 if size == _NIL_STREAM else size for size in sizes]

    @property
    def stream_count(self) -> int:
        return len(self._stream_sizes)

    def stream(self, index: int) -> bytes:
        """Stream ``index`` as bytes; b"" for a nil stream or an index past the directory."""
        if not 0 <= index < len(self._stream_sizes):
            return b""
        return self._gather(self._stream_blocks[index], self._stream_sizes[index], f"stream {index}")

    def stream_view(self, index: int) -> bytes | memoryview:
        """Stream ``index`` as :meth:`stream` gives it, but as a read-only view of the file's bytes
        (no copy) where its blocks lie in order in one range, as linkers write module streams."""
        if not 0 <= index < len(self._stream_sizes):
            return b""
        runs = self._runs(self._stream_blocks[index], self._stream_sizes[index], f"stream {index}")
        if len(runs) == 1:
            return memoryview(self._data)[runs[0][0] : runs[0][1]].toreadonly()
        return b"".join([self._data[start:end] for start, end in runs])

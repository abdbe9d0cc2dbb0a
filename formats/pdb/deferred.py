"""A PDB known by its identity, whose reader opens on first use: what a warm lookup needs of it.

:func:`read_pdb_identity` reads the PDB's GUID and age (the PDB info stream's header), and the DBI
age and machine (the DBI header), from a few of its blocks: the MSF superblock, the stream
directory and the first block of each of the two streams (LLVM's "The MSF File Format", "The PDB
Info Stream", "The DBI Stream"), with ``seek`` and short reads, never the whole file. Those are
all of its index key (symbolize/cache.py), so discovery can find the persistent index that answers
for the PDB without reading it, and still refuse a PDB of another build by the same IDs
(symbolize/discovery/pdb_locator.py).

:class:`DeferredPdb` stands for the :class:`~symbolize.formats.pdb.pdb.PdbFile` it opens (and
imports) the first time anything beyond that identity is asked of it. Nothing here imports the
reader.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from symbolize.formats.pdb.msf import MSF_MAGIC
from symbolize.formats.types import DebugHint, DebugId, DebugIdKind, Frame, Image, ReaderDefaults, Segment

if TYPE_CHECKING:
    from symbolize.formats.pdb.pdb import PdbFile
    from symbolize.formats.types import AnswerRegion, AnswerRun, DebugInfoSummary, Symbol

_SUPERBLOCK = struct.Struct("<IIIIII")  # BlockSize, FreeBlockMapBlock, NumBlocks, NumDirectoryBytes, 0, BlockMapAddr
_VALID_BLOCK_SIZES = frozenset({512, 1024, 2048, 4096, 8192, 16384, 32768})
_NIL_STREAM = 0xFFFFFFFF
_INFO_STREAM, _DBI_STREAM = 1, 3
_INFO_HEADER = struct.Struct("<III16s")  # Version, Signature, Age, Guid
_DBI_HEADER_SIZE = 64  # PdbFile's _DBI_HEADER; Age at 8, Machine at 58
# PdbFile's names for the DBI machine.
_ARCHES = {0x8664: "x86_64", 0x14C: "i386", 0xAA64: "aarch64"}


class PdbIdentity(NamedTuple):
    guid: bytes  # as the info stream stores it
    age: int  # the DBI's, the one an executable's RSDS record matches
    machine: int

    @property
    def debug_id(self) -> DebugId:
        return DebugId(DebugIdKind.PDB, self.guid, self.age)

    @property
    def arch(self) -> str:
        return _ARCHES.get(self.machine, "unknown")


def read_pdb_identity(path: Path) -> PdbIdentity | None:
    """The identity of the MSF 7.0 PDB at ``path``, read from a few blocks; None for anything else
    (another container, a damaged directory, a file that cannot be read): the reader then opens it,
    and says what is wrong."""
    try:
        with path.open("rb") as handle:
            return _identity(handle)
    except (OSError, struct.error, ValueError, OverflowError):
        return None


def _identity(handle: BinaryIO) -> PdbIdentity | None:
    head = handle.read(len(MSF_MAGIC) + _SUPERBLOCK.size)
    if not head.startswith(MSF_MAGIC) or len(head) < len(MSF_MAGIC) + _SUPERBLOCK.size:
        return None
    block_size, _free_map, num_blocks, directory_bytes, _unknown, block_map_addr = _SUPERBLOCK.unpack_from(
        head, len(MSF_MAGIC)
    )
    file_size = handle.seek(0, 2)
    if block_size not in _VALID_BLOCK_SIZES or num_blocks * block_size > file_size + block_size:
        return None

    def block(index: int, size: int) -> bytes | None:
        """``size`` bytes at the start of block ``index``, when it is a block of the file."""
        if index == 0 or index >= num_blocks or index * block_size + size > file_size:
            return None
        handle.seek(index * block_size)
        data = handle.read(size)
        return data if len(data) == size else None

    directory_blocks = -(-directory_bytes // block_size)
    if directory_blocks * 4 > block_size or directory_blocks == 0:
        return None
    block_map = block(block_map_addr, 4 * directory_blocks)
    if block_map is None:
        return None
    directory = bytearray()
    for index in struct.unpack(f"<{directory_blocks}I", block_map):
        piece = block(index, min(block_size, directory_bytes - len(directory)))
        if piece is None:
            return None
        directory += piece
    (count,) = struct.unpack_from("<I", directory, 0)
    if count <= _DBI_STREAM or 4 + 4 * count > len(directory):
        return None
    sizes = struct.unpack_from(f"<{count}I", directory, 4)
    first_blocks: list[int | None] = []
    position = 4 + 4 * count
    for size in sizes[: _DBI_STREAM + 1]:
        needed = 0 if size == _NIL_STREAM else -(-size // block_size)
        first_blocks.append(struct.unpack_from("<I", directory, position)[0] if needed else None)
        position += 4 * needed
    info_first, dbi_first = first_blocks[_INFO_STREAM], first_blocks[_DBI_STREAM]
    if info_first is None or dbi_first is None or sizes[_INFO_STREAM] < _INFO_HEADER.size:
        return None
    if sizes[_DBI_STREAM] < _DBI_HEADER_SIZE:
        return None
    info = block(info_first, _INFO_HEADER.size)
    dbi = block(dbi_first, _DBI_HEADER_SIZE)
    if info is None or dbi is None:
        return None
    _version, _signature, _info_age, guid = _INFO_HEADER.unpack(info)
    signature, _dbi_version, age = struct.unpack_from("<iII", dbi, 0)
    (machine,) = struct.unpack_from("<H", dbi, 58)
    return PdbIdentity(bytes(guid), age, machine) if signature == -1 else None


class DeferredPdb(ReaderDefaults):
    """The PDB at ``path``, of ``identity``, answering at ``image_base + RVA``; its reader (a
    :class:`~symbolize.formats.pdb.pdb.PdbFile`) opens on the first question past the identity."""

    format = "pdb"
    position_dependent = False
    # What the index key calls it (symbolize/cache.py): the reader's name, whose index this is.
    index_kind = "PdbFile"

    def __init__(self, path: Path, identity: PdbIdentity, image_base: int = 0) -> None:
        self.path = path
        self.debug_id: DebugId | None = identity.debug_id
        self.arch = identity.arch
        self.image_base = self.load_base = image_base
        self._file: PdbFile | None = None

    def opened(self) -> PdbFile:
        """The reader, opened now if it was not (raises what PdbFile raises)."""
        if self._file is None:
            from symbolize.formats.pdb.pdb import PdbFile

            self._file = PdbFile(self.path, image_base=self.image_base)
        return self._file

    def bind_image(self, image: Image) -> None:
        self.image_base = self.load_base = image.load_base
        if self._file is not None:
            self._file.bind_image(image)

    def answer_inputs(self) -> str:
        """The other files its answers come from (symbolize/cache.py asks): none, a PDB is whole."""
        return ""

    def lines_missing_reason(self) -> str | None:
        return self.opened().lines_missing_reason()

    def segments(self) -> Sequence[Segment]:
        return self.opened().segments()

    def debug_hints(self) -> Sequence[DebugHint]:
        return []

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return self.opened().answer_regions()

    def answers(self, key: int) -> Sequence[AnswerRun]:
        return self.opened().answers(key)

    def frames_at(self, vaddr: int) -> list[Frame]:
        return self.opened().frames_at(vaddr)

    def symbols(self) -> Sequence[Symbol]:
        return self.opened().symbols()

    def debug_info(self) -> DebugInfoSummary:
        return self.opened().debug_info()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def __repr__(self) -> str:
        return f"DeferredPdb({str(self.path)!r})"

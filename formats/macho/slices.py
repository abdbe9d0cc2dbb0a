"""Mach-O slices: the fat header of a universal file, and the architecture of each slice.

From ``<mach-o/fat.h>`` (``fat_header``, ``fat_arch``, ``fat_arch_64``) and ``<mach/machine.h>``
(CPU types and subtypes), as Apple's "OS X ABI Mach-O File Format Reference" describes them.
Hand-written, because macholib accepts what must be refused: the slice table is checked
against the file (slices past its end or overlapping), and a Java class file, which shares the
fat magic, is told apart by its slice count (as file(1) does). Only the fat header and each
slice's first bytes are read. Arch names are those of lipo and llvm-symbolizer's ``FILE:ARCH``.
"""

from __future__ import annotations

import itertools
import os
import platform
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from symbolize.formats.errors import (
    MalformedInputError,
    NotFoundError,
    SymbolizeError,
    UnsupportedFormatError,
)

if TYPE_CHECKING:
    from symbolize.formats.archive import ArchiveMember

FAT_MAGIC = 0xCAFEBABE
FAT_MAGIC_64 = 0xCAFEBABF
MH_MAGIC = 0xFEEDFACE
MH_MAGIC_64 = 0xFEEDFACF
# A fat header shares its magic with Java class files, whose next word (a version) is >= 45;
# no universal file has that many slices (file(1) tells them apart the same way).
_MAX_FAT_SLICES = 30

CPU_ARCH_ABI64 = 0x01000000
CPU_ARCH_ABI64_32 = 0x02000000
CPU_TYPE_X86 = 7
CPU_TYPE_ARM = 12
CPU_TYPE_POWERPC = 18
CPU_SUBTYPE_MASK = 0xFF000000
CPU_SUBTYPE_X86_64_H = 8
CPU_SUBTYPE_ARM64E = 2

# What platform.machine() calls the host's CPU, in Mach-O arch names.
_HOST_ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "arm64": "arm64", "aarch64": "arm64", "i386": "i386"}


# Every name arch_name gives a known CPU: what ``FILE:ARCH`` may end with.
ARCH_NAMES = frozenset(
    {"x86_64", "x86_64h", "arm64", "arm64e", "arm64_32", "i386", "arm", "armv7", "armv7s", "armv7k", "ppc", "ppc64"}
)


def arch_name(cputype: int, cpusubtype: int) -> str:
    """The name Apple's tools (lipo, llvm-symbolizer's ``FILE:ARCH``) give a CPU type and subtype."""
    subtype = cpusubtype & ~CPU_SUBTYPE_MASK
    if cputype == CPU_TYPE_X86 | CPU_ARCH_ABI64:
        return "x86_64h" if subtype == CPU_SUBTYPE_X86_64_H else "x86_64"
    if cputype == CPU_TYPE_ARM | CPU_ARCH_ABI64:
        return "arm64e" if subtype == CPU_SUBTYPE_ARM64E else "arm64"
    if cputype == CPU_TYPE_ARM | CPU_ARCH_ABI64_32:
        return "arm64_32"
    if cputype == CPU_TYPE_X86:
        return "i386"
    if cputype == CPU_TYPE_ARM:
        return {9: "armv7", 11: "armv7s", 12: "armv7k"}.get(subtype, "arm")
    if cputype == CPU_TYPE_POWERPC:
        return "ppc"
    if cputype == CPU_TYPE_POWERPC | CPU_ARCH_ABI64:
        return "ppc64"
    return f"cpu{cputype:#x}"


def host_arch() -> str:
    """The host's CPU as a Mach-O arch name ("" when it has none)."""
    return _HOST_ARCHES.get(platform.machine().lower(), "")


class Slice(NamedTuple):
    """One architecture of a file: the whole file when thin, one ``fat_arch`` when universal."""

    arch: str
    cputype: int
    cpusubtype: int
    file_offset: int
    size: int


def open_stream(path: Path) -> tuple[BinaryIO, int]:
    """``path`` opened for reading, and its size; its errors made ours."""
    try:
        stream = path.open("rb")
        return stream, os.fstat(stream.fileno()).st_size
    except FileNotFoundError as err:
        raise NotFoundError("file not found", path) from err
    except OSError as err:
        raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err


def _slice_table(path: Path, head: bytes, file_size: int) -> list[tuple[int, int, int, int]]:
    """(cputype, cpusubtype, file offset, size) of each slice of a universal file, checked.

    Raises MalformedInputError for a slice past the end of the file, slices that overlap, or
    a table that does not fit; UnsupportedFormatError for a Java class file.
    """
    magic, count = struct.unpack_from(">II", head)
    if count > _MAX_FAT_SLICES:
        raise UnsupportedFormatError(f"not a universal Mach-O file ({count} slices: a Java class file?)", path)
    entry = struct.Struct(">iiQQII" if magic == FAT_MAGIC_64 else ">iiIII")
    if 8 + count * entry.size > min(len(head), file_size):
        raise MalformedInputError(f"fat header ({count} slices) extends past end of file", path, 8)
    slices = []
    for position in range(count):
        cputype, cpusubtype, offset, size, *_align = entry.unpack_from(head, 8 + position * entry.size)
        where = 8 + position * entry.size
        if offset < 8 + count * entry.size or offset + size > file_size or size == 0:
            raise MalformedInputError(
                f"fat slice {position} [{offset:#x}, +{size:#x}) is outside the file", path, where
            )
        slices.append((cputype & 0xFFFFFFFF, cpusubtype & 0xFFFFFFFF, offset, size))
    ordered = sorted(slices, key=lambda item: item[2])
    for before, after in itertools.pairwise(ordered):
        if before[2] + before[3] > after[2]:
            raise MalformedInputError(f"fat slices at {before[2]:#x} and {after[2]:#x} overlap", path, 8)
    return slices


def list_slices(path: Path) -> list[Slice]:
    """The slices of ``path``: one for a thin Mach-O file, one per architecture for a universal one.

    Reads only the fat header and each slice's Mach-O header.
    """
    stream, file_size = open_stream(path)
    with stream:
        head = stream.read(8 + _MAX_FAT_SLICES * 32)
        if len(head) < 8:
            raise MalformedInputError("truncated Mach-O header", path, 0)
        magic = struct.unpack_from(">I", head)[0]
        if magic in (FAT_MAGIC, FAT_MAGIC_64):
            return [
                Slice(arch_name(cputype, subtype), cputype, subtype, offset, size)
                for cputype, subtype, offset, size in _slice_table(path, head, file_size)
            ]
        return [_thin_slice(path, head, 0, file_size)]


def _thin_slice(path: Path, head: bytes, file_offset: int, size: int) -> Slice:
    """The one slice of a thin Mach-O file whose first bytes are ``head``, at ``file_offset``."""
    if len(head) < 4:
        raise MalformedInputError("truncated Mach-O header", path, file_offset)
    little = struct.unpack_from("<I", head)[0]
    order = "<" if little in (MH_MAGIC, MH_MAGIC_64) else ">"
    if struct.unpack_from(order + "I", head)[0] not in (MH_MAGIC, MH_MAGIC_64):
        raise UnsupportedFormatError("not a Mach-O file", path)
    if len(head) < 12:
        raise MalformedInputError("truncated Mach-O header", path, file_offset)
    cputype, subtype = struct.unpack_from(order + "II", head, 4)
    return Slice(arch_name(cputype, subtype), cputype, subtype, file_offset, size)


def member_slice(path: Path, member: ArchiveMember) -> Slice:
    """An archive member as the one slice of a thin Mach-O object (``lib.a(member.o)``)."""
    stream, _file_size = open_stream(path)
    with stream:
        stream.seek(member.file_offset)
        head = stream.read(min(member.size, 32))
    try:
        return _thin_slice(path, head, member.file_offset, member.size)
    except UnsupportedFormatError as err:
        raise UnsupportedFormatError(f"archive member {member.name} is not a Mach-O file", path) from err


def choose_slice(path: Path, slices: Sequence[Slice], arch: str | None) -> Slice:
    """The slice named ``arch``; without one, the only slice, else the host's, else the first.

    Raises UnsupportedFormatError when no slice has that name (the message lists those that do).
    """
    if arch:
        for candidate in slices:
            if candidate.arch == arch:
                return candidate
        names = ", ".join(candidate.arch for candidate in slices)
        raise UnsupportedFormatError(f"no {arch} slice (the file holds {names})", path)
    if not slices:
        raise MalformedInputError("universal Mach-O file holds no slice", path, 0)
    host = host_arch()
    return next((candidate for candidate in slices if candidate.arch == host), slices[0])

"""A file's build identity from its headers alone: what ``symbolize stamp`` records in a profile.

No debug info, symbol table or section body is read, so naming a profile's every mapping costs
a few page reads per file (bench/stamp.py). Per format:

- ELF: the ``NT_GNU_BUILD_ID`` note (gABI "Note Section"), found through the section or program
  headers (:class:`~symbolize.formats.elf.file.ElfFile` opens over an mmap and reads only those).
- PE: the COFF header's TimeDateStamp and the optional header's SizeOfImage (the code ID), and the
  debug directory's CodeView RSDS record (PDB GUID and age); pefile parses the headers with
  ``fast_load`` and then the debug directory only, over an mmap.
- Mach-O: each slice's ``LC_UUID`` and segments from its load commands
  (:func:`~symbolize.formats.macho.load_commands.read_slice_headers`), no macholib (it reads every
  section's bytes). A universal file gives one identity per slice; the caller picks the mapped one.

And the file's ``htlhash`` (:func:`htlhash`), the OpenTelemetry profiles build ID of any file
(semantic conventions, profiles "Mappings": ``process.executable.build_id.htlhash``).
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.elf import ELF_MAGIC
from symbolize.formats.errors import MalformedInputError, NotFoundError, SymbolizeError, UnsupportedFormatError
from symbolize.formats.mapped import map_read_only
from symbolize.formats.open import MACHO_MAGICS, MZ_MAGIC
from symbolize.formats.types import DebugId, DebugIdKind

_IMAGE_DIRECTORY_ENTRY_DEBUG = 6
_IMAGE_DEBUG_TYPE_CODEVIEW = 2
# A CodeView record larger than this is not one: RSDS is 24 bytes and a path (formats/pe/file.py).
_MAX_CODEVIEW_SIZE = 1 << 16
# htlhash: the first and last page of the file are hashed, with its length.
_HTLHASH_PAGE = 4096
_HTLHASH_BYTES = 16


def htlhash(path: Path) -> str:
    """The file's ``process.executable.build_id.htlhash``, lower-case hex (the conventions' algorithm):
    the first 16 bytes of SHA-256 over its first 4096 bytes, its last 4096 bytes (they overlap in a
    file shorter than 8 KiB; not padded) and its length as a big-endian uint64.

    What the OpenTelemetry eBPF profiler sends for a file with no GNU build ID (or beside one). Two
    page reads, whatever the file's size. Raises NotFoundError when ``path`` does not exist,
    SymbolizeError when it cannot be read.
    """
    try:
        with path.open("rb") as stream:
            size = stream.seek(0, 2)
            stream.seek(0)
            head = stream.read(_HTLHASH_PAGE)
            stream.seek(max(size - _HTLHASH_PAGE, 0))
            tail = stream.read(_HTLHASH_PAGE)
    except FileNotFoundError as err:
        raise NotFoundError("file not found", path) from err
    except OSError as err:
        raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
    import hashlib  # here: it loads OpenSSL's libcrypto, which a run that hashes nothing does not need

    digest = hashlib.sha256(head + tail + size.to_bytes(8, "big")).digest()
    return digest[:_HTLHASH_BYTES].hex()


class HeaderIdentity(NamedTuple):
    """What a file's headers say it is; one per slice of a universal Mach-O file.

    ``ids`` are the build's IDs, the most specific first: an ELF file's GNU build ID; a PE image's
    PDB GUID + age (when it has a CodeView RSDS record) then its code ID; a Mach-O slice's UUID.
    Empty when the file records none (an ELF file linked without ``--build-id``).
    ``slice_offset`` and ``mapping_sizes`` tell the slices of a universal file apart: where the
    slice starts in the file, and the lengths a producer writes for a mapping of it (``__TEXT``,
    ``__TEXT`` to the end, the whole image; symbolize/discovery/slices.py says why).
    """

    format: str
    arch: str
    ids: tuple[DebugId, ...]
    slice_offset: int = 0
    mapping_sizes: frozenset[int] = frozenset()


def read_header_identities(path: Path) -> list[HeaderIdentity]:
    """The identity of ``path`` read from its headers: one entry, or one per slice of a universal
    Mach-O file.

    Raises NotFoundError when it does not exist, UnsupportedFormatError when it is no ELF, PE or
    Mach-O file, MalformedInputError when its headers are broken, SymbolizeError when it cannot be read.
    """
    try:
        with path.open("rb") as stream:
            head = stream.read(4)
    except FileNotFoundError as err:
        raise NotFoundError("file not found", path) from err
    except OSError as err:
        raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
    if head == ELF_MAGIC:
        return [_elf_identity(path)]
    if head in MACHO_MAGICS:
        return _macho_identities(path)
    if head[:2] == MZ_MAGIC:
        return [_pe_identity(path)]
    raise UnsupportedFormatError("not an ELF, PE or Mach-O file", path)


def _elf_identity(path: Path) -> HeaderIdentity:
    from symbolize.formats.elf import ElfFile

    with ElfFile(path) as elf:
        return HeaderIdentity("elf", elf.arch, (elf.debug_id,) if elf.debug_id is not None else ())


def _macho_identities(path: Path) -> list[HeaderIdentity]:
    from symbolize.formats.macho.load_commands import read_slice_headers

    identities = []
    for header in read_slice_headers(path):
        sizes: set[int] = set()
        if header.segments:
            lowest = min(vmaddr for _, vmaddr, _ in header.segments)
            end = max(vmaddr + vmsize for _, vmaddr, vmsize in header.segments)
            text = [(vmaddr, vmsize) for name, vmaddr, vmsize in header.segments if name == "__TEXT"]
            sizes.add(end - lowest)
            for vmaddr, vmsize in text:
                sizes.update((vmsize, end - vmaddr))
        ids = (header.uuid,) if header.uuid is not None else ()
        identities.append(HeaderIdentity("macho", header.arch, ids, header.file_offset, frozenset(sizes)))
    return identities


def _pe_identity(path: Path) -> HeaderIdentity:
    import pefile  # only for a PE file

    from symbolize.formats.pe.file import PE_MACHINES, parse_codeview

    mapped = map_read_only(path)  # b"" for an empty file: pefile refuses it below
    try:
        try:
            pe = pefile.PE(data=mapped, fast_load=True)
            pe.parse_data_directories(directories=[_IMAGE_DIRECTORY_ENTRY_DEBUG])
            machine, stamp = pe.FILE_HEADER.Machine, pe.FILE_HEADER.TimeDateStamp
            size_of_image = pe.OPTIONAL_HEADER.SizeOfImage
            entries = [(entry.struct.Type, entry.struct.PointerToRawData, entry.struct.SizeOfData)
                       for entry in getattr(pe, "DIRECTORY_ENTRY_DEBUG", [])]  # fmt: skip
        except (pefile.PEFormatError, struct.error, ValueError, IndexError, AttributeError, TypeError) as err:
            raise MalformedInputError(f"bad PE headers: {err}", path, 0) from err
        ids: list[DebugId] = []
        codeview = next(((offset, size) for kind, offset, size in entries if kind == _IMAGE_DEBUG_TYPE_CODEVIEW), None)
        # A CodeView record that does not fit, or is no RSDS (NB10, damage), names no PDB: the
        # code ID alone names the image, as it does a MinGW one's.
        if codeview is not None and 4 <= codeview[1] <= _MAX_CODEVIEW_SIZE and sum(codeview) <= len(mapped):
            offset, size = codeview
            try:
                record = parse_codeview(mapped[offset : offset + size], path, offset)
            except MalformedInputError:
                record = None
            if record is not None and record.signature == "RSDS":
                ids.append(DebugId(DebugIdKind.PDB, record.guid, record.age))
    finally:
        if isinstance(mapped, mmap.mmap):
            mapped.close()
    ids.append(DebugId(DebugIdKind.PE_CODE_ID, stamp.to_bytes(4, "big") + size_of_image.to_bytes(4, "big")))
    return HeaderIdentity("pe", PE_MACHINES.get(machine, f"machine{machine:#x}"), tuple(ids))

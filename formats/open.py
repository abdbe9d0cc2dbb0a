"""The entry point to the readers: sniff a file's magic bytes, return its reader.

Magic numbers: ELF ``\\x7fELF`` (gABI "ELF Identification"); Mach-O
``MH_MAGIC``/``MH_MAGIC_64`` in either byte order and ``FAT_MAGIC``/``FAT_MAGIC_64``
(``<mach-o/loader.h>``, ``<mach-o/fat.h>``); PE's DOS stub ``MZ`` (PE/COFF
specification, "MS-DOS Stub"); a PDB's container signature (MSF 7.00, and the MSFZ and PDB 2.0
ones, which the PDB reader refuses with a reason).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from symbolize.formats.elf import ELF_MAGIC, ElfFile
from symbolize.formats.errors import NotFoundError, SymbolizeError, UnsupportedFormatError
from symbolize.formats.types import ObjectFile

# The DOS header's e_magic, as symbolize.formats.pe checks it (kept here: importing the PE
# reader loads pefile, which an ELF lookup never needs).
MZ_MAGIC = b"MZ"

MACHO_MAGICS = {
    bytes.fromhex(magic)
    for magic in (
        "feedface",
        "cefaedfe",
        "feedfacf",
        "cffaedfe",
        "cafebabe",
        "bebafeca",
        "cafebabf",
        "bfbafeca",
    )
}


# A reader of a format the toolkit does not know, by the magic bytes its files start with: given
# the path and the ``arch`` asked for, it returns the reader (raising SymbolizeError as readers do).
FormatOpener = Callable[[Path, "str | None"], ObjectFile]

_REGISTERED: dict[bytes, FormatOpener] = {}


def register_format(magic: bytes, opener: FormatOpener) -> Callable[[], None]:
    """Open files whose first bytes are ``magic`` with ``opener``, ahead of the built-in readers;
    returns what undoes it. A format the toolkit does not read is then discovered, indexed, looked
    up and rewritten like the others, with nothing above ``formats/`` knowing it."""
    if not 2 <= len(magic) <= 64:
        raise ValueError("a format's magic is 2 to 64 bytes")
    _REGISTERED[magic] = opener

    def unregister() -> None:
        if _REGISTERED.get(magic) is opener:
            del _REGISTERED[magic]

    return unregister


def open_object(path: Path, *, arch: str | None = None, member: str | None = None) -> ObjectFile:
    """Open ``path`` with the reader its magic bytes call for.

    ``arch`` selects a slice of a fat (universal) Mach-O; readers of single-arch
    formats ignore it. ``member`` names the object inside a static archive (``ar``
    ``!<arch>``: a Mach-O object, as a debug map names ``lib.a(member.o)``).
    Readers open no other file: the files their debug info refers to (``.dwo``/``.dwp``,
    dwz, a debug map's objects) they say they need (``needs()``, ``AnswerRegion.needs``),
    and the caller supplies them (``supply``).
    Raises NotFoundError when the file does not exist, SymbolizeError
    when it cannot be read, UnsupportedFormatError for formats not read yet or
    files that are not object files.
    """
    try:
        with path.open("rb") as stream:
            head = stream.read(64)
            magic = head[:4]
    except FileNotFoundError as err:
        raise NotFoundError("file not found", path) from err
    except OSError as err:
        raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
    for registered_magic, opener in _REGISTERED.items():
        if head.startswith(registered_magic) and member is None:
            return opener(path, arch)
    if member is not None:
        if head[:8] != b"!<arch>\n":
            raise UnsupportedFormatError(f"not a static archive (asked for its member {member})", path)
        from symbolize.formats.macho.file import MachOFile

        return MachOFile(path, arch, member)
    if magic == ELF_MAGIC:
        return ElfFile(path)
    if magic in MACHO_MAGICS:
        from symbolize.formats.macho.file import MachOFile

        return MachOFile(path, arch)
    if magic[:2] == MZ_MAGIC:
        from symbolize.formats.pe.file import PeFile  # the PE reader (and pefile) only for a PE file

        return PeFile(path)
    from symbolize.formats.pdb import PdbFile, is_pdb_magic  # the PDB reader, only for what is no other

    if is_pdb_magic(head):
        # A PDB on its own answers at RVAs; discovery binds it to its image's ImageBase.
        return PdbFile(path)
    raise UnsupportedFormatError("not an object file", path)

"""Symbol stores' layout: symsrv's and SSQP's keys, ``file.ptr``, and a key's places in local stores.

Specs: Microsoft's "Symbol Storage Format" and "SymStore" (symstore.exe's layout, ``file.ptr``,
``index2.txt``), and the .NET symbol store's "SSQP Key Conventions" (dotnet/symstore,
docs/specs/SSQP_Key_Conventions.md).

A file is stored as ``<name>/<index>/<name>`` under a store's root; a two-tier store (one with an
``index2.txt`` at its root, ``symstore /3``) puts the first two characters of the name in front:
``<na>/<name>/<index>/<name>``. The index of

- a PDB is its GUID as Windows prints it (Data1 to Data3 as numbers, then Data4), then its age in
  hex: ``winapp.pdb/D01E5215C14845FF4C4C44205044422E1/winapp.pdb`` (:meth:`DebugId.__str__`);
- a PE image is its TimeDateStamp as 8 hex digits then its SizeOfImage in as few as it needs:
  ``winapp.exe/DD1324EA5000/winapp.exe`` (the image's code ID);
- an ELF file (SSQP) is ``elf-buildid-<build ID>`` for the binary (under its own name) and
  ``elf-buildid-sym-<build ID>`` for its debug file, always named ``_.debug``; a build ID shorter
  than 20 bytes is padded with zero bytes to 20;
- a Mach-O file (SSQP) is ``mach-uuid-<UUID>`` for the binary and ``mach-uuid-sym-<UUID>`` for its
  dSYM's DWARF file, always named ``_.dwarf``.

SSQP spells keys in lower case; symsrv stores keep the name as the image records it and the index
in upper case, and a store on IIS answers either (it folds case): both spellings are asked
(:meth:`SymbolStoreKey.spellings`). A file may be stored compressed (a one-file cabinet whose
name ends in ``_`` instead of its last character: ``winapp.pd_``) or as a ``file.ptr`` whose one
line says where the file is (``PATH:<path>``, or a bare path) or why it is not there
(``MSG:<text>``).

Names come from files we do not trust (an RSDS record, a profile's mapping): a key is built only
from a bare file name (:func:`symbolize.discovery.paths.is_file_name`) of at most
``MAX_NAME_CHARS`` characters, without control characters, and from an index made of hex digits
and the SSQP prefixes, so a key never holds a separator or ``..``.

Asking HTTP stores for a key is symbolize/remote/symsrv.py's; checking what came back by ID,
symbolize/remote/verifiers.py's. Nothing here imports the transfer's modules: a local store is
looked in without them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple
from urllib.parse import quote

from symbolize.discovery.paths import is_file_name, lies_under
from symbolize.discovery.registry import Candidate, FileLoader
from symbolize.formats.errors import InputLimitError, MalformedInputError, SymbolizeError
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.remote.options import RemoteOptions
from symbolize.remote.symbol_path import SymbolPath, parse_symbol_path

MAX_NAME_CHARS = 255
SSQP_BUILD_ID_BYTES = 20
# A file.ptr is one line naming a path; a longer answer is not one.
MAX_FILE_PTR_BYTES = 4096
TWO_TIER_MARKER = "index2.txt"
FILE_PTR = "file.ptr"
ELF_DEBUG_NAME = "_.debug"
MACHO_DWARF_NAME = "_.dwarf"


@dataclass(frozen=True)
class SymbolStoreKey:
    """Where a file sits in a symbol store: ``<name>/<index>/<name>`` (see the module docstring)."""

    name: str
    index: str

    def relative(self, *, two_tier: bool = False, file_name: str | None = None) -> PurePosixPath:
        """The key as a relative path; ``file_name`` replaces the last part (the compressed name,
        ``file.ptr``); ``two_tier`` puts the name's first two characters in front."""
        path = PurePosixPath(self.name, self.index, file_name or self.name)
        return PurePosixPath(self.name[:2]) / path if two_tier else path

    def url(self, base: str, *, two_tier: bool = False, file_name: str | None = None) -> str:
        """The key's URL under the store at ``base`` (each part percent-encoded)."""
        parts = self.relative(two_tier=two_tier, file_name=file_name).parts
        return base.rstrip("/") + "/" + "/".join(quote(part, safe="") for part in parts)

    @property
    def compressed_name(self) -> str:
        """The name of the file's compressed form: its last character replaced by ``_``."""
        return self.name[:-1] + "_"

    def spellings(self) -> list[SymbolStoreKey]:
        """The key as symsrv stores spell it, then as SSQP does (lower case), without repeats: what a
        server, which may fold case, is asked for."""
        return list(dict.fromkeys([self, SymbolStoreKey(self.name.lower(), self.index.lower())]))

    def local_spellings(self) -> list[SymbolStoreKey]:
        """Every spelling a store on a case-sensitive file system may hold: the name as recorded and
        in lower case, the index in upper case, lower case, and with a PDB's age (after the 32 digits
        of its GUID) in lower case, as some tools write it."""
        indexes = [self.index, self.index.lower(), self.index[:32] + self.index[32:].lower()]
        names = [self.name, self.name.lower()]
        return list(dict.fromkeys(SymbolStoreKey(name, index) for name in names for index in indexes))

    def __str__(self) -> str:
        return str(self.relative())


def store_name(name: str) -> str | None:
    """``name`` when it can be part of a store path: a bare file name, not too long, printable."""
    if not is_file_name(name) or len(name) > MAX_NAME_CHARS or not name.isprintable():
        return None
    return name


def pdb_key(pdb_name: str, debug_id: DebugId | None) -> SymbolStoreKey | None:
    """``<pdb_name>/<GUID><age>/<pdb_name>`` for a PDB's GUID and age; None when either is unusable."""
    name = store_name(pdb_name)
    if name is None or debug_id is None or debug_id.kind is not DebugIdKind.PDB or len(debug_id.value) != 16:
        return None
    return SymbolStoreKey(name, str(debug_id))


def pe_key(image_name: str, code_id: DebugId | None) -> SymbolStoreKey | None:
    """``<image_name>/<TIMESTAMP><SizeOfImage>/<image_name>`` for a PE image's code ID."""
    name = store_name(image_name)
    if name is None or code_id is None or code_id.kind is not DebugIdKind.PE_CODE_ID or len(code_id.value) != 8:
        return None
    return SymbolStoreKey(name, str(code_id))


def elf_binary_key(name: str, build_id: DebugId | None) -> SymbolStoreKey | None:
    """SSQP's ``<name>/elf-buildid-<build ID>/<name>`` for an ELF binary."""
    return _ssqp_key(name, "elf-buildid-", _ssqp_build_id(build_id))


def elf_debug_key(build_id: DebugId | None) -> SymbolStoreKey | None:
    """SSQP's ``_.debug/elf-buildid-sym-<build ID>/_.debug`` for an ELF debug file."""
    return _ssqp_key(ELF_DEBUG_NAME, "elf-buildid-sym-", _ssqp_build_id(build_id))


def macho_binary_key(name: str, uuid: DebugId | None) -> SymbolStoreKey | None:
    """SSQP's ``<name>/mach-uuid-<UUID>/<name>`` for a Mach-O binary."""
    return _ssqp_key(name, "mach-uuid-", _ssqp_uuid(uuid))


def macho_dwarf_key(uuid: DebugId | None) -> SymbolStoreKey | None:
    """SSQP's ``_.dwarf/mach-uuid-sym-<UUID>/_.dwarf`` for a dSYM's DWARF file."""
    return _ssqp_key(MACHO_DWARF_NAME, "mach-uuid-sym-", _ssqp_uuid(uuid))


def _ssqp_key(name: str, prefix: str, hex_id: str | None) -> SymbolStoreKey | None:
    stored = store_name(name)
    return None if hex_id is None or stored is None else SymbolStoreKey(stored, prefix + hex_id)


def _ssqp_uuid(uuid: DebugId | None) -> str | None:
    """A Mach-O UUID in SSQP's spelling: its 16 bytes in lower-case hex."""
    if uuid is None or uuid.kind is not DebugIdKind.MACHO_UUID or len(uuid.value) != 16:
        return None
    return uuid.value.hex()


def _ssqp_build_id(build_id: DebugId | None) -> str | None:
    """A GNU build ID in SSQP's spelling: lower-case hex, zero-padded to 20 bytes."""
    if build_id is None or build_id.kind is not DebugIdKind.GNU_BUILD_ID or not 2 <= len(build_id.value) <= 64:
        return None
    return build_id.value.ljust(SSQP_BUILD_ID_BYTES, b"\0").hex()


class FilePointer(NamedTuple):
    """What a ``file.ptr`` says: where the file is (``target``) or why it is not there (``message``)."""

    target: str | None
    message: str | None


def parse_file_ptr(data: bytes, where: str | Path) -> FilePointer:
    """The ``file.ptr`` at ``where`` (a URL or a path), whose bytes are ``data``.

    Its first non-blank line is ``PATH:<path>``, ``MSG:<text>`` (the store's reason for not
    having the file), or a bare path (symstore's own pointers). Raises MalformedInputError naming
    ``where`` for anything else: a pointer too long to be one, bytes that are not text, nothing.
    """
    if len(data) > MAX_FILE_PTR_BYTES:
        raise InputLimitError("a file.ptr longer than a pointer", where, None, limit=MAX_FILE_PTR_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MalformedInputError("a file.ptr that is not text", where, err.start) from err
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not line or not line.isprintable():
        raise MalformedInputError("a file.ptr that names no file", where)
    head, colon, rest = line.partition(":")
    if colon and head.upper() == "MSG":
        return FilePointer(None, rest.strip())
    if colon and head.upper() == "PATH":
        line = rest.strip()
        if not line:
            raise MalformedInputError("a file.ptr whose PATH is empty", where)
    return FilePointer(line, None)


def is_two_tier(root: Path) -> bool:
    """Whether the local store ``root`` has an ``index2.txt`` at its root; a store that cannot be
    looked at is not (its candidates are then refused, with why, as the registry stats them)."""
    try:
        return (root / TWO_TIER_MARKER).is_file()
    except OSError:
        return False


def local_store_candidates(
    stores: Iterable[Path], key: SymbolStoreKey, loader: FileLoader, roots: Sequence[Path]
) -> Iterator[Candidate]:
    """Where ``key`` may be in each local store of ``stores``, in order: the file in every local
    spelling (the two-tier layout first in a store with ``index2.txt``), then the file a
    ``file.ptr`` beside it points to.

    A ``file.ptr`` is read here (a line of text, through the loader) because where it points is a
    candidate; its target is yielded with the root of ``roots`` (every directory the user named)
    that holds it, else with the store, so the registry refuses a pointer out of them, with why:
    a store's pointer is followed only where the user said to look, as a PDB's recorded path is.
    """
    for store in dict.fromkeys(stores):
        layouts = (True, False) if is_two_tier(store) else (False,)
        for spelling in key.local_spellings():
            for two_tier in layouts:
                path = store / spelling.relative(two_tier=two_tier)
                yield Candidate(path, store)
                pointed = _pointed_to(path.parent / FILE_PTR, store, loader, roots)
                if pointed is not None:
                    yield pointed


def _pointed_to(pointer: Path, store: Path, loader: FileLoader, roots: Sequence[Path]) -> Candidate | None:
    """The candidate the local ``file.ptr`` at ``pointer`` names; None when there is none, it
    says why the file is missing (``MSG:``), or it names no file of this system."""
    try:
        if not pointer.is_file():
            return None
        with loader.byte_stream(pointer) as stream:
            data = stream.read(MAX_FILE_PTR_BYTES + 1)
        target = parse_file_ptr(data, pointer).target
    except (OSError, SymbolizeError):
        return None  # an unreadable or malformed pointer points nowhere; the next spelling may
    if target is None or "://" in target or (os.name != "nt" and (target.startswith("\\\\") or target[1:2] == ":")):
        return None
    path = Path(target) if Path(target).is_absolute() else store / target
    root = next((root for root in roots if lies_under(path, root)), store)
    return Candidate(path, root)


def configured_symbol_path(options: RemoteOptions | None) -> SymbolPath:
    """The symbol path the run was given (``--symbol-server`` entries, and with ``--remote`` the
    environment's), read as one path so that a ``cache*`` entry applies to the entries after it."""
    return parse_symbol_path(";".join(options.symbol_servers)) if options is not None else SymbolPath()

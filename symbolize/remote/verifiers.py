"""Checks of a downloaded file against the ID it was asked for: a PDB's GUID and age, a PE's code ID,
a Mach-O UUID, an ELF build ID. Each is a :data:`~symbolize.remote.fetcher.Verify`: None when the file
is the one asked for, else why not; each reads only the headers that hold the ID."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from symbolize.formats.errors import SymbolizeError
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.module import FileIdentity
from symbolize.remote.fetcher import Verify


def pdb_verifier(expected: DebugId) -> Verify:
    """``verify(path)``: None when ``path`` is a PDB with ``expected``'s GUID and (DBI) age, else why not.
    Reads the PDB's identity from a few blocks (formats/pdb/deferred.py), not the PDB."""

    def verify(path: Path) -> str | None:
        from symbolize.formats.pdb.deferred import read_pdb_identity

        identity = read_pdb_identity(path)
        if identity is None:
            return "not a PDB (MSF 7.0) with an info and a DBI stream"
        if identity.debug_id != expected:
            return f"PDB {identity.debug_id} is not the one asked for, {expected}"
        return None

    return verify


def code_id_verifier(expected: DebugId, identify: Callable[[Path], FileIdentity]) -> Verify:
    """``verify(path)``: None when ``path`` is a PE image whose code ID (TimeDateStamp, SizeOfImage)
    is ``expected``, else why not (``identify`` is the loader's, which reads the file's headers)."""

    def verify(path: Path) -> str | None:
        try:
            found = identify(path)
        except SymbolizeError as err:
            return f"not a readable object file: {err.reason}"
        code_ids = [identity for identity in found.identities if identity.kind is DebugIdKind.PE_CODE_ID]
        if expected in code_ids:
            return None
        return f"code ID {', '.join(map(str, code_ids)) or 'none'} is not the one asked for, {expected}"

    return verify


def uuid_verifier(expected: DebugId) -> Verify:
    """``verify(path)``: None when a slice of the Mach-O file ``path`` has UUID ``expected``, else why
    not. Reads the load commands only (:func:`symbolize.formats.macho.load_commands.read_uuids`)."""

    def verify(path: Path) -> str | None:
        from symbolize.formats.macho.load_commands import read_uuids

        try:
            found = read_uuids(path)
        except SymbolizeError as err:
            return f"not a readable Mach-O file: {err.reason}"
        if expected in found.values():
            return None
        return f"UUID {', '.join(map(str, found.values())) or 'none'} is not the one asked for, {expected}"

    return verify


def identity_verifier(expected: DebugId, what: str, identify: Callable[[Path], FileIdentity]) -> Verify:
    """``verify(path)`` for an object file of ID ``expected``: :func:`code_id_verifier` for a PE code
    ID (through ``identify``, the loader's), :func:`uuid_verifier` for a Mach-O UUID; ``what`` is
    kept for callers that name the ID (the verifiers name it themselves)."""
    del what
    if expected.kind is DebugIdKind.MACHO_UUID:
        return uuid_verifier(expected)
    return code_id_verifier(expected, identify)


def build_id_verifier(expected: DebugId, identify: Callable[[Path], FileIdentity]) -> Verify:
    """debuginfod's check (symbolize/remote/debuginfod.py): an ELF file with GNU build ID ``expected``."""
    from symbolize.remote.debuginfod import build_id_verifier as elf_verifier

    return elf_verifier(expected, identify)

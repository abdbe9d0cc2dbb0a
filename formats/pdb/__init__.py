"""PDB reading: the MSF container, the fixed streams, CodeView module streams, and a symbol source.

Hand-written (see :mod:`symbolize.formats.pdb.pdb` for why and for the naming rules). ``PdbFile``
is imported on first use: a warm lookup reads a PDB's identity only (``deferred.py``) and never
loads the reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from symbolize.formats.pdb.msf import is_pdb_magic

if TYPE_CHECKING:
    from symbolize.formats.pdb.pdb import PdbFile

__all__ = ["PdbFile", "is_pdb_magic"]


def __getattr__(name: str) -> object:
    if name == "PdbFile":
        from symbolize.formats.pdb.pdb import PdbFile

        return PdbFile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

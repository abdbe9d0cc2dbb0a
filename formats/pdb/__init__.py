"""PDB reading: the MSF container, the fixed streams, CodeView module streams, and a symbol source.

Hand-written (see :mod:`symbolize.formats.pdb.pdb` for why and for the naming rules), one concern
per module, from LLVM's "The PDB File Format" pages:

- ``msf.py``: the MSF container (blocks, the stream directory);
- ``streams.py``: the PDB info, DBI, TPI/IPI streams, section headers, the string table;
- ``codeview.py``: CodeView symbol records, C13 subsections, binary annotations;
- ``publics.py``: the publics (``S_PUB32``) and the symbols they make;
- ``module_stream.py``: one module's procedures and lines, and lookups in it (with its compiled twin);
- ``inline.py``: a procedure's inline sites and their code ranges;
- ``inlinees.py``: inlined functions' names (IPI records, cross-module IDs);
- ``pdb.py``: :class:`PdbFile`, which ties them into answer regions and runs;
- ``deferred.py``: a PDB known by its identity, its reader opened on first use;
- ``coverage.py``: what the auditor reads of a PDB (its image's sections, how much is named).

``PdbFile`` is imported on first use: a warm lookup reads a PDB's identity only (``deferred.py``)
and never loads the reader.
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

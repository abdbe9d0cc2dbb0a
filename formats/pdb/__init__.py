"""PDB reading: the MSF container, the fixed streams, CodeView module streams, and a symbol source.

Hand-written (see :mod:`symbolize.formats.pdb.pdb` for why and for the naming rules).
"""

from symbolize.formats.pdb.msf import is_pdb_magic
from symbolize.formats.pdb.pdb import PdbFile

__all__ = ["PdbFile", "is_pdb_magic"]

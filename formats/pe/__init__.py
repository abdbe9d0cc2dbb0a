"""PE/COFF reader (Microsoft's "PE Format" specification), on pefile, whose types stay here.

- ``file.py``: :class:`PeFile`, headers, sections, the export table, COFF symbols, the CodeView
  (RSDS) debug record naming the PDB, and MinGW's DWARF sections;
- ``coverage.py``: what the auditor reads of a PE file (sections, how much is named).
"""

from symbolize.formats.pe.file import PeFile

__all__ = ["PeFile"]

"""ELF reader: the parts of an ELF file that symbolization needs, one concern per module.

From the System V gABI (chapter 4, "Object Files", and chapter 5, "Program
Loading") and the GNU extensions:

- ``headers.py``: the ELF header, section header table (extended numbering
  included) and program header table;
- ``notes.py``: notes, the ``NT_GNU_BUILD_ID`` note, ``.gnu_debuglink`` and
  ``.gnu_debugaltlink``;
- ``symtab.py``: function symbols from ``.symtab``/``.dynsym`` and MiniDebugInfo
  (``.gnu_debugdata``, an xz-compressed ELF);
- ``hints.py``: the debug hints the file lists (the reader opens no other file: what its
  DWARF needs, it says in what it returns);
- ``file.py``: :class:`ElfFile`, the mmap, section bytes for the DWARF
  reader (decompressed on first request) and the answer policy.
- ``coverage.py``: what the auditor reads of an ELF file (sections, how much
  is named), through ``formats/coverage.py``.
"""

from symbolize.formats.elf.file import ElfFile
from symbolize.formats.elf.headers import ELF_MAGIC

__all__ = ["ELF_MAGIC", "ElfFile"]

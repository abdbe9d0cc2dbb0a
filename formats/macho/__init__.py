"""Mach-O reader: thin and universal (fat) files, static-archive members, dSYMs and debug maps.

From Apple's ``<mach-o/loader.h>``, ``<mach-o/fat.h>`` and ``<mach-o/nlist.h>``:

- ``file.py``: :class:`MachOFile`, the header and load commands (segments, sections, ``LC_UUID``,
  ``LC_BUILD_VERSION``), the symbol table and its stabs, fat slices;
- ``debugmap.py``: an executable's debug map (``N_OSO``/``N_FUN`` stabs), answered from the
  object files it names;
- ``coverage.py``: what the auditor reads of a Mach-O file (sections, how much is named).
"""

from symbolize.formats.macho.file import ARCH_NAMES, MachOFile

__all__ = ["ARCH_NAMES", "MachOFile"]

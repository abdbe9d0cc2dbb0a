"""Mach-O reader: thin and universal (fat) files, static-archive members, dSYMs and debug maps.

From Apple's ``<mach-o/loader.h>``, ``<mach-o/fat.h>`` and ``<mach-o/nlist.h>``:

- ``slices.py``: the fat header of a universal file, slice choice, arch names;
- ``load_commands.py``: a slice's header and load commands (segments, sections, ``LC_UUID``,
  ``LC_BUILD_VERSION``), and the UUIDs of a file read from load commands alone;
- ``symtab.py``: the symbol table (nlists), its stabs, function symbols, ``LC_FUNCTION_STARTS``;
- ``file.py``: :class:`MachOFile`, one slice as an image and a symbol source;
- ``debugmap.py``: an executable's debug map (``N_OSO``/``N_FUN`` stabs), answered from the
  object files it names;
- ``coverage.py``: what the auditor reads of a Mach-O file (sections, how much is named).
"""

from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.slices import ARCH_NAMES

__all__ = ["ARCH_NAMES", "MachOFile"]

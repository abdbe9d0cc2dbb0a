"""Discovery, in one place: the binary behind a mapping, the debug files behind a binary.

- :mod:`symbolize.discovery.options`: where to look (``--binary``,
  ``--search-path``, ``--debug-dir``) and where indexes live, as one frozen value
  the loader (symbolize/loader.py, which opens every file) reads.
- :mod:`symbolize.discovery.modules`: :func:`find_module` (a mapping's binary
  by debug ID, ``--binary``, recorded path or base name) and
  :func:`open_module`.
- :mod:`symbolize.discovery.registry`: one locator per kind of hint
  (:class:`~symbolize.formats.types.HintKind`), and the loop that runs them;
  its docstring says how to add one.
- :mod:`symbolize.discovery.paths`: what a name from an untrusted file may
  make discovery open.
- :mod:`symbolize.discovery.pdb_locator`: a PE image's PDB (beside it, search paths, symbol stores).
- :mod:`symbolize.discovery.elf_locators`: build ID, GNU debuglink, dwz
  supplementary file, split DWARF; :mod:`symbolize.discovery.macho_locators`:
  dSYM, debug-map objects. Each registers when the registry first follows a
  hint of its kinds (``LOCATOR_MODULES`` in symbolize/discovery/registry.py),
  not here: a run that meets no Mach-O or PDB file never imports theirs.
"""

from __future__ import annotations

from symbolize.discovery.modules import find_module, module_for, open_module
from symbolize.discovery.options import DEFAULT_DEBUG_DIRS, SearchOptions
from symbolize.discovery.registry import (
    Candidate,
    FileLoader,
    Locator,
    LocatorDefaults,
    LookupContext,
    locate,
    register_locator,
)

__all__ = [
    "DEFAULT_DEBUG_DIRS",
    "Candidate",
    "FileLoader",
    "Locator",
    "LocatorDefaults",
    "LookupContext",
    "SearchOptions",
    "find_module",
    "locate",
    "module_for",
    "open_module",
    "register_locator",
]

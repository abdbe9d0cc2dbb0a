"""Readers for native binaries and their debug info; nothing here knows pprof."""

from symbolize.formats.elf import ElfFile
from symbolize.formats.open import open_object

__all__ = ["ElfFile", "open_object"]

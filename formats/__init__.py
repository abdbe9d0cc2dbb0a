"""Readers for native binaries and their debug info; nothing here knows pprof."""

from formats.elf import ElfFile
from formats.open import open_object

__all__ = ["ElfFile", "open_object"]

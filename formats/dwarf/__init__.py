"""DWARF 4 and 5 reader, independent of the container (ELF, Mach-O, PE).

The container hands over one callable that returns a section's bytes, already
decompressed, by its DWARF name without the leading dot (``"debug_info"``,
``"debug_line"``, ``"debug_str_offsets"``, ...), or None when absent. Nothing
here knows ELF.
"""

from symbolize.formats.dwarf.info import DwarfInfo
from symbolize.formats.dwarf.sections import SectionGetter

__all__ = ["DwarfInfo", "SectionGetter"]

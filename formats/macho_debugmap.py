"""Debug maps: naming a Mach-O binary's addresses from the DWARF left in its object files.

A binary linked without dsymutil keeps, in its symbol table, stabs (``<mach-o/stab.h>``) that
say where each function came from, the "debug map" dsymutil and lldb read:

    N_SO   (directory, then source file)      a compile unit begins
    N_OSO  (object path; value: its mtime)    the object file holding its DWARF
    N_BNSYM, N_FUN name (value: final vaddr), N_FUN "" (value: size), N_ENSYM
    N_STSYM / N_GSYM name (data)
    N_SO   ""                                 the unit ends

The object's DWARF speaks of object addresses (its sections laid out from 0); its own symbol
table says where each symbol sits there. A final vaddr inside a function of the map is
relocated as lldb does: ``object vaddr = object symbol vaddr + (vaddr - final vaddr)``, and the
object's DWARF answers for it. The outermost frame takes the binary's symbol name, as
everywhere.

Finding the objects (by path, beside the binary, under search paths) and checking their
mtimes is discovery's job (symbolize/); this module gets them opened, or the reason they could
not be.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.macho import N_FUN, N_OSO, N_SECT, N_SO, N_STAB, N_TYPE, MachOFile, Stab
from symbolize.formats.types import DebugInfoSummary, Frame, Symbol


class MappedFunction(NamedTuple):
    """A function of the debug map: ``[vaddr, vaddr + size)`` in the binary, from ``object_name``."""

    name: str
    vaddr: int
    size: int
    object_name: str


class DebugMapObject(NamedTuple):
    """One N_OSO entry: the object's path as recorded, its recorded mtime (None: not recorded)."""

    name: str
    mtime: int | None
    functions: tuple[MappedFunction, ...]


def parse_debug_map(stabs: Sequence[Stab], path: Path) -> list[DebugMapObject]:
    """The objects of a debug map and the functions each one gave, in stab order.

    An N_FUN pair (start, then size) is expected after each N_OSO; a size entry without a
    start, or a function outside any object, raises MalformedInputError.
    """
    objects: list[DebugMapObject] = []
    current: tuple[str, int | None, list[MappedFunction]] | None = None
    pending: Stab | None = None
    for stab in stabs:
        if stab.n_type == N_OSO:
            if current is not None:
                objects.append(DebugMapObject(current[0], current[1], tuple(current[2])))
            current = (stab.name, stab.value or None, [])
            pending = None
        elif stab.n_type == N_SO and not stab.name and current is not None:
            objects.append(DebugMapObject(current[0], current[1], tuple(current[2])))
            current = None
        elif stab.n_type == N_FUN:
            if stab.name:
                pending = stab
                continue
            if pending is None or current is None:
                raise MalformedInputError("N_FUN size entry without a function", path, stab.file_offset)
            current[2].append(MappedFunction(pending.name, pending.value, stab.value, current[0]))
            pending = None
    if current is not None:
        objects.append(DebugMapObject(current[0], current[1], tuple(current[2])))
    return objects


def _object_symbols(obj: MachOFile) -> dict[str, int]:
    """Name (as stored, leading ``_`` kept) -> object vaddr of every defined symbol of an object file."""
    found: dict[str, int] = {}
    for entry in obj._all_nlists():
        if not entry.n_type & N_STAB and entry.n_type & N_TYPE == N_SECT and entry.name:
            found.setdefault(entry.name, entry.value)
    return found


class DebugMapSource:
    """Frames of a binary's addresses from the objects its debug map names.

    ``objects`` maps an N_OSO name to the opened object, or to the reason it is not used
    (missing, another mtime): functions from such an object name nothing but their symbol.
    Frames lists are innermost first.
    """

    def __init__(self, binary: MachOFile, objects: Mapping[str, MachOFile | str]) -> None:
        self.path = binary.path
        self.debug_id = binary.debug_id
        self._binary = binary
        self._objects = objects
        self.map = parse_debug_map(binary.stabs(), binary.path)
        # Sorted (final vaddr, end, object vaddr or -1, object name) of every mapped function.
        rows: list[tuple[int, int, int, str]] = []
        self.refused: dict[str, str] = {name: reason for name, reason in objects.items() if isinstance(reason, str)}
        for entry in self.map:
            obj = objects.get(entry.name)
            symbols = _object_symbols(obj) if isinstance(obj, MachOFile) else {}
            for function in entry.functions:
                object_vaddr = symbols.get(function.name, -1)
                rows.append((function.vaddr, function.vaddr + function.size, object_vaddr, entry.name))
        rows.sort()
        self._rows = rows
        self._lows = [row[0] for row in rows]

    def symbols(self) -> Sequence[Symbol]:
        return self._binary.symbols()

    def object_names(self) -> list[str]:
        return [entry.name for entry in self.map]

    def object_vaddr(self, vaddr: int) -> tuple[MachOFile, int] | None:
        """The object whose DWARF describes ``vaddr``, and the address there; None if unmapped."""
        position = bisect_right(self._lows, vaddr) - 1
        if position < 0:
            return None
        low, high, object_low, name = self._rows[position]
        obj = self._objects.get(name)
        if vaddr >= high or object_low < 0 or not isinstance(obj, MachOFile):
            return None
        return obj, object_low + (vaddr - low)

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first; the binary's symbol alone where no object answers."""
        found = self.object_vaddr(vaddr)
        symbol = self._binary.symbol_at(vaddr)
        frames: list[Frame] | None = None
        if found is not None:
            obj, object_vaddr = found
            dwarf = obj.dwarf_info()
            frames = dwarf.frames_at(object_vaddr) if dwarf is not None else None
        if frames and frames[-1].function is None:
            # Line rows but no function: the alignment padding after a function, which the
            # object's line table covers and a linked dSYM does not (dsymutil keeps the rows
            # inside each function's DWARF ranges). Named by its symbol alone, as with a dSYM.
            frames = None
        if not frames:
            return [Frame(function=symbol.name)] if symbol is not None else []
        if symbol is not None:
            frames[-1] = frames[-1]._replace(function=symbol.name)
        return frames

    def debug_info(self) -> DebugInfoSummary:
        opened = [obj for obj in self._objects.values() if isinstance(obj, MachOFile)]
        return DebugInfoSummary(
            has_symbols=bool(self._binary.symbols()),
            has_dwarf=any(obj.has_dwarf() for obj in opened),
            has_line_info=any(obj.section_data("debug_line") for obj in opened),
            has_inline_info=False,
        )

    def close(self) -> None:
        """Nothing to release: the objects belong to whoever opened them (discovery's cache)."""

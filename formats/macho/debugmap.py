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

Answers go through the run builder every DWARF container shares (formats/dwarf/answers.py):
each object's units answer in object space, beside the binary's symbols moved there, and each
mapped function is a region whose runs are the object's over the function, moved back. Only
addresses inside the object's functions answer from its DWARF: its line table also covers the
padding between functions, which a linked dSYM does not (dsymutil keeps each function's rows),
and there the binary's symbol alone names the address, as with a dSYM.

Finding the objects (by path, beside the binary, under search paths) and checking their
mtimes is discovery's job (symbolize/); this module gets them opened, or the reason they could
not be.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from symbolize.formats.answers import AnswerLookup, Block, LazyRuns, RunTable, flatten_answers
from symbolize.formats.errors import BrokenSpanError, MalformedInputError
from symbolize.formats.macho.symtab import N_FUN, N_OSO, N_SECT, N_SO, N_STAB, N_TYPE, Nlist, Stab
from symbolize.formats.symbols import RankedSymbol, SymbolAnswers, SymbolIndex
from symbolize.formats.types import (
    AnswerRegion,
    AnswerRun,
    DebugId,
    DebugInfoSummary,
    Frame,
    Symbol,
    frames_or_errors,
)

if TYPE_CHECKING:
    from symbolize.formats.dwarf import DwarfInfo


class MapBinary(Protocol):
    """What a debug map reads of its binary (a MachOFile; declared here, so that the reader that
    holds a debug map and the debug map do not import each other)."""

    path: Path
    debug_id: DebugId | None

    def stabs(self) -> list[Stab]: ...

    def symbols(self) -> Sequence[Symbol]: ...

    def symbol_index(self) -> SymbolIndex: ...


class MapObject(Protocol):
    """What a debug map reads of an object file it names (a MachOFile)."""

    path: Path

    @property
    def slice_offset(self) -> int: ...

    def nlists(self) -> list[Nlist]: ...

    def has_dwarf(self) -> bool: ...

    def dwarf_info(self) -> DwarfInfo | None: ...

    def section_data(self, dwarf_name: str) -> bytes | None: ...


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


def _object_symbols(obj: MapObject) -> dict[str, int]:
    """Name (as stored, leading ``_`` kept) -> object vaddr of every defined symbol of an object file."""
    found: dict[str, int] = {}
    for entry in obj.nlists():
        if not entry.n_type & N_STAB and entry.n_type & N_TYPE == N_SECT and entry.name:
            found.setdefault(entry.name, entry.value)
    return found


class _MappedRegion(NamedTuple):
    """A function of the map whose object answers: ``[low, high)`` in the binary, ``object_low`` there."""

    low: int
    high: int
    object_low: int
    object_name: str


class _ObjectAnswers:
    """One object's answers in object space: its DWARF units, and the binary's symbols over the
    object's mapped functions moved to object addresses (so the outermost frame takes the
    binary's name, through the shared run builder)."""

    def __init__(self, obj: MapObject, regions: Sequence[_MappedRegion], binary_symbols: SymbolIndex) -> None:
        entries = []
        for region in regions:
            shift = region.object_low - region.low
            for low, high, position in binary_symbols.pieces(region.low, region.high):
                if position >= 0:
                    name = binary_symbols.symbols[position].name
                    entries.append(RankedSymbol(Symbol(name, low + shift, high - low), None))
        index = SymbolIndex(entries)
        self.source: SymbolAnswers
        try:
            dwarf = obj.dwarf_info()
        except MalformedInputError as err:
            self.source = SymbolAnswers(obj.path, index, broken=err)
        else:
            if dwarf is None:
                self.source = SymbolAnswers(obj.path, index)
            else:
                from symbolize.formats.dwarf.answers import DwarfSymbolAnswers

                self.source = DwarfSymbolAnswers(obj.path, dwarf, index, functions_only=True)
        self._lookup: AnswerLookup | None = None
        self._blocks: list[Block] | None = None

    def frames_at(self, object_vaddr: int) -> list[Frame]:
        if self._lookup is None:
            self._lookup = AnswerLookup(self.source.answer_regions(), self.source.lookup_runs)
        return self._lookup.frames_at(object_vaddr)

    def blocks(self) -> list[Block]:
        """Every answer of the object, flattened (formats/answers.py): decoded once for all its functions."""
        if self._blocks is None:
            self._blocks = flatten_answers(self.source.answer_regions(), self.source.answers)
        return self._blocks


class _RelocatedRuns:
    """A mapped function's runs for a lookup: the object's answer at the object address (LazyRuns)."""

    def __init__(self, region: _MappedRegion, answers: _ObjectAnswers) -> None:
        self._region = region
        self._answers = answers

    def run_at(self, vaddr: int) -> AnswerRun | None:
        region = self._region
        if not region.low <= vaddr < region.high:
            return None
        frames = self._answers.frames_at(region.object_low + (vaddr - region.low))
        return AnswerRun(vaddr, vaddr + 1, tuple(frames)) if frames else None


class DebugMapSource:
    """Frames of a binary's addresses from the objects its debug map names.

    ``objects`` maps an N_OSO name to the opened object, or to the reason it is not used
    (missing, another mtime): functions from such an object name nothing but their symbol.
    Regions: one per mapped function whose object answers (key: its position), then the
    binary's symbol table as fallback. Frames lists are innermost first.
    """

    def __init__(self, binary: MapBinary, objects: Mapping[str, MapObject | str]) -> None:
        self.path = binary.path
        self.debug_id = binary.debug_id
        self._binary = binary
        self._objects = objects
        self._symbol_answers = SymbolAnswers(binary.path, binary.symbol_index())
        self.map = parse_debug_map(binary.stabs(), binary.path)
        self.refused: dict[str, str] = {name: reason for name, reason in objects.items() if isinstance(reason, str)}
        regions: list[_MappedRegion] = []
        for entry in self.map:
            obj = objects.get(entry.name)
            if obj is None or isinstance(obj, str):
                continue
            symbols = _object_symbols(obj)
            for function in entry.functions:
                object_low = symbols.get(function.name)
                if object_low is not None and function.size > 0:
                    high = function.vaddr + function.size
                    regions.append(_MappedRegion(function.vaddr, high, object_low, entry.name))
        regions.sort()
        self._regions = regions
        self._object_answers: dict[str, _ObjectAnswers] = {}
        self._lookup: AnswerLookup | None = None

    def symbols(self) -> Sequence[Symbol]:
        return self._binary.symbols()

    def object_names(self) -> list[str]:
        return [entry.name for entry in self.map]

    def mapped_regions(self) -> list[tuple[int, int, int, MapObject]]:
        """Each mapped function whose object answers: ``[low, high)`` in the binary, its start in
        the object, and the object (what its DWARF covers there: formats/macho/coverage.py)."""
        found = []
        for region in self._regions:
            obj = self._objects.get(region.object_name)
            if obj is not None and not isinstance(obj, str):
                found.append((region.low, region.high, region.object_low, obj))
        return found

    def inputs(self) -> str:
        """The objects the answers come from (path, size, mtime), or the reason each is not used."""
        described = []
        for name, obj in sorted(self._objects.items()):
            if not isinstance(obj, str):
                try:
                    stat = obj.path.stat()
                    state = f"{stat.st_size} {stat.st_mtime_ns}"
                except OSError as err:
                    state = f"unreadable: {err.strerror or err}"
                described.append(f"{name} = {obj.path.resolve()} {obj.slice_offset} {state}")
            else:
                described.append(f"{name}: {obj}")
        return "\n".join(described)

    def _answers_of(self, name: str) -> _ObjectAnswers:
        found = self._object_answers.get(name)
        if found is None:
            obj = self._objects[name]
            assert not isinstance(obj, str)  # only objects that answer have regions
            mine = [region for region in self._regions if region.object_name == name]
            found = self._object_answers[name] = _ObjectAnswers(obj, mine, self._symbol_answers.symbols)
        return found

    def answer_regions(self) -> list[AnswerRegion]:
        mapped = [AnswerRegion(region.low, region.high, key) for key, region in enumerate(self._regions)]
        return mapped + self._symbol_answers.answer_regions()

    def answers(self, key: int) -> RunTable:
        """The runs of mapped function ``key``: the object's over the function, moved to the binary.

        Raises MalformedInputError when the object's debug info there is broken; a broken function
        of the object (its BrokenSpanError) is a broken span of the table (RunTable.broken).
        """
        if key < 0:
            return self._symbol_answers.answers(key)
        region = self._regions[key]
        shift = region.low - region.object_low
        object_high = region.object_low + (region.high - region.low)
        runs: list[AnswerRun] = []
        broken: list[tuple[int, int, BrokenSpanError]] = []
        for block in self._answers_of(region.object_name).blocks():
            if block.high <= region.object_low or block.low >= object_high:
                continue
            if block.table is None:
                assert block.error is not None
                if not isinstance(block.error, BrokenSpanError):
                    raise block.error
                # One broken function of the object: its addresses alone, as a lookup answers them.
                low, high = max(block.low, region.object_low), min(block.high, object_high)
                broken.append((low + shift, high + shift, block.error))
                continue
            table = block.table
            for position in range(block.first, block.end):
                low = max(table.lows[position], block.low, region.object_low)
                high = min(table.highs[position], block.high, object_high)
                if low < high:
                    runs.append(AnswerRun(low + shift, high + shift, table.frames(position)))
        found = RunTable.from_runs(runs)
        found.broken = broken
        return found

    def lookup_runs(self, key: int) -> Sequence[AnswerRun] | LazyRuns:
        if key < 0:
            return self._symbol_answers.answers(key)
        region = self._regions[key]
        return _RelocatedRuns(region, self._answers_of(region.object_name))

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first; the binary's symbol alone where no object answers."""
        if self._lookup is None:
            self._lookup = AnswerLookup(self.answer_regions(), self.lookup_runs)
        return self._lookup.frames_at(vaddr)

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        return frames_or_errors(self.frames_at, vaddrs)

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        """The relative names of the objects' DWARF are not gathered (their files' names stay whole)."""
        return {}

    def debug_info(self) -> DebugInfoSummary:
        opened = [obj for obj in self._objects.values() if not isinstance(obj, str)]
        return DebugInfoSummary(
            has_symbols=bool(self._binary.symbols()),
            has_dwarf=any(obj.has_dwarf() for obj in opened),
            has_line_info=any(obj.section_data("debug_line") for obj in opened),
            has_inline_info=False,
        )

    def close(self) -> None:
        """Nothing to release: the objects belong to whoever opened them (discovery's cache)."""
        self._object_answers.clear()
        self._lookup = None

"""A symbol table as an address index: which function symbol names an address.

Shared by every container that carries a symbol table (ELF ``.symtab``,
``.dynsym`` and MiniDebugInfo; Mach-O ``LC_SYMTAB``; a MinGW PE's COFF
symbols). The reader collects its function symbols, each with a rank (which
table, which entry) and the end of its section; the rules that pick one symbol
per address and decide how far a size-0 symbol reaches are llvm-symbolizer's
(``SymbolizableObjectFile``: stable-sort by address and size, keep the last of
each address; a size-0 symbol reaches the next symbol).

A separate debug file answers with its image's symbol table, not its own
(formats/paired.py's ``beneath``): llvm-symbolizer 14 builds its symbolizer
from the binary's symbols and the debug file's DWARF alone
(``LLVMSymbolizer::getOrCreateModuleInfo`` pairs ``Objects.first`` with a
DWARF context of ``Objects.second``), so the binary's ``.symtab`` (else
``.dynsym``) names the outermost frame, and where it has no symbol the DWARF
names it (glibc: ``fprintf``, not the debug file's ``_IO_fprintf``;
``clone3``, not ``__GI___clone3``). The debug file's own symbols answer only
where neither does, where llvm-symbolizer says ``??``.
"""

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import add, attrgetter, itemgetter, le
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar, overload

from symbolize.formats.answers import ADDRESS_MAX, AnswerLookup, ChainHead, LazyRuns, RunTable
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import AnswerRegion, AnswerRun, Frame, Symbol


class RankedSymbol(NamedTuple):
    """A function symbol as a reader found it, with what choosing among symbols needs."""

    symbol: Symbol
    # End of the symbol's section: how far a size-0 symbol at the end of the table may reach.
    section_end: int | None
    # Greater wins among symbols of one address and size: (table rank, index in table).
    order: tuple[int, int] = (0, 0)


class Ranked(Protocol):
    """What choosing among symbols reads of an entry: a :class:`RankedSymbol`, or a reader's own
    entry with the same fields (formats/elf/symtab.py's FunctionSymbol), taken as it is."""

    @property
    def symbol(self) -> Symbol: ...

    @property
    def section_end(self) -> int | None: ...

    @property
    def order(self) -> tuple[int, int]: ...


def preference(entry: Ranked) -> tuple[int, tuple[int, int]]:
    """Among symbols at one address, the one llvm-symbolizer names: the largest, then the last in
    the symbol table (it stable-sorts by address and size and keeps the last of each address).
    Identical code folded by the linker is where this matters: several names, one address."""
    return entry.symbol.size, entry.order


_Entry = TypeVar("_Entry")

_VADDR_OF = attrgetter("symbol.vaddr")
_SYMBOL_OF = attrgetter("symbol")
_SIZE_OF = attrgetter("size")
_ORDER_OF = attrgetter("order")
_ENTRY_SIZE_OF = attrgetter("symbol.size")

# A reader's symbol as a row (SymbolIndex.from_rows): (vaddr, size, section end, order), then what
# the reader's own function makes the Symbol from. A row is one tuple; a Symbol is made only for
# the entries a lookup names (formats/elf/symtab.py: a name is decoded only then).
SymbolRow = tuple[Any, ...]
ROW_VADDR, ROW_SIZE, ROW_SECTION_END, ROW_ORDER = 0, 1, 2, 3
_ROW_VADDR_OF, _ROW_SIZE_OF, _ROW_ORDER_OF = itemgetter(ROW_VADDR), itemgetter(ROW_SIZE), itemgetter(ROW_ORDER)


class LazySymbols(Sequence[Symbol]):
    """The symbols of chosen rows, each made on first use and kept (SymbolIndex.from_rows)."""

    __slots__ = ("_made", "_rows", "_symbol_of")

    def __init__(self, rows: list[SymbolRow], symbol_of: Callable[[SymbolRow], Symbol]) -> None:
        self._rows = rows
        self._symbol_of = symbol_of
        self._made: list[Symbol | None] = [None] * len(rows)

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, position: int) -> Symbol: ...
    @overload
    def __getitem__(self, position: slice) -> list[Symbol]: ...
    def __getitem__(self, position: int | slice) -> Symbol | list[Symbol]:
        if isinstance(position, slice):
            return [self[at] for at in range(*position.indices(len(self._rows)))]
        symbol = self._made[position]
        if symbol is None:
            symbol = self._made[position] = self._symbol_of(self._rows[position])
        return symbol


class SymbolIndex:
    """One symbol per distinct address, as parallel ``starts``, ``ends`` and ``symbols`` lists.

    ``ends[i]`` is where symbol ``i`` stops naming addresses: its size, or for a
    size-0 symbol (hand-written assembly, ``_init``) the next symbol's start,
    across sections, as llvm-symbolizer reads it (so PLT stubs after ``_init``
    are named ``_init``). ``stops[i]`` is ``ends[i]`` cut at the next start:
    ``[starts[i], stops[i])`` are the disjoint runs a lookup's bisection gives.
    ``symbols`` is a list, or for an index of a reader's rows (:meth:`from_rows`, the ELF reader's)
    a :class:`LazySymbols` that makes each symbol when first asked.
    """

    __slots__ = ("ends", "starts", "stops", "symbols")

    def __init__(self, entries: Iterable[Ranked]) -> None:
        # Each step is one call over the whole table (a file has thousands of symbols, and a cold
        # lookup builds this at open). Sorted by preference() (size, then order), as two stable
        # sorts of plain keys (one sort by the nested tuple cost 3x as much), the entries reversed
        # first so that of equal preferences the first entry sorts last; a dict keeps the last
        # entry of each address, its most preferred.
        ranked = sorted(sorted(reversed(list(entries)), key=_ORDER_OF), key=_ENTRY_SIZE_OF)
        chosen = self._keep_preferred(ranked, _VADDR_OF)
        self.symbols: Sequence[Symbol] = list(map(_SYMBOL_OF, chosen))
        self._reach(list(map(_SIZE_OF, self.symbols)), chosen[-1].section_end if chosen else None)

    @classmethod
    def from_rows(cls, rows: list[SymbolRow], symbol_of: Callable[[SymbolRow], Symbol]) -> "SymbolIndex":
        """The index of a reader's rows (:data:`SymbolRow`), chosen as ``SymbolIndex(entries)``
        chooses; ``symbol_of`` makes a row's Symbol, called only for the symbols asked."""
        index = cls.__new__(cls)
        ranked = sorted(sorted(reversed(rows), key=_ROW_ORDER_OF), key=_ROW_SIZE_OF)
        chosen = index._keep_preferred(ranked, _ROW_VADDR_OF)
        index.symbols = LazySymbols(chosen, symbol_of)
        index._reach(list(map(_ROW_SIZE_OF, chosen)), chosen[-1][ROW_SECTION_END] if chosen else None)
        return index

    def _keep_preferred(self, ranked: list[_Entry], vaddr_of: Callable[[_Entry], int]) -> list[_Entry]:
        """Of ``ranked`` (ascending preference), the last of each address, by address; sets ``starts``."""
        best = dict(zip(map(vaddr_of, ranked), ranked, strict=True))
        self.starts = sorted(best)
        return list(map(best.__getitem__, self.starts))

    def _reach(self, sizes: list[int], last_section_end: int | None) -> None:
        """``ends`` and ``stops`` from the chosen symbols' sizes: a symbol ends at its size; a
        size-0 one reaches the next start, the last one its section's end (else one byte)."""
        starts = self.starts
        self.ends = ends = list(map(add, starts, sizes))
        for position in compress(range(len(ends)), map(le, sizes, repeat(0))):
            if position + 1 < len(starts):
                ends[position] = starts[position + 1]
            else:
                ends[position] = last_section_end if last_section_end is not None else starts[position] + 1
        self.stops = list(map(min, ends, starts[1:]))
        if ends:
            self.stops.append(ends[-1])

    def position_at(self, vaddr: int) -> int:
        """Index of the symbol covering ``vaddr``, -1 for none."""
        position = bisect_right(self.starts, vaddr) - 1
        return position if position >= 0 and vaddr < self.ends[position] else -1

    def symbol_at(self, vaddr: int) -> Symbol | None:
        """The function symbol covering ``vaddr``, or None."""
        position = self.position_at(vaddr)
        return self.symbols[position] if position >= 0 else None

    def pieces(self, low: int, high: int) -> list[tuple[int, int, int]]:
        """``[low, high)`` cut where the covering symbol changes: (low, high, symbol index or -1)."""
        pieces: list[tuple[int, int, int]] = []
        starts, stops = self.starts, self.stops
        position = max(bisect_right(starts, low) - 1, 0)
        cursor = low
        while position < len(starts) and starts[position] < high and cursor < high:
            start, stop = max(starts[position], low), min(stops[position], high)
            if stop > cursor and start < stop:
                if cursor < start:
                    pieces.append((cursor, start, -1))
                start = max(start, cursor)
                pieces.append((start, stop, position))
                cursor = stop
            position += 1
        if cursor < high:
            pieces.append((cursor, high, -1))
        return pieces

    def bounds(self) -> tuple[int, int] | None:
        """The lowest start and highest end: the span a symbol-table region covers; None if empty."""
        if not self.starts:
            return None
        return self.starts[0], max(self.ends)


SYMBOL_TABLE_KEY = -1
# The region standing for debug info that cannot be read at all.
BROKEN_KEY = -2


def symbol_runs(index: SymbolIndex, beneath: SymbolIndex | None = None) -> RunTable:
    """The symbol table's answers: one frame per run, the symbol's name and (local symbols) source.

    ``beneath`` is a second table, answering only where ``index`` has no symbol.
    """
    heads = [ChainHead(symbol.name, 0, (), symbol.source_file) for symbol in index.symbols]
    runs = list(zip(index.starts, index.stops, range(len(index.starts)), strict=True))
    if beneath is not None:
        first_head = len(heads)
        heads += [ChainHead(symbol.name, 0, (), symbol.source_file) for symbol in beneath.symbols]
        for position, (start, stop) in enumerate(zip(beneath.starts, beneath.stops, strict=True)):
            runs += [(low, high, first_head + position) for low, high, above in index.pieces(start, stop) if above < 0]
        runs.sort()
    table = RunTable((), heads)
    for start, stop, head in runs:
        if start < stop:
            table.append(start, stop, -1, 0, 0, head)
    return table


class SymbolRuns:
    """The run of :func:`symbol_runs`' table holding an address, found by a bisection of each
    index (``beneath`` answering where ``index`` has no symbol) instead of building the table:
    a lookup asks the symbol table for the few addresses no debug info names, and building it
    whole was a Python loop over every symbol of the file."""

    __slots__ = ("_beneath", "_index")

    def __init__(self, index: SymbolIndex, beneath: SymbolIndex | None = None) -> None:
        self._index = index
        self._beneath = beneath

    def run_at(self, vaddr: int) -> AnswerRun | None:
        if vaddr >= ADDRESS_MAX:
            return None  # past every run: RunTable cuts a run's end there
        for index in (self._index, self._beneath):
            if index is None:
                continue
            position = bisect_right(index.starts, vaddr) - 1
            if position >= 0 and vaddr < index.stops[position]:
                symbol = index.symbols[position]
                frame = Frame(symbol.name, symbol.source_file)
                return AnswerRun(index.starts[position], index.stops[position], (frame,))
        return None


class SymbolAnswers:
    """A symbol source's answers from a symbol table alone (a stripped binary, a file without DWARF).

    Readers that pair debug info with a symbol table extend :meth:`answer_regions` and
    :meth:`answers`; the symbol table is always the fallback region, key :data:`SYMBOL_TABLE_KEY`.
    """

    def __init__(
        self,
        path: Path,
        symbols: SymbolIndex,
        broken: MalformedInputError | None = None,
        beneath: SymbolIndex | None = None,
    ) -> None:
        """``symbols`` name the outermost frame; ``beneath`` (a debug file's own symbols, when
        ``symbols`` are its image's) answers only where no symbol of ``symbols`` and no debug
        info does. ``broken``: why the file's debug info cannot be read at all; it is then the
        answer wherever no symbol covers an address."""
        self.path = path
        self.symbols = symbols
        self.beneath = beneath
        self.broken = broken
        self._lookup: AnswerLookup | None = None

    def answer_regions(self) -> list[AnswerRegion]:
        spans = [bounds for index in (self.symbols, self.beneath) if index is not None and (bounds := index.bounds())]
        low, high = min(low for low, _ in spans) if spans else 0, max(high for _, high in spans) if spans else 0
        regions = [AnswerRegion(low, high, SYMBOL_TABLE_KEY, fallback=True)] if spans else []
        if self.broken is not None:
            regions.append(AnswerRegion(0, 1 << 64, BROKEN_KEY))
        return regions

    def answers(self, key: int) -> RunTable:
        if key == BROKEN_KEY and self.broken is not None:
            raise self.broken
        if key != SYMBOL_TABLE_KEY:
            raise KeyError(key)  # a caller's bug: keys come from answer_regions
        return symbol_runs(self.symbols, self.beneath)

    def lookup_runs(self, key: int) -> Sequence[AnswerRun] | LazyRuns:
        """What this source's own lookups decode a region into (:meth:`answers` unless lazier): the
        symbol table's runs found by bisection (:class:`SymbolRuns`), not built whole."""
        if key == SYMBOL_TABLE_KEY:
            return SymbolRuns(self.symbols, self.beneath)
        return self.answers(key)

    def frames_at(self, vaddr: int) -> list[Frame]:
        return self._answer_lookup().frames_at(vaddr)

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        """:meth:`frames_at` of each vaddr, or the MalformedInputError it raises (a batch of lookups)."""
        return self._answer_lookup().frames_many(vaddrs)

    def _answer_lookup(self) -> AnswerLookup:
        if self._lookup is None:
            self._lookup = AnswerLookup(self.answer_regions(), self.lookup_runs)
        return self._lookup

    def close(self) -> None:
        """Drop what lookups decoded. The lookup holds this object's own ``lookup_runs``: left to
        that cycle, the decoded runs (and the compiled source's views of the file's mapping, which
        keep the mapping and its descriptor) would outlive the file's ``close()`` until a collection."""
        self._lookup = None

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        """A symbol table's file names (STT_FILE) are as the compiler was given them: none differ."""
        return {}

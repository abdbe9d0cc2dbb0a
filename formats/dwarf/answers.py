"""Answer runs of DWARF units, named as llvm-symbolizer names them with a symbol table beside.

For every address a unit covers, the answer is decided here once, for whole
runs of addresses: the line row that holds it (DWARF 5, 6.2: the last row at
or before it in the sequence holding it), the inline chain (3.3.8: the
function range with the greatest low that holds it, then at each level the
first child in DIE order whose ranges hold it), and the covering symbol, which
names the outermost frame (the symbol names what the linker placed there:
``foo.cold``, ``bar.constprop.0``, one of several folded functions), its
STT_FILE source standing in for a missing row file. Where a unit covers an
address with a row but no function, the frame is the symbol's (or nameless).

Any container that pairs DWARF with a symbol table (ELF, Mach-O, MinGW PE)
answers through :class:`DwarfSymbolAnswers`. The persistent index asks for
whole units (:meth:`DwarfSymbolAnswers.answers`); the reader's own lookups
decode a unit's runs one top-level function at a time
(:class:`UnitRuns`), since a batch of lookups touches few functions of a unit;
both build runs with the same code, so they agree.

Inline trees are walked with an explicit stack, never recursion: the depth of
nesting comes from the input.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, overload

from symbolize.formats.answers import ADDRESS_MAX, ChainHead, LazyRuns, RunsAnswer, RunTable, owned_pieces
from symbolize.formats.dwarf.info import _DECODE_ERRORS, DwarfInfo, Name, _UnitState
from symbolize.formats.dwarf.scan import UnitIndex, _node_ranges
from symbolize.formats.errors import BrokenSpanError, MalformedInputError
from symbolize.formats.native import kernels
from symbolize.formats.symbols import SymbolAnswers, SymbolIndex
from symbolize.formats.types import AnswerRegion, AnswerRun, DebugHint, Frame, Symbol

if TYPE_CHECKING:
    from symbolize.formats._kernels import DwarfUnits, IndexTables, LazyUnit, SymbolBounds, UnitColumns

# Past every address: the end of the span after a unit's last function.
_END = 1 << 65
# What the compiled source raises: its own error, for a panic it caught (none crosses into Python).
_COMPILED_ERRORS: tuple[type[Exception], ...] = (kernels.CompiledDwarfError,) if kernels is not None else ()
# What a lazy unit raises where the reference must answer the unit.
_DEFERRED: tuple[type[Exception], ...] = (kernels.CompiledDwarfDeferred,) if kernels is not None else ()
# How a NamedTuple of fields already in order is made without its Python-level __new__.
_new_tuple = tuple.__new__
# A Frame from its eight fields, in order, made in C.
_as_frame = partial(_new_tuple, Frame)
# A lazy unit's run: low, high, file, line, column, discriminator, chain (-1: none), symbol (-1: none).
LazyRow = tuple[int, int, int, int, int, int, int, int]
# A ChainHead's fields, in its order, as a plain tuple (see _CompiledLazyRuns._heads).
HeadFields = tuple[str | None, int, tuple[Frame, ...], str | None, str | None, int | None]
# Deepest inline chain whose calling frames are remembered per node (see UnitRuns._outer_frames).
_MEMO_DEPTH = 64

# An inline chain as both answer sources give it: the innermost function's name, its declaration
# line and file, its entry (DW_AT_low_pc), and the frames that called it, innermost first.
Chain = tuple[str | None, int, str | None, int | None, tuple[Frame, ...]]


def chain_head(chain: Chain | None, covering: Symbol | None) -> ChainHead:
    """The chain head of runs under inline ``chain`` (None: no function covers them) where symbol
    ``covering`` (None: none) covers them: the one naming policy of the Python runs (:class:`UnitRuns`)
    and the compiled ones (:func:`compiled_runs`), as :func:`head_fields` spells it."""
    # tuple.__new__ in place of the NamedTuple's Python-level __new__: a cold lookup names thousands.
    return _new_tuple(ChainHead, head_fields(chain, covering))


def head_fields(chain: Chain | None, covering: Symbol | None) -> HeadFields:
    """:func:`chain_head`'s fields as a plain tuple, in ChainHead's order (what the lazy runs keep,
    :class:`_CompiledLazyRuns`). The symbol names the outermost frame, as llvm-symbolizer names it
    (``foo.cold``, one of several folded functions), and its STT_FILE source stands in for a file
    the outermost frame lacks; without a function, the symbol is the frame."""
    # A Symbol's and a Frame's fields read by position (name 0, source_file 3; a Frame's file 1): a
    # NamedTuple's field by name is a descriptor call, and this runs once per head, thousands a lookup.
    if chain is None:
        return (None, 0, (), None, None, None) if covering is None else (covering[0], 0, (), covering[3], None, None)
    name, start_line, start_file, start_address, outer = chain
    default_file = None
    if covering is not None:
        if outer:
            outermost = outer[-1]
            renamed = _new_tuple(Frame, (covering[0], outermost[1] or covering[3], *outermost[2:]))
            outer = (*outer[:-1], renamed)
        else:
            name, default_file = covering[0], covering[3]
    return (name, start_line, outer, default_file, start_file, start_address)


def named_chain(named: dict[int, Chain], source: UnitColumns | LazyUnit, chain: int) -> Chain:
    """Chain ``chain`` of a compiled unit (``source.chain``), its calling frames as Frames, made once
    per unit (``named``)."""
    found = named.get(chain)
    if found is None:
        name, start_line, start_file, start_address, outer = source.chain(chain)
        # Each calling frame comes as Frame's eight fields, in order (most chains have none).
        frames = tuple(map(_as_frame, outer)) if outer else ()
        found = named[chain] = (name, start_line, start_file, start_address, frames)
    return found


def compiled_runs(columns: UnitColumns, symbols: SymbolIndex) -> RunTable:
    """A unit's runs as the compiled source built them (``DwarfUnits.unit_runs``), as a RunTable
    whose chain heads :func:`chain_head` names from the columns' (chain, symbol) head keys."""
    table = RunTable(columns.file_names, _CompiledHeads(columns, symbols))
    # Taken from the columns, not read: held once, in the table, while an index build holds every unit.
    run_columns = (table.lows, table.highs, table.files, table.lines, table.columns, table.heads,
                   table.discriminators)  # fmt: skip
    for column, data in zip(run_columns, columns.take_columns(), strict=True):
        column.frombytes(data)
    return table


class _CompiledHeads(Sequence[ChainHead]):
    """The chain heads of a compiled unit's runs, each named on first use: a batch of lookups reads
    a few of a unit's thousands (naming them all took as long as building the unit, on libpython)."""

    __slots__ = ("_columns", "_heads", "_keys", "_named_chains", "_symbols")

    def __init__(self, columns: UnitColumns, symbols: SymbolIndex) -> None:
        self._columns = columns
        # Read when a head is first asked: the index build names the heads in compiled memory
        # (compiled_chain_ids) and never asks.
        self._keys: list[tuple[int, int]] = []
        self._symbols = symbols.symbols
        self._heads: list[ChainHead | None] = []
        self._named_chains: dict[int, Chain] = {}

    def __len__(self) -> int:
        return len(self._keys_read())

    def _keys_read(self) -> list[tuple[int, int]]:
        if not self._heads:
            self._keys = self._columns.head_keys
            self._heads = [None] * len(self._keys)
        return self._keys

    @overload
    def __getitem__(self, position: int) -> ChainHead: ...

    @overload
    def __getitem__(self, position: slice) -> Sequence[ChainHead]: ...

    def __getitem__(self, position: int | slice) -> ChainHead | Sequence[ChainHead]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        keys = self._keys_read()
        head = self._heads[position]
        if head is None:
            chain, symbol = keys[position]
            covering = self._symbols[symbol] if symbol >= 0 else None
            head = self._heads[position] = chain_head(self._chain(chain) if chain >= 0 else None, covering)
        return head

    def _chain(self, chain: int) -> Chain:
        return named_chain(self._named_chains, self._columns, chain)

    def compiled_chain_ids(self, tables: IndexTables) -> list[int]:
        """The index's chain id of each head, named and interned by the index's compiled tables
        (symbolize/index/build.py's ``_CompiledTables``) without a Frame per calling frame."""
        return tables.unit_chains(self._columns, self._symbols)


class _CompiledLazyRuns:
    """A unit's runs for a cold lookup from the compiled source's lazy unit (``LazyUnit``): the run
    holding an address, its chain head named by :func:`chain_head` as for the compiled whole units.
    Where the compiled source leaves the unit to the reference (a chain it cannot name, a form it
    does not read), the Python runs answer it from then on: the spans answered before are ones
    whose runs depend on nothing outside them (:class:`UnitRuns`), so both give the same there."""

    __slots__ = (
        "_chains",
        "_fallback",
        "_file_names",
        "_heads",
        "_lazy",
        "_path",
        "_python_runs",
        "_symbols",
        "held_bytes",
    )

    def __init__(
        self, lazy: LazyUnit, symbols: SymbolIndex, fallback: Callable[[], UnitRuns], path: Path, held_bytes: int = 0
    ) -> None:
        """``held_bytes``: the unit's length in .debug_info, what the lookup's budget counts it as
        (formats/answers.py's HeldBytes): what the lazy unit decodes grows with it."""
        self._lazy = lazy
        self.held_bytes = held_bytes
        self._file_names = lazy.file_names  # made once, as the unit was opened
        self._symbols = symbols.symbols
        self._fallback = fallback
        self._path = path
        self._python_runs: UnitRuns | None = None
        # (chain, symbol) -> its ChainHead's fields as a plain tuple: unpacked per address, and a
        # NamedTuple (a tuple subclass) is unpacked through its iterator, a plain tuple in place.
        self._heads: dict[tuple[int, int], HeadFields] = {}
        self._chains: dict[int, Chain] = {}

    def frames_many(self, vaddrs: list[int]) -> list[RunsAnswer]:
        """:class:`LazyRunsMany`'s batch: the lazy unit asked for all of ``vaddrs`` in one call, each
        answer's frames made here (what :meth:`run_at` gives, without an AnswerRun per address)."""
        answers: list[RunsAnswer] = []
        if self._python_runs is not None:
            for vaddr in vaddrs:
                answers.append(self._python_frames(vaddr))
                if isinstance(answers[-1], MalformedInputError) and not isinstance(answers[-1], BrokenSpanError):
                    break  # the region is broken from here on (LazyRunsMany)
            return answers
        found = self._lazy.runs_at(vaddrs)
        # Only the last item may be an exception: where run_at would raise it.
        stopped = found.pop() if found and isinstance(found[-1], Exception) else None
        assert stopped is None or isinstance(stopped, Exception)
        answers += self._rows_frames(found)  # type: ignore[arg-type]
        if stopped is None:
            return answers
        if not isinstance(stopped, _DEFERRED):
            answers.append(self._compiled_error(stopped))
            return answers
        # Left to the reference from vaddrs[len(answers)] on.
        self._python_runs = self._fallback()
        return answers + self.frames_many(vaddrs[len(answers):])

    def _python_frames(self, vaddr: int) -> RunsAnswer:
        """:meth:`run_at`'s frames, or the error it raises."""
        try:
            run = self.run_at(vaddr)
        except MalformedInputError as error:
            return error
        return None if run is None else list(run.frames)

    def _compiled_error(self, error: Exception) -> MalformedInputError:
        return MalformedInputError(f"DWARF: {error}", self._path)

    def _chain_heads(self, chain: int, symbol: int) -> HeadFields:
        named = named_chain(self._chains, self._lazy, chain) if chain >= 0 else None
        fields = self._heads[chain, symbol] = head_fields(named, self._symbols[symbol] if symbol >= 0 else None)
        return fields

    def run_at(self, vaddr: int) -> AnswerRun | None:
        if self._python_runs is not None:
            return self._python_runs.run_at(vaddr)
        try:
            found = self._lazy.run_at(vaddr)
        except _DEFERRED:
            self._python_runs = self._fallback()
            return self._python_runs.run_at(vaddr)
        except _COMPILED_ERRORS as error:
            raise self._compiled_error(error) from error
        if found is None:
            return None
        frames = self._rows_frames([found])[0]
        assert frames is not None
        return _new_tuple(AnswerRun, (found[0], found[1], tuple(frames)))

    def _rows_frames(self, runs: list[LazyRow | None]) -> list[list[Frame] | None]:
        """The frames of each lazy unit's run (a row of ``LazyUnit.run_at``; None: no run), innermost
        first: the row's place under its chain head, named once per (chain, symbol). One loop for a
        batch: a call per row cost as much as making its frames."""
        heads, file_names = self._heads, self._file_names
        named = len(file_names)
        out: list[list[Frame] | None] = []
        append = out.append
        for run in runs:
            if run is None:
                append(None)
                continue
            _, _, file, line, column, discriminator, chain, symbol = run
            head = heads.get((chain, symbol)) or self._chain_heads(chain, symbol)
            # The head's fields unpacked, not read by name (a descriptor call each, per address).
            function, start_line, outer, default_file, start_file, start_address = head  # ChainHead's order
            file_name = file_names[file] if 0 <= file < named else None
            # tuple.__new__: a NamedTuple's own __new__ is a Python function, a frame per call.
            append([_new_tuple(Frame, (function, file_name or default_file, line, column, start_line, start_file,
                                       start_address, discriminator)), *outer])
        return out


class DwarfSymbolAnswers(SymbolAnswers):
    """Regions: each unit's address ranges (key: the unit's number), then the symbol table as fallback."""

    def __init__(
        self, path: Path, dwarf: DwarfInfo, symbols: SymbolIndex, functions_only: bool = False,
        zero_is_discarded: bool = False,
    ) -> None:
        """``functions_only``: line rows answer only inside a function's ranges, as in a dSYM
        (dsymutil keeps the rows inside each function's ranges); for the DWARF of an object file
        read through a debug map, whose line table also covers the padding between functions.
        ``zero_is_discarded``: no code lives at address 0 (no executable segment holds it), so a
        unit range starting there is the linker's mark of code it discarded (a unit whose only
        function was dropped keeps ``[0, size)``) and is left out: it would name what is not there."""
        super().__init__(path, symbols)
        self.dwarf = dwarf
        self.functions_only = functions_only
        self.zero_is_discarded = zero_is_discarded
        self._bounds: tuple[SymbolBounds | None] | None = None
        self._compiled: tuple[DwarfUnits | None] | None = None

    def close(self) -> None:
        super().close()
        self._compiled = None  # the compiled source and, through it, its views of the file

    def answer_regions(self) -> list[AnswerRegion]:
        """The units' regions and the symbol table's; DWARF that cannot be read at all (a section
        past its file, a first unit without a length) leaves the symbol table answering, and its
        error the answer where no symbol is."""
        try:
            self.dwarf.load()
        except MalformedInputError as err:
            self.broken = err
            return super().answer_regions()
        unplaced = self.dwarf.unplaced_error
        if unplaced is not None and self.broken is None:
            # A unit whose header cannot be read covers addresses no one knows: its error is the
            # answer where no other unit and no symbol names an address.
            self.broken = MalformedInputError(unplaced, self.path)
        skip_zero = self.zero_is_discarded
        needs = self.dwarf.unit_needs
        # A unit's needs asked once, not once per range: rustc gives each function a range of its
        # own (rustgen: 3,815 ranges, 23 units); each region made by tuple.__new__, not by the
        # NamedTuple's Python-level __new__ (fields in AnswerRegion's order).
        ranges = self.dwarf._unit_ranges
        unit_needs: dict[int, tuple[DebugHint, ...]] = {unit: needs(unit) for unit in {unit for _, _, unit in ranges}}
        units = [
            _new_tuple(AnswerRegion, (low, high, unit, False, unit_needs[unit]))
            for low, high, unit in ranges
            if low or not skip_zero
        ]
        return units + super().answer_regions()

    def answers(self, key: int) -> RunTable:
        """All runs of unit ``key``; raises MalformedInputError when the unit is broken.

        A unit decoded only for this is dropped afterwards, so that indexing a large
        file never holds more than one unit's decode at once.
        """
        if key < 0:  # the symbol table, or the region standing for debug info that cannot be read
            return super().answers(key)
        compiled = self._compiled_runs(key)
        if compiled is not None:
            return compiled
        state = self.dwarf._load_units()[key]
        was_decoded = state.index is not None
        runs = self._unit(key, whole=True).all_runs()
        if not was_decoded:
            state.index = state.lines = None
        return runs

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        """The relative names of the units covering ``vaddr`` (:meth:`DwarfInfo.relative_file_names`);
        none where the DWARF cannot be read."""
        try:
            return self.dwarf.relative_file_names(vaddr)
        except MalformedInputError:
            return {}

    def lookup_runs(self, key: int) -> Sequence[AnswerRun] | LazyRuns:
        """Unit ``key``'s runs for a batch of lookups, built one span at a time as addresses land in
        them: by the compiled source's lazy unit where it takes the unit (:class:`_CompiledLazyRuns`),
        else the Python runs. Never a whole unit: a cold lookup touches few functions of a unit, and
        building whole units made a cold run of a large Rust binary 1.7x the CPU and 3.6x the
        memory (bench/RESULTS.md)."""
        if key < 0:
            return super().lookup_runs(key)
        units = self._compiled_units()
        if units is not None:
            state = self.dwarf._load_units()[key]
            if state.error is None:
                try:
                    lazy = units.lazy_unit(state.unit.offset, self.functions_only)
                except _COMPILED_ERRORS as error:
                    raise MalformedInputError(f"compile unit at {state.unit.offset:#x}: {error}", self.path) from error
                if lazy is not None:
                    # The fallback holds what it needs, not this object: the lazy runs sit in this
                    # object's lookup, and a cycle through it would keep the compiled source, and
                    # with it the file's mapping and descriptor, open after close() until a collection.
                    fallback = partial(_unit_runs, self.dwarf, key, self.symbols, self.path, self.functions_only)
                    unit = state.unit
                    return _CompiledLazyRuns(lazy, self.symbols, fallback, self.path, unit.end - unit.offset)
        return self._unit(key, whole=False)

    def _compiled_runs(self, key: int) -> RunTable | None:
        """Unit ``key``'s runs from the compiled source (``native/src/dwarf/``); None where the
        kernels are not loaded or the compiled source leaves the unit to the Python runs (anything
        it is not certain of: damage, dwz references, split units). It never holds a broken span:
        a unit with one is the Python runs'."""
        units = self._compiled_units()
        if units is None:
            return None
        state = self.dwarf._load_units()[key]
        if state.error is not None:  # what the Python runs raise too, without asking them
            raise MalformedInputError(state.error, self.path)
        try:
            columns = units.unit_runs(state.unit.offset, self.functions_only)
        except _COMPILED_ERRORS as error:
            raise MalformedInputError(f"compile unit at {state.unit.offset:#x}: {error}", self.path) from error
        return compiled_runs(columns, self.symbols) if columns is not None else None

    def _compiled_units(self) -> DwarfUnits | None:
        """The compiled source over this file's DWARF sections and symbols, built on first use;
        None without the kernels, or where a symbol's bounds do not fit 64 bits."""
        if kernels is None:
            return None
        if self._compiled is None:
            bounds = self._symbol_bounds()
            dwarf = self.dwarf
            try:
                units = (kernels.DwarfUnits(dwarf.sections_by_name(), dwarf.little_endian, dwarf.address_size, bounds)
                         if bounds is not None else None)
            except _COMPILED_ERRORS as error:
                raise MalformedInputError(f"DWARF: {error}", self.path) from error
            self._compiled = (units,)
        return self._compiled[0]

    def _unit(self, key: int, whole: bool) -> UnitRuns:
        return _unit_runs(self.dwarf, key, self.symbols, self.path, self.functions_only, whole)

    def _symbol_bounds(self) -> SymbolBounds | None:
        """The symbol table's starts and stops for the compiled source, read once per file."""
        if kernels is None:
            return None
        if self._bounds is None:
            try:
                self._bounds = (kernels.SymbolBounds(self.symbols.starts, self.symbols.stops),)
            except OverflowError:
                self._bounds = (None,)  # a bound past 128 bits (hostile sizes): the sweep in Python
        return self._bounds[0]


def _unit_runs(
    dwarf: DwarfInfo, key: int, symbols: SymbolIndex, path: Path, functions_only: bool, whole: bool = False
) -> UnitRuns:
    """Unit ``key``'s runs from the Python reader, the unit decoded (``whole``: all of it) first."""
    state = dwarf._load_units()[key]
    if not dwarf._ensure_decoded(state, whole):
        raise MalformedInputError(state.error or "unit cannot be decoded", path)
    return UnitRuns(dwarf, state, symbols, path, functions_only)

class UnitRuns:
    """The runs of one decoded unit: all at once (:meth:`all_runs`) or by top-level function (``run_at``).

    The unit's addresses fall into spans: a piece of a top-level function (the
    ranges it owns among the unit's functions), or a gap between them, where
    only rows answer. A span's runs depend on nothing outside it, so building
    them span by span gives the runs a whole-unit build gives.
    """

    def __init__(
        self, info: DwarfInfo, state: _UnitState, symbols: SymbolIndex, path: Path, functions_only: bool = False,
    ) -> None:
        """``functions_only``: the spans between top-level functions give no runs (rows alone answer nothing)."""
        assert state.index is not None
        self._info = info
        self._functions_only = functions_only
        self._state = state
        self._index: UnitIndex = state.index
        self._symbols = symbols
        self._path = path
        lines = state.lines
        self._heads: list[ChainHead] = []
        self._head_ids: dict[tuple[int, int], int] = {}
        self._names: dict[int, Name] = {}
        self._call_frames: dict[int, Frame] = {}
        self._outer: dict[int, tuple[Frame, ...]] = {}
        self._file_names: Sequence[str | None] = lines.files if lines is not None else ()
        # The line table's answer, as disjoint (low, high, sequence) pieces: among overlapping
        # sequences (code the linker discarded, all at 0) the one a lookup's backward walk finds first.
        sequences = lines.sequences if lines is not None else []
        self._row_pieces = owned_pieces([(low, high, -position, position) for position, (low, high, _, _) in
                                         enumerate(sequences)])
        self._row_lows = [low for low, _, _ in self._row_pieces]
        self._function_count = -1
        self._pieces: list[tuple[int, int, int]] = []
        self._piece_lows: list[int] = []
        self._spans: dict[tuple[int, int, int], RunTable] = {}
        self._levels: dict[int, tuple[list[int], list[tuple[int, int, int]]]] = {}
        self._node_spans: dict[int, list[tuple[int, int]]] = {}
        # Inline node -> why the spans it owns cannot be answered: its subtree cannot be scanned
        # (UnitIndex.failed), a child's ranges cannot be decoded, or its chain cannot be named.
        # The error is held per span so that the rest of the unit still answers.
        self._broken_nodes: dict[int, BrokenSpanError] = {}

    # Spans ----------------------------------------------------------------------

    def _settle_pieces(self) -> None:
        """Which top-level function owns which addresses; again whenever expansion found more functions."""
        ranges = self._index.function_ranges
        if len(ranges) == self._function_count:
            return
        self._function_count = len(ranges)
        # Later entries (greater low) win where function ranges overlap, as UnitIndex.function_at.
        self._pieces = owned_pieces([(low, high, -position, node) for position, (low, high, node) in enumerate(ranges)])
        self._piece_lows = [low for low, _, _ in self._pieces]
        self._spans.clear()
        self._levels.clear()
        self._node_spans = {}
        for low, high, node in self._pieces:
            self._node_spans.setdefault(node, []).append((low, high))

    def _gap(self, after: int) -> tuple[int, int, int]:
        """The span between top-level pieces ``after - 1`` and ``after``, where only rows answer."""
        pieces = self._pieces
        low = pieces[after - 1][1] if after > 0 else 0
        high = pieces[after][0] if after < len(pieces) else _END
        return low, high, -1

    def run_at(self, vaddr: int) -> AnswerRun | None:
        try:
            while True:
                self._settle_pieces()
                span = self._leaf_at(vaddr)
                if len(self._index.function_ranges) != self._function_count:
                    continue  # expansion found a nested function: the pieces change
                table = self._spans.get(span)
                if table is None:
                    broken = self._chain_error(span[2]) if span[2] >= 0 else None
                    if broken is not None:
                        raise broken
                    table = RunTable(self._file_names, self._heads)
                    self._build(table, *span)
                    if len(self._index.function_ranges) != self._function_count:
                        continue  # expansion found a nested function: the pieces change
                    self._spans[span] = table
                return table.run_at(vaddr)
        except _DECODE_ERRORS as error:
            raise self._broken(error) from error

    def _leaf_at(self, vaddr: int) -> tuple[int, int, int]:
        """The span holding ``vaddr`` whose runs share one inline node: down the tree, one level at a time."""
        position = bisect_right(self._piece_lows, vaddr) - 1
        if position < 0 or vaddr >= self._pieces[position][1]:
            return self._gap(position + 1)
        node = self._pieces[position][2]
        while True:
            lows, pieces = self._level(node)
            low, high, owner = pieces[bisect_right(lows, vaddr) - 1]
            if owner == node:
                return low, high, node
            node = owner

    def all_runs(self) -> RunTable:
        """Every run of the unit, in address order."""
        index = self._index
        try:
            while index.deferred:
                # A node that fails keeps its error (UnitIndex.failed): its spans are broken (_level).
                with suppress(*_DECODE_ERRORS):
                    index._expand(next(iter(index.deferred)))
            self._settle_pieces()
            spans = [] if self._functions_only else [self._gap(after) for after in range(len(self._pieces) + 1)]
            pending = list(self._node_spans)
            seen = set(pending)
            while pending:
                node = pending.pop()
                for low, high, owner in self._level(node)[1]:
                    if owner == node:
                        spans.append((low, high, node))
                    elif owner not in seen:
                        seen.add(owner)
                        pending.append(owner)
            spans.sort()
            broken: list[tuple[int, int, BrokenSpanError]] = []
            unbroken: list[tuple[int, int, int]] = []
            for span in spans:
                low, high, leaf = span
                error = self._chain_error(leaf) if leaf >= 0 else None
                if error is None:
                    unbroken.append(span)
                elif low < high:
                    broken.append((low, high, error))
            table = self._build_all(unbroken)
            table.broken = broken
            return table
        except _DECODE_ERRORS as error:
            raise self._broken(error) from error

    def _build_all(self, spans: list[tuple[int, int, int]]) -> RunTable:
        """:meth:`_sweep` into a new table."""
        table = RunTable(self._file_names, self._heads)
        self._sweep(table, spans)
        return table

    def _sweep(self, table: RunTable, spans: list[tuple[int, int, int]]) -> None:
        """:meth:`_build` over sorted disjoint ``spans``, with cursors over the row and symbol pieces
        in place of a bisection per span (the same runs: a span inside one piece is that piece's)."""
        lows, highs, files, line_numbers, columns, heads, discriminators = (
            table.lows, table.highs, table.files, table.lines, table.columns, table.heads, table.discriminators
        )
        lines = self._state.lines
        increasing = lines is not None and lines.increasing
        sequences = lines.sequences if lines is not None else []
        addresses = lines.addresses if lines is not None else array("Q")
        file_indexes = lines.file_indexes if lines is not None else array("q")
        row_lines = lines.lines if lines is not None else array("q")
        row_columns = lines.columns if lines is not None else array("q")
        row_discriminators = lines.discriminators if lines is not None else array("Q")
        head_ids = self._head_ids
        row_pieces, row_count, row_at = self._row_pieces, len(self._row_pieces), 0
        symbols = self._symbols
        starts, stops, symbol_count, symbol_at = symbols.starts, symbols.stops, len(symbols.starts), 0
        for low, high, leaf in spans:
            if low >= high:
                continue  # the gap between two functions that touch
            while row_at < row_count and row_pieces[row_at][1] <= low:
                row_at += 1
            parts: Sequence[tuple[int, int, int]]
            if row_at < row_count and row_pieces[row_at][0] <= low and high <= row_pieces[row_at][1]:
                parts = ((low, high, row_pieces[row_at][2]),)
            elif row_at >= row_count or row_pieces[row_at][0] >= high:
                if leaf < 0:
                    continue
                parts = ((low, high, -1),)
            else:
                parts = self._row_parts(low, high)
            for part_low, part_high, sequence in parts:
                if sequence < 0 and leaf < 0:
                    continue
                while symbol_at < symbol_count and stops[symbol_at] <= part_low:
                    symbol_at += 1
                symbol_parts: Sequence[tuple[int, int, int]]
                if symbol_at >= symbol_count or starts[symbol_at] >= part_high:
                    symbol_parts = ((part_low, part_high, -1),)
                elif starts[symbol_at] <= part_low and part_high <= stops[symbol_at]:
                    symbol_parts = ((part_low, part_high, symbol_at),)
                else:
                    symbol_parts = symbols.pieces(part_low, part_high)
                for symbol_low, symbol_high, symbol in symbol_parts:
                    head = head_ids.get((leaf, symbol))
                    if head is None:
                        head = self._head(leaf, symbol)
                    if sequence < 0:
                        table.append(symbol_low, symbol_high, -1, 0, 0, head)
                    elif increasing and symbol_high <= ADDRESS_MAX:
                        # _append_rows, inline: this runs once per span of a whole unit.
                        _, _, first, end = sequences[sequence]
                        row = bisect_right(addresses, symbol_low, first, end) - 1
                        stop = bisect_left(addresses, symbol_high, first, end)
                        inner = addresses[row + 1 : stop]
                        lows.append(symbol_low)
                        lows += inner
                        highs += inner
                        highs.append(symbol_high)
                        files += file_indexes[row:stop]
                        line_numbers += row_lines[row:stop]
                        columns += row_columns[row:stop]
                        discriminators += row_discriminators[row:stop]
                        heads += array("q", [head]) * (stop - row)
                    else:
                        self._append_rows(table, symbol_low, symbol_high, sequence, head)

    def _chain_error(self, leaf: int) -> BrokenSpanError | None:
        """Why the chain of inline node ``leaf`` cannot be named (its name or a caller's cannot be
        read), None when it can; asked before any run under ``leaf`` is built, by both paths."""
        found = self._broken_nodes.get(leaf)
        if found is not None:
            return found
        try:
            self._name(leaf)
            self._outer_frames(leaf)
        except _DECODE_ERRORS as error:
            found = self._broken_nodes[leaf] = self._span_error(error)
            return found
        return None

    def _span_error(self, error: BaseException) -> BrokenSpanError:
        return BrokenSpanError(f"compile unit at {self._state.unit.offset:#x}: {error}", self._path)

    def _broken(self, error: BaseException) -> MalformedInputError:
        state = self._state
        state.error = state.error or f"compile unit at {state.unit.offset:#x}: {error}"
        return MalformedInputError(state.error, self._path)

    # Runs -----------------------------------------------------------------------

    def _build(self, table: RunTable, low: int, high: int, leaf: int) -> None:
        """Append the runs of ``[low, high)``, where the innermost inline node is ``leaf`` (-1: none)."""
        if low >= high or (leaf < 0 and self._functions_only):
            return
        for part_low, part_high, sequence in self._row_parts(low, high):
            if sequence < 0 and leaf < 0:
                continue  # neither a function nor a row: the unit does not answer here
            for symbol_low, symbol_high, symbol in self._symbols.pieces(part_low, part_high):
                head = self._head(leaf, symbol)
                if sequence < 0:
                    table.append(symbol_low, symbol_high, -1, 0, 0, head)
                else:
                    self._append_rows(table, symbol_low, symbol_high, sequence, head)

    def _row_parts(self, low: int, high: int) -> list[tuple[int, int, int]]:
        """``[low, high)`` cut where the line sequence answering changes (-1: none)."""
        parts: list[tuple[int, int, int]] = []
        pieces = self._row_pieces
        position = max(bisect_right(self._row_lows, low) - 1, 0)
        cursor = low
        while position < len(pieces) and pieces[position][0] < high:
            piece_low, piece_high, sequence = pieces[position]
            position += 1
            if piece_high <= cursor:
                continue
            if cursor < piece_low:
                parts.append((cursor, piece_low, -1))
                cursor = piece_low
            end = min(piece_high, high)
            parts.append((cursor, end, sequence))
            cursor = end
        if cursor < high:
            parts.append((cursor, high, -1))
        return parts

    def _append_rows(self, table: RunTable, low: int, high: int, sequence: int, head: int) -> None:
        """One run per row of ``sequence`` in ``[low, high)``: the row a lookup's bisection finds."""
        lines = self._state.lines
        assert lines is not None
        _, _, first, end = lines.sequences[sequence]
        addresses = lines.addresses
        if lines.increasing and high <= ADDRESS_MAX:
            row = bisect_right(addresses, low, first, end) - 1
            stop = bisect_left(addresses, high, first, end)
            inner = addresses[row + 1 : stop]
            table.lows.append(low)
            table.lows += inner
            table.highs += inner
            table.highs.append(high)
            table.files += lines.file_indexes[row:stop]
            table.lines += lines.lines[row:stop]
            table.columns += lines.columns[row:stop]
            table.discriminators += lines.discriminators[row:stop]
            table.heads += array("q", [head]) * (stop - row)
            return
        # A program that steps back: its rows are not sorted, and a lookup bisects them anyway.
        points = sorted({address for address in addresses[first:end] if low < address < high})
        points.insert(0, low)
        points.append(high)
        for point, next_point in pairwise(points):
            row = bisect_right(addresses, point, first, end) - 1
            table.append(point, next_point, lines.file_indexes[row], lines.lines[row], lines.columns[row], head,
                         lines.discriminators[row])

    def _level(self, node: int) -> tuple[list[int], list[tuple[int, int, int]]]:
        """The spans ``node`` owns, cut among its children: sorted (low, high, owner), owner ``node``
        where no child holds the address. The first child in DIE order whose ranges hold an address
        owns it. One level per call: a lookup walks down only the chain that holds it."""
        found = self._levels.get(node)
        if found is not None:
            return found
        try:
            return self._cut_level(node)
        except _DECODE_ERRORS as error:
            # The node's subtree or a child's ranges cannot be read: every address the node owns
            # is broken, the node's own frame included (what is inlined there is not known).
            self._broken_nodes[node] = self._span_error(error)
            pieces = sorted((low, high, node) for low, high in self._node_spans[node])
            found = self._levels[node] = ([low for low, _, _ in pieces], pieces)
            return found

    def _cut_level(self, node: int) -> tuple[list[int], list[tuple[int, int, int]]]:
        """:meth:`_level`'s work; raises on bad data."""
        children = self._children(node)
        if not children:  # most inlined calls: nothing below them
            pieces = sorted((low, high, node) for low, high in self._node_spans[node])
            found = self._levels[node] = ([low for low, _, _ in pieces], pieces)
            return found
        pieces = []
        by_child: dict[int, list[tuple[int, int]]] = {}
        for span_low, span_high in self._node_spans[node]:
            owners = [
                (max(child_low, span_low), min(child_high, span_high), order, child)
                for order, child in enumerate(children)
                for child_low, child_high in self._ranges(child)
                if child_low < span_high and child_high > span_low
            ]
            cursor = span_low
            for piece_low, piece_high, child in owned_pieces(owners) if owners else ():
                if cursor < piece_low:
                    pieces.append((cursor, piece_low, node))
                by_child.setdefault(child, []).append((piece_low, piece_high))
                pieces.append((piece_low, piece_high, child))
                cursor = piece_high
            if cursor < span_high:
                pieces.append((cursor, span_high, node))
        pieces.sort()
        self._node_spans.update(by_child)
        found = self._levels[node] = ([low for low, _, _ in pieces], pieces)
        return found

    def _children(self, node: int) -> list[int]:
        index = self._index
        if node in index.deferred or node in index.failed:
            index._expand(node)  # raises again for a node whose subtree could not be scanned
        children = []
        parents, node_next = index.node_parent, index.node_next
        position, end = index.node_first[node], index.node_end[node]
        while position < end:
            if parents[position] == node:
                children.append(position)
            position = node_next[position]
        return children

    def _ranges(self, node: int) -> list[tuple[int, int]]:
        index = self._index
        ranges = index.node_ranges[node]
        if ranges is None:
            ranges = index.node_ranges[node] = _node_ranges(index.unit, index.node_attrs[node])
        return ranges

    # Names ----------------------------------------------------------------------

    def _head(self, leaf: int, symbol: int) -> int:
        """The chain head of runs under inline node ``leaf`` (-1: none) covered by ``symbol`` (-1: none)."""
        key = (leaf, symbol)
        found = self._head_ids.get(key)
        if found is not None:
            return found
        chain = (*self._name(leaf), self._entry(leaf), self._outer_frames(leaf)) if leaf >= 0 else None
        head = chain_head(chain, self._symbols.symbols[symbol] if symbol >= 0 else None)
        found = self._head_ids[key] = len(self._heads)
        self._heads.append(head)
        return found

    def _name(self, node: int) -> Name:
        found = self._names.get(node)
        if found is None:
            found = self._names[node] = self._info.node_name(self._state, node)
        return found

    def _entry(self, node: int) -> int | None:
        return self._info.node_entry(self._state, node)

    def _outer_frames(self, node: int) -> tuple[Frame, ...]:
        """The frames that called inline node ``node``, innermost first (a walk up its parents).

        Remembered per node up to a depth of :data:`_MEMO_DEPTH`, so siblings share their callers'
        tuple; deeper chains (hostile nesting) are rebuilt from the deepest remembered one, so memory
        stays linear in the nodes.
        """
        found = self._outer.get(node)
        if found is not None:
            return found
        parents = self._index.node_parent
        path = []
        callee = node
        outer: tuple[Frame, ...] = ()
        while parents[callee] >= 0:
            path.append(callee)
            remembered = self._outer.get(parents[callee])
            if remembered is not None:
                outer = remembered
                break
            callee = parents[callee]
        frames = []
        for callee in path:
            frame = self._call_frames.get(callee)
            if frame is None:
                caller = parents[callee]
                name, start_line, start_file = self._name(caller)
                file, line, column, discriminator = self._info.call_site(self._state, callee)
                frame = self._call_frames[callee] = Frame(name, file, line, column, start_line, start_file,
                                                          self._entry(caller), discriminator)
            frames.append(frame)
        # Remember the shallow ones (the path's outer end), each a short tuple: linear in all.
        for position in range(max(len(path) - max(_MEMO_DEPTH - len(outer), 0), 0), len(path)):
            self._outer[path[position]] = (*frames[position:], *outer)
        outer = (*frames, *outer)
        return outer

"""An object file whose lookups are answered from its persistent index.

:func:`build_index_arrays` decodes everything an ELF file can answer (its DWARF
through :func:`symbolize.formats.dwarf.export.export_dwarf`, its symbol table) into flat
arrays; :class:`IndexedObject` answers ``frames_at`` from them by binary
search, exactly as the file itself would: the same unit, sequence, row and
inline-chain choices as ``DwarfInfo.frames_at``, the same symbol override and
fallback as ``ElfFile.frames_at``. Everything else (segments, build ID, debug
link) is the wrapped file's own.

Names are stored as the binary records them, each beside its full demangling:
frames keep the raw name, as every ObjectFile's do, and the demangled one goes
to the demangler's memo, so a warm lookup never runs the demangler.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from heapq import heappop, heappush
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from symbolize.demangle import demangle, remember
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import DebugHint, DebugId, DebugInfoSummary, DebugLink, Frame, Segment, Symbol
from symbolize.index.store import IndexDamagedError, IndexFile

if TYPE_CHECKING:
    from symbolize.formats.dwarf.export import ExportedUnit

# The arrays an index holds and what they mean; part of every index's key (symbolize/cache.py).
SCHEMA_VERSION = 4


class _Strings:
    """Interned strings; id 0 stands for None."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.blob = bytearray()
        self.offsets = array("Q", [0, 0])
        self.texts: list[str] = [""]  # by id; id 0 is None's

    def intern(self, text: str | None) -> int:
        if text is None:
            return 0
        found = self.ids.get(text)
        if found is None:
            self.blob += text.encode("utf-8", "surrogateescape")
            self.offsets.append(len(self.blob))
            found = self.ids[text] = len(self.offsets) - 2
            self.texts.append(text)
        return found


def build_index_arrays(elf: ElfFile) -> dict[str, array[int] | bytes]:
    """Every answer ``elf`` can give, as named flat arrays (see IndexedObject for their use)."""
    # Imported here: answering from an index never decodes DWARF.
    from symbolize.formats.dwarf.export import export_dwarf

    strings = _Strings()
    out: dict[str, array[int]] = {name: array(code) for name, code in _ARRAYS.items()}
    starts, ends, symbols = elf._symbol_index()
    out["sym_start"].extend(starts)
    out["sym_end"].extend(ends)
    for symbol in symbols:
        out["sym_name"].append(strings.intern(symbol.name))
        out["sym_file"].append(strings.intern(symbol.source_file))
    summary = elf.debug_info()
    dwarf = elf._dwarf_info()
    if dwarf is not None:
        exported = export_dwarf(dwarf)
        running = 0
        for low, high, unit_number in exported.unit_ranges:
            running = max(running, high)
            out["ur_low"].append(low)
            out["ur_high"].append(high)
            out["ur_unit"].append(unit_number)
            out["ur_max_high"].append(running)
        chains: dict[tuple[int, ...], int] = {}
        out["chain_begin"].append(0)
        for unit in exported.units:
            node_base = len(out["node_name"])
            row_base = len(out["row_addr"])
            out["unit_error"].append(strings.intern(unit.error))
            out["unit_has_lines"].append(1 if unit.has_lines else 0)
            out["unit_seq_begin"].append(len(out["seq_low"]))
            for low, high, first, end in unit.sequences:
                out["seq_low"].append(low)
                out["seq_high"].append(high)
                out["seq_first"].append(row_base + first)
                out["seq_end"].append(row_base + end)
            out["unit_seq_end"].append(len(out["seq_low"]))
            out["row_addr"].extend(unit.row_addresses)
            out["row_file"].extend(strings.intern(file) for file in unit.row_files)
            out["row_line"].extend(unit.row_lines)
            out["row_column"].extend(unit.row_columns)
            out["unit_iv_begin"].append(len(out["iv_low"]))
            for low, high, local_chain in _unit_intervals(unit):
                chain = tuple(node_base + node for node in local_chain)
                chain_id = chains.get(chain)
                if chain_id is None:
                    chain_id = chains[chain] = len(out["chain_begin"]) - 1
                    out["chain_nodes"].extend(chain)
                    out["chain_begin"].append(len(out["chain_nodes"]))
                out["iv_low"].append(low)
                out["iv_high"].append(high)
                out["iv_chain"].append(chain_id)
            out["unit_iv_end"].append(len(out["iv_low"]))
            for node in range(len(unit.node_parent)):
                out["node_name"].append(strings.intern(unit.node_name[node]))
                out["node_decl_line"].append(unit.node_decl_line[node])
                out["node_call_file"].append(strings.intern(unit.node_call_file[node]))
                out["node_call_line"].append(unit.node_call_line[node])
                out["node_call_column"].append(unit.node_call_column[node])
    _add_full_names(out, strings)
    out["facts"].extend(
        [
            int(summary.has_symbols),
            int(summary.has_dwarf),
            int(summary.has_line_info),
            int(summary.split_dwarf),
            int(dwarf is not None),
            *summary.dwarf_versions,
        ]
    )
    for name in out:
        out[name] = _narrowest(out[name])  # one array at a time: the wide copy goes as the narrow one comes
    arrays: dict[str, array[int] | bytes] = dict(out)
    arrays["str_blob"] = bytes(strings.blob)
    arrays["str_offsets"] = _narrowest(strings.offsets)
    return arrays


def _add_full_names(out: dict[str, array[int]], strings: _Strings) -> None:
    """``name_full[id]``: the string id of the full demangling of the name with string id ``id``
    (0 for strings that are not names), so that warm lookups need not demangle."""
    names = set(out["sym_name"]) | set(out["node_name"])
    names.discard(0)
    full_ids = {name: strings.intern(demangle(strings.texts[name], "full")) for name in sorted(names)}
    name_full = out["name_full"]
    name_full.extend([0] * len(strings.texts))
    for name, full in full_ids.items():
        name_full[name] = full


def _narrowest(values: array[int]) -> array[int]:
    """``values`` in the smallest unsigned type that holds them: a smaller file to map and check."""
    largest = max(values, default=0)
    for code, limit in (("B", 1 << 8), ("H", 1 << 16), ("I", 1 << 32)):
        if largest < limit:
            return values if values.typecode == code else array(code, values)
    return values


def _unit_intervals(unit: ExportedUnit) -> list[tuple[int, int, tuple[int, ...]]]:
    """Address intervals of a unit over which the inline chain does not change, with that chain.

    The same choices as UnitIndex.chain_at, made for whole intervals at once:
    among function ranges, the one with the greatest low that holds an address
    owns it; within a node, the first child in DIE order whose ranges hold an
    address owns it. Ownership is settled by a sweep over range endpoints, one
    tree level at a time, so the work grows with the number of ranges, not
    with ranges times the depth and breadth of the tree at every endpoint.
    """
    pieces: list[tuple[int, int, tuple[int, ...]]] = []
    # Function ranges: later entries (greater low) win where ranges overlap.
    owners = [(low, high, -position, node) for position, (low, high, node) in enumerate(unit.function_ranges)]
    for low, high, node in _owned_pieces(owners):
        _descend(unit, node, (node,), [(low, high)], pieces)
    pieces.sort()
    intervals: list[tuple[int, int, tuple[int, ...]]] = []
    for low, high, chain in pieces:
        if intervals and intervals[-1][1] == low and intervals[-1][2] == chain:
            intervals[-1] = (intervals[-1][0], high, chain)
        else:
            intervals.append((low, high, chain))
    return intervals


def _descend(
    unit: ExportedUnit,
    node: int,
    chain: tuple[int, ...],
    spans: list[tuple[int, int]],
    pieces: list[tuple[int, int, tuple[int, ...]]],
) -> None:
    """Split the ``spans`` that ``node`` owns among its children; what none holds keeps ``chain``."""
    children = []
    index, end = unit.node_first[node], unit.node_end[node]
    while index < end:
        if unit.node_parent[index] == node:
            children.append(index)
        index = unit.node_end[index]
    by_child: dict[int, list[tuple[int, int]]] = {}
    for span_low, span_high in spans:
        owners = [
            (max(low, span_low), min(high, span_high), order, child)
            for order, child in enumerate(children)
            for low, high in unit.node_ranges[child]
            if low < span_high and high > span_low
        ]
        cursor = span_low
        for low, high, child in _owned_pieces(owners):
            if cursor < low:
                pieces.append((cursor, low, chain))
            by_child.setdefault(child, []).append((low, high))
            cursor = high
        if cursor < span_high:
            pieces.append((cursor, span_high, chain))
    for child, owned in by_child.items():
        _descend(unit, child, (*chain, child), owned, pieces)


def _owned_pieces(owners: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int]]:
    """``(low, high, item)`` where, of the ``(low, high, rank, item)`` ranges holding an address,
    the one of least rank owns it; in address order, adjacent pieces of one item joined."""
    points = sorted({point for low, high, _, _ in owners for point in (low, high)})
    starts = sorted(owners)
    active: list[tuple[int, int, int]] = []  # heap of (rank, high, item)
    pieces: list[tuple[int, int, int]] = []
    next_start = 0
    for low, high in pairwise(points):
        while next_start < len(starts) and starts[next_start][0] <= low:
            _, start_high, rank, item = starts[next_start]
            heappush(active, (rank, start_high, item))
            next_start += 1
        while active and active[0][1] <= low:
            heappop(active)
        if not active:
            continue
        # A range that ended below ``low`` may still sit under the top; only the top matters.
        item = active[0][2]
        if pieces and pieces[-1][1] == low and pieces[-1][2] == item:
            pieces[-1] = (pieces[-1][0], high, item)
        else:
            pieces.append((low, high, item))
    return pieces


_ARRAYS = {
    "sym_start": "Q", "sym_end": "Q", "sym_name": "Q", "sym_file": "Q",
    "ur_low": "Q", "ur_high": "Q", "ur_unit": "Q", "ur_max_high": "Q",
    "unit_error": "Q", "unit_has_lines": "B", "unit_seq_begin": "Q", "unit_seq_end": "Q",
    "unit_iv_begin": "Q", "unit_iv_end": "Q",
    "seq_low": "Q", "seq_high": "Q", "seq_first": "Q", "seq_end": "Q",
    "row_addr": "Q", "row_file": "Q", "row_line": "Q", "row_column": "Q",
    "iv_low": "Q", "iv_high": "Q", "iv_chain": "Q", "chain_nodes": "Q", "chain_begin": "Q",
    "node_name": "Q", "node_decl_line": "Q", "node_call_file": "Q", "node_call_line": "Q", "node_call_column": "Q",
    "name_full": "Q",
    "facts": "Q",
}


# Arrays read on every lookup, which become lists when bound if they have up to _LIST_LIMIT
# items (IndexedObject._bind): about 1 ms each at most.
_LISTED_PREFIXES = ("sym_", "ur_", "unit_", "seq_")
_LIST_LIMIT = 1 << 16


class IndexedObject:
    """``file``'s ObjectFile interface, with ``frames_at`` answered from ``index``."""

    # The index's arrays, bound by _bind (see build_index_arrays for what each holds): mapped,
    # or lists when small.
    sym_start: Sequence[int]
    sym_end: Sequence[int]
    sym_name: Sequence[int]
    sym_file: Sequence[int]
    ur_low: Sequence[int]
    ur_high: Sequence[int]
    ur_unit: Sequence[int]
    ur_max_high: Sequence[int]
    unit_error: Sequence[int]
    unit_has_lines: Sequence[int]
    unit_seq_begin: Sequence[int]
    unit_seq_end: Sequence[int]
    unit_iv_begin: Sequence[int]
    unit_iv_end: Sequence[int]
    seq_low: Sequence[int]
    seq_high: Sequence[int]
    seq_first: Sequence[int]
    seq_end: Sequence[int]
    row_addr: Sequence[int]
    row_file: Sequence[int]
    row_line: Sequence[int]
    row_column: Sequence[int]
    iv_low: Sequence[int]
    iv_high: Sequence[int]
    iv_chain: Sequence[int]
    chain_nodes: Sequence[int]
    chain_begin: Sequence[int]
    node_name: Sequence[int]
    node_decl_line: Sequence[int]
    node_call_file: Sequence[int]
    node_call_line: Sequence[int]
    node_call_column: Sequence[int]
    name_full: Sequence[int]
    facts: Sequence[int]

    def __init__(self, file: ElfFile, index: IndexFile) -> None:
        self.file = file
        self.index = index
        self.path: Path = file.path
        self.format = file.format
        self.arch = file.arch
        self.debug_id: DebugId | None = file.debug_id
        self.position_dependent = file.position_dependent
        self.load_base = file.load_base
        self._blob = index.array("str_blob")
        self._offsets = index.array("str_offsets")
        self._strings: dict[int, str] = {}
        self._names: dict[int, str | None] = {}
        facts = index.array("facts")
        self._summary = DebugInfoSummary(
            has_symbols=bool(facts[0]),
            has_dwarf=bool(facts[1]),
            has_line_info=bool(facts[2]),
            has_inline_info=False,
            dwarf_versions=tuple(facts[5:]),
            split_dwarf=bool(facts[3]),
        )
        self._has_dwarf_index = bool(facts[4])
        self._damaged = False
        self._bound = False
        # Frames shared by every address under one inlined call (see _call_frame).
        self._call_frames: dict[int, Frame] = {}
        self._outermost_frames: dict[tuple[int, int], Frame] = {}

    # Delegated ----------------------------------------------------------------

    def segments(self) -> Sequence[Segment]:
        return self.file.segments()

    def symbols(self) -> Sequence[Symbol]:
        return self.file.symbols()

    def debug_link(self) -> DebugLink | None:
        return self.file.debug_link()

    def debug_hints(self) -> Sequence[DebugHint]:
        return self.file.debug_hints()

    def debug_info(self) -> DebugInfoSummary:
        return self._summary

    def close(self) -> None:
        self.index.close()
        self.file.close()

    # Lookups --------------------------------------------------------------------

    def _string(self, string_id: int) -> str | None:
        if string_id == 0:
            return None
        text = self._strings.get(string_id)
        if text is None:
            start, end = self._offsets[string_id], self._offsets[string_id + 1]
            text = self._strings[string_id] = bytes(self._blob[start:end]).decode("utf-8", "surrogateescape")
        return text

    def _name(self, string_id: int) -> str | None:
        """A function name; its full demangling, stored beside it, goes to the demangler's memo."""
        name = self._names.get(string_id)
        if name is None and string_id:
            name = self._names[string_id] = self._string(string_id)
            full = self.name_full[string_id]
            if name is not None and full:
                remember(name, self._string(full) or name)
        return name

    def frames_at(self, vaddr: int) -> list[Frame]:
        """As ElfFile.frames_at: DWARF frames with the symbol's name outermost, else the symbol.

        An array found damaged on first use ends the index's service: the file
        is deleted (a later run that finds it missing builds it again, as does
        ``symbolize index``) and the wrapped file answers from then on.
        """
        if self._damaged:
            return self.file.frames_at(vaddr)
        try:
            return self._indexed_frames_at(vaddr)
        except IndexDamagedError:
            self._damaged = True
            self.index.path.unlink(missing_ok=True)
            return self.file.frames_at(vaddr)

    def _bind(self) -> None:
        """Map every array once (checking its CRC32): lookups then read plain attributes.

        The symbol, unit and sequence arrays, when small, are copied into lists: a list is
        bisected and indexed about twice as fast as a mapped array, and every lookup bisects
        three of these.
        """
        for name in _ARRAYS:
            view = self.index.array(name)
            listed = name.startswith(_LISTED_PREFIXES) and len(view) <= _LIST_LIMIT
            setattr(self, name, view.tolist() if listed else view)
        self._bound = True

    def _indexed_frames_at(self, vaddr: int) -> list[Frame]:
        if not self._bound:
            self._bind()
        symbol = bisect_right(self.sym_start, vaddr) - 1
        if symbol >= 0 and vaddr >= self.sym_end[symbol]:
            symbol = -1
        frames = self._dwarf_frames(vaddr, symbol) if self._has_dwarf_index else None
        if frames:
            return frames
        if symbol < 0:
            return []
        name, file = self._symbol(symbol)
        return [Frame(function=name, file=file)]

    def _dwarf_frames(self, vaddr: int, symbol: int) -> list[Frame] | None:
        """As DwarfInfo.frames_at, with the covering symbol (-1: none) naming the outermost frame."""
        lows = self.ur_low
        position = bisect_right(lows, vaddr) - 1
        max_high = self.ur_max_high
        error: str | None = None
        while position >= 0 and max_high[position] > vaddr:
            low, high, unit = lows[position], self.ur_high[position], self.ur_unit[position]
            position -= 1
            if not low <= vaddr < high:
                continue
            frames = self._frames_in_unit(unit, vaddr, symbol)
            if frames:
                return frames
            error = error or self._string(self.unit_error[unit])
        if error is not None:
            raise MalformedInputError(error, self.path)
        return None

    def _frames_in_unit(self, unit: int, vaddr: int, symbol: int) -> list[Frame] | None:
        if self.unit_error[unit]:
            return None
        row = self._row_at(unit, vaddr) if self.unit_has_lines[unit] else None
        chain = self._chain_at(unit, vaddr)
        if not chain and row is None:
            return None
        file, line, column = row if row is not None else (None, 0, 0)
        if not chain:
            name, symbol_file = self._symbol(symbol)
            return [Frame(name, file or symbol_file, line, column)]
        innermost = chain[-1]
        name, start_line = self._name(self.node_name[innermost]), self.node_decl_line[innermost]
        if len(chain) == 1 and symbol >= 0:
            name, symbol_file = self._symbol(symbol)
            file = file or symbol_file
        frames = [Frame(name, file, line, column, start_line)]
        call_frames = self._call_frames
        for depth in range(len(chain) - 1, 1, -1):
            callee = chain[depth]
            frame = call_frames.get(callee)
            if frame is None:
                frame = call_frames[callee] = self._call_frame(chain[depth - 1], callee)
            frames.append(frame)
        if len(chain) > 1:
            key = (chain[1], symbol)
            frame = self._outermost_frames.get(key)
            if frame is None:
                frame = self._outermost_frames[key] = self._outermost_frame(chain[0], chain[1], symbol)
            frames.append(frame)
        return frames

    def _call_frame(self, caller: int, callee: int) -> Frame:
        """The frame of ``caller`` at its call site of the inlined ``callee``.

        A chain's caller of a node is always the node's parent in the DIE tree,
        so the frame depends on the callee alone: one Frame serves every address
        under that call, and the layers above can memoize on it.
        """
        return Frame(
            self._name(self.node_name[caller]),
            self._string(self.node_call_file[callee]),
            self.node_call_line[callee],
            self.node_call_column[callee],
            self.node_decl_line[caller],
        )

    def _outermost_frame(self, caller: int, callee: int, symbol: int) -> Frame:
        """The outermost call frame, named by the covering symbol when there is one."""
        frame = self._call_frame(caller, callee)
        if symbol < 0:
            return frame
        name, symbol_file = self._symbol(symbol)
        return Frame(name, frame.file or symbol_file, frame.line, frame.column, frame.start_line)

    def _symbol(self, symbol: int) -> tuple[str | None, str | None]:
        if symbol < 0:
            return None, None
        return self._name(self.sym_name[symbol]), self._string(self.sym_file[symbol])

    def _row_at(self, unit: int, vaddr: int) -> tuple[str | None, int, int] | None:
        """As LineTable.lookup."""
        begin = self.unit_seq_begin[unit]
        seq_lows = self.seq_low
        position = bisect_right(seq_lows, vaddr, begin, self.unit_seq_end[unit]) - 1
        while position >= begin:
            low = seq_lows[position]
            if low <= vaddr < self.seq_high[position]:
                row = bisect_right(self.row_addr, vaddr, self.seq_first[position], self.seq_end[position]) - 1
                return self._string(self.row_file[row]), self.row_line[row], self.row_column[row]
            if low < vaddr - (1 << 24):
                break
            position -= 1
        return None

    def _chain_at(self, unit: int, vaddr: int) -> Sequence[int]:
        """The inline chain at vaddr, outermost first: one interval, found by bisection."""
        begin = self.unit_iv_begin[unit]
        position = bisect_right(self.iv_low, vaddr, begin, self.unit_iv_end[unit]) - 1
        if position < begin or vaddr >= self.iv_high[position]:
            return ()
        chain = self.iv_chain[position]
        return self.chain_nodes[self.chain_begin[chain] : self.chain_begin[chain + 1]]

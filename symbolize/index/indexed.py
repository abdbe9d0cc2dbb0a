"""An object file whose lookups are answered from its persistent index.

:func:`build_index_arrays` decodes everything an ELF file can answer (its DWARF
through :func:`formats.dwarf.export.export_dwarf`, its symbol table) into flat
arrays; :class:`IndexedObject` answers ``frames_at`` from them by binary
search, exactly as the file itself would: the same unit, sequence, row and
inline-chain choices as ``DwarfInfo.frames_at``, the same symbol override and
fallback as ``ElfFile.frames_at``. Everything else (segments, build ID, debug
link) is the wrapped file's own.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path

from formats.dwarf.export import export_dwarf
from formats.elf import ElfFile
from formats.errors import MalformedInputError
from formats.types import DebugId, DebugInfoSummary, DebugLink, Frame, Segment, Symbol
from symbolize.index.store import IndexDamagedError, IndexFile


class _Strings:
    """Interned strings; id 0 stands for None."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.blob = bytearray()
        self.offsets = array("Q", [0, 0])

    def intern(self, text: str | None) -> int:
        if text is None:
            return 0
        found = self.ids.get(text)
        if found is None:
            self.blob += text.encode("utf-8", "surrogateescape")
            self.offsets.append(len(self.blob))
            found = self.ids[text] = len(self.offsets) - 2
        return found


def build_index_arrays(elf: ElfFile) -> dict[str, array[int] | bytes]:
    """Every answer ``elf`` can give, as named flat arrays (see IndexedObject for their use)."""
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
        for unit in exported.units:
            node_base = len(out["node_parent"])
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
            out["unit_fn_begin"].append(len(out["fn_low"]))
            running = 0
            for low, high, node in unit.function_ranges:
                running = max(running, high)
                out["fn_low"].append(low)
                out["fn_high"].append(high)
                out["fn_node"].append(node_base + node)
                out["fn_max_high"].append(running)
            out["unit_fn_end"].append(len(out["fn_low"]))
            for node, parent in enumerate(unit.node_parent):
                out["node_parent"].append(node_base + parent if parent >= 0 else -1)
                out["node_first"].append(node_base + unit.node_first[node])
                out["node_end"].append(node_base + unit.node_end[node])
                out["node_name"].append(strings.intern(unit.node_name[node]))
                out["node_decl_line"].append(unit.node_decl_line[node])
                out["node_call_file"].append(strings.intern(unit.node_call_file[node]))
                out["node_call_line"].append(unit.node_call_line[node])
                out["node_call_column"].append(unit.node_call_column[node])
                out["node_range_begin"].append(len(out["range_low"]))
                for low, high in unit.node_ranges[node]:
                    out["range_low"].append(low)
                    out["range_high"].append(high)
                out["node_range_end"].append(len(out["range_low"]))
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
    arrays: dict[str, array[int] | bytes] = dict(out)
    arrays["str_blob"] = bytes(strings.blob)
    arrays["str_offsets"] = strings.offsets
    return arrays


_ARRAYS = {
    "sym_start": "Q", "sym_end": "Q", "sym_name": "Q", "sym_file": "Q",
    "ur_low": "Q", "ur_high": "Q", "ur_unit": "Q", "ur_max_high": "Q",
    "unit_error": "Q", "unit_has_lines": "B", "unit_seq_begin": "Q", "unit_seq_end": "Q",
    "unit_fn_begin": "Q", "unit_fn_end": "Q",
    "seq_low": "Q", "seq_high": "Q", "seq_first": "Q", "seq_end": "Q",
    "row_addr": "Q", "row_file": "Q", "row_line": "Q", "row_column": "Q",
    "fn_low": "Q", "fn_high": "Q", "fn_node": "Q", "fn_max_high": "Q",
    "node_parent": "q", "node_first": "Q", "node_end": "Q", "node_name": "Q", "node_decl_line": "Q",
    "node_call_file": "Q", "node_call_line": "Q", "node_call_column": "Q",
    "node_range_begin": "Q", "node_range_end": "Q", "range_low": "Q", "range_high": "Q",
    "facts": "Q",
}


class IndexedObject:
    """``file``'s ObjectFile interface, with ``frames_at`` answered from ``index``."""

    def __init__(self, file: ElfFile, index: IndexFile) -> None:
        self.file = file
        self.index = index
        self.path: Path = file.path
        self.format = file.format
        self.arch = file.arch
        self.debug_id: DebugId | None = file.debug_id
        self.fixed_load_address = file.fixed_load_address
        a = index.array
        self._a = a
        self._blob = a("str_blob")
        self._offsets = a("str_offsets")
        self._strings: dict[int, str] = {}
        facts = a("facts")
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

    # Delegated ----------------------------------------------------------------

    def segments(self) -> Sequence[Segment]:
        return self.file.segments()

    def symbols(self) -> Sequence[Symbol]:
        return self.file.symbols()

    def debug_link(self) -> DebugLink | None:
        return self.file.debug_link()

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

    def frames_at(self, vaddr: int) -> list[Frame]:
        """As ElfFile.frames_at: DWARF frames with the symbol's name outermost, else the symbol.

        An array found damaged on first use ends the index's service: the file
        is deleted (rebuilt by the next ``symbolize index``) and the wrapped
        file answers from then on.
        """
        if self._damaged:
            return self.file.frames_at(vaddr)
        try:
            return self._indexed_frames_at(vaddr)
        except IndexDamagedError:
            self._damaged = True
            self.index.path.unlink(missing_ok=True)
            return self.file.frames_at(vaddr)

    def _indexed_frames_at(self, vaddr: int) -> list[Frame]:
        frames = self._dwarf_frames(vaddr) if self._has_dwarf_index else None
        symbol = self._symbol_at(vaddr)
        if not frames:
            return [Frame(function=symbol[0], file=symbol[1])] if symbol is not None else []
        if symbol is not None:
            outer = frames[-1]
            frames[-1] = Frame(symbol[0], outer.file or symbol[1], outer.line, outer.column, outer.start_line)
        return frames

    def _symbol_at(self, vaddr: int) -> tuple[str | None, str | None] | None:
        a = self._a
        starts = a("sym_start")
        i = bisect_right(starts, vaddr) - 1
        if i >= 0 and vaddr < a("sym_end")[i]:
            return self._string(a("sym_name")[i]), self._string(a("sym_file")[i])
        return None

    def _dwarf_frames(self, vaddr: int) -> list[Frame] | None:
        """As DwarfInfo.frames_at."""
        a = self._a
        lows = a("ur_low")
        position = bisect_right(lows, vaddr) - 1
        max_high = a("ur_max_high")
        error: str | None = None
        while position >= 0 and max_high[position] > vaddr:
            low, high, unit = lows[position], a("ur_high")[position], a("ur_unit")[position]
            position -= 1
            if not low <= vaddr < high:
                continue
            frames = self._frames_in_unit(unit, vaddr)
            if frames:
                return frames
            error = error or self._string(a("unit_error")[unit])
        if error is not None:
            raise MalformedInputError(error, self.path)
        return None

    def _frames_in_unit(self, unit: int, vaddr: int) -> list[Frame] | None:
        a = self._a
        if a("unit_error")[unit]:
            return None
        row = self._row_at(unit, vaddr) if a("unit_has_lines")[unit] else None
        chain = self._chain_at(unit, vaddr)
        if not chain and row is None:
            return None
        file, line, column = row if row is not None else (None, 0, 0)
        if not chain:
            return [Frame(None, file, line, column)]
        frames = []
        names, decls = a("node_name"), a("node_decl_line")
        for depth in range(len(chain) - 1, -1, -1):
            node = chain[depth]
            frames.append(Frame(self._string(names[node]), file, line, column, decls[node]))
            if depth:
                file = self._string(a("node_call_file")[node])
                line, column = a("node_call_line")[node], a("node_call_column")[node]
        return frames

    def _row_at(self, unit: int, vaddr: int) -> tuple[str | None, int, int] | None:
        """As LineTable.lookup."""
        a = self._a
        begin = a("unit_seq_begin")[unit]
        seq_lows = a("seq_low")
        position = bisect_right(seq_lows, vaddr, begin, a("unit_seq_end")[unit]) - 1
        while position >= begin:
            low = seq_lows[position]
            if low <= vaddr < a("seq_high")[position]:
                row = bisect_right(a("row_addr"), vaddr, a("seq_first")[position], a("seq_end")[position]) - 1
                return self._string(a("row_file")[row]), a("row_line")[row], a("row_column")[row]
            if low < vaddr - (1 << 24):
                break
            position -= 1
        return None

    def _chain_at(self, unit: int, vaddr: int) -> list[int]:
        """As UnitIndex.chain_at."""
        a = self._a
        begin = a("unit_fn_begin")[unit]
        fn_lows = a("fn_low")
        position = bisect_right(fn_lows, vaddr, begin, a("unit_fn_end")[unit]) - 1
        max_high = a("fn_max_high")
        node = -1
        while position >= begin and max_high[position] > vaddr:
            if fn_lows[position] <= vaddr < a("fn_high")[position]:
                node = a("fn_node")[position]
                break
            position -= 1
        if node < 0:
            return []
        chain = [node]
        parents, ends = a("node_parent"), a("node_end")
        range_begin, range_end = a("node_range_begin"), a("node_range_end")
        range_lows, range_highs = a("range_low"), a("range_high")
        index, end = a("node_first")[node], ends[node]
        while index < end:
            if parents[index] == chain[-1] and any(
                range_lows[r] <= vaddr < range_highs[r] for r in range(range_begin[index], range_end[index])
            ):
                chain.append(index)
                index += 1
            else:
                index = ends[index]
        return chain

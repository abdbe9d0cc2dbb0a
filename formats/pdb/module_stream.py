"""One module's stream decoded: its procedures, its C13 lines, and lookups inside it.

From LLVM's "The Module Information Stream" and "CodeView Symbol Records" (the layouts read in
``codeview.py``): the stream holds the module's symbol records (``S_GPROC32``/``S_LPROC32`` and
the ``_ID`` and DPC forms, each with its inline sites: ``inline.py``), then C11 lines (unused)
and the C13 subsections (``DEBUG_S_LINES``, ``DEBUG_S_FILECHKSMS``, ``DEBUG_S_INLINEELINES``).

:class:`PythonModule` is the reference decoder; :class:`CompiledModule` wraps the compiled twin
(native/src/pdb_module.rs), which gives the same answers (tests/test_pdb_native.py).
Procedures and lines are found as llvm-symbolizer 14 finds them (see ``pdb.py``).
"""

import struct
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any, NamedTuple

from symbolize.formats.native import kernels
from symbolize.formats.pdb import codeview
from symbolize.formats.pdb.codeview import CodeViewError
from symbolize.formats.pdb.inline import InlineSite, SiteScope, site_chain, sites_in
from symbolize.formats.pdb.streams import ModuleInfo

# Where a module's code lies: the vaddr of ``section:offset`` (1-based section), None when unknown.
VaddrOf = Callable[[int, int], "int | None"]
# A source file's name by its offset in the PDB's /names string table, None when unknown.
FileName = Callable[[int], "str | None"]


class Procedure(NamedTuple):
    """A top-level procedure; its inline sites are decoded on the first lookup inside it."""

    low: int
    high: int
    name: str
    body_start: int  # stream offset of the first record after the procedure's own
    end_offset: int  # its End field: the offset of its closing record


class LineEntry(NamedTuple):
    vaddr: int
    line: int
    column: int
    file_id: int
    terminal: bool


class LineTable(NamedTuple):
    """A module's flattened line entries as columns (tens of thousands per module: no tuple each)."""

    vaddrs: list[int]
    lines: list[int]
    columns: list[int]
    file_ids: list[int]
    terminal: set[int]  # positions of the entries that end a file block

    def entry(self, position: int) -> LineEntry:
        return LineEntry(
            self.vaddrs[position],
            self.lines[position],
            self.columns[position],
            self.file_ids[position],
            position in self.terminal,
        )


class DecodedModule(NamedTuple):
    procedures: list[Procedure]  # by low
    procedure_lows: list[int]
    procedure_reach: list[int]  # running maximum of the procedures' highs, for bisecting overlaps
    lines: LineTable
    files: dict[int, str | None]  # checksum entry offset -> file name
    inlinee_lines: dict[int, tuple[int, int]]
    stream: bytes
    symbols_end: int
    sites: dict[int, list[InlineSite]]  # procedure position -> its inline-site tree, once decoded


# What a module's lookup gives (see PythonModule.locate): the position of the procedure holding
# the vaddr, (line, column, file ID) of the line row holding it, (inlinee, file ID, line) of each
# inline site holding it, innermost first.
Located = tuple[int | None, tuple[int, int, int] | None, Sequence[tuple[int, int, int]]]


class PythonModule:
    """A module stream decoded by the Python reader: the reference for :class:`CompiledModule`."""

    def __init__(self, decoded: DecodedModule, number: int) -> None:
        self.decoded = decoded
        self.files = decoded.files
        self.number = number  # the DBI module's, which cross-module inlinee IDs are read against

    def procedure(self, position: int) -> tuple[int, str]:
        procedure = self.decoded.procedures[position]
        return procedure.low, procedure.name

    def locate(self, vaddr: int) -> Located:
        decoded = self.decoded
        position = procedure_at(decoded, vaddr)
        entry = line_at(decoded.lines, vaddr)
        line = (entry.line, entry.column, entry.file_id) if entry is not None else None
        inlined: list[tuple[int, int, int]] = []
        if position is not None:
            for site in reversed(site_chain(sites_of(decoded, position), vaddr)):  # innermost first
                if site.inlinee not in decoded.inlinee_lines:
                    break
                row = next(row for row in site.rows if row.low <= vaddr < row.high)
                inlined.append((site.inlinee, row.file_id, row.line))
        return position, line, inlined

    def locate_many(self, vaddrs: list[int]) -> list[Located]:
        return [self.locate(vaddr) for vaddr in vaddrs]

    def cut_points(self) -> list[int]:
        """Where answers may change: procedure bounds, inline site rows' bounds, line entries (and
        one past an address two entries share: the first answers at it, the last after it)."""
        decoded = self.decoded
        cuts: list[int] = []
        for position, procedure in enumerate(decoded.procedures):
            cuts += (procedure.low, procedure.high)
            pending = list(sites_of(decoded, position))
            while pending:
                site = pending.pop()
                pending.extend(site.children)
                for row in site.rows:
                    cuts += (row.low, row.high)
        line_vaddrs = decoded.lines.vaddrs
        cuts += line_vaddrs
        cuts += (a + 1 for a, b in pairwise(line_vaddrs) if a == b)
        return cuts


class CompiledModule:
    """A module stream decoded by the compiled twin (native/src/pdb_module.rs): the same answers as
    :class:`PythonModule`, which tests/test_pdb_native.py checks."""

    def __init__(self, compiled: Any, files: dict[int, str | None], number: int) -> None:
        self._compiled = compiled
        self.files = files
        self.number = number
        self._procedures: dict[int, tuple[int, str]] = {}
        self.locate = compiled.locate
        self.locate_many = compiled.locate_many
        self.cut_points = compiled.cut_points

    def procedure(self, position: int) -> tuple[int, str]:
        found = self._procedures.get(position)
        if found is None:
            low, _high, name = self._compiled.procedure(position)
            found = self._procedures[position] = (low, name.decode("utf-8", "replace"))
        return found


ModuleAnswers = PythonModule | CompiledModule


def decode_module_stream(stream: bytes, module: ModuleInfo, vaddr_of: VaddrOf, file_name: FileName) -> DecodedModule:
    """``stream`` of ``module`` decoded by the Python reader; raises CodeViewError (or struct.error)
    when it does not decode."""
    symbols_end = module.symbols_size
    c13_start = symbols_end + module.c11_size
    c13_end = c13_start + module.c13_size
    if c13_end > len(stream) or (symbols_end < 4 and module.symbols_size):
        raise CodeViewError(
            f"symbols, C11 and C13 sizes ({module.symbols_size}, {module.c11_size}, {module.c13_size}) "
            f"exceed the {len(stream)}-byte stream",
            0,
        )
    files: dict[int, str | None] = {}
    inlinee_lines: dict[int, tuple[int, int]] = {}
    fragments: list[codeview.LineFragment] = []
    for kind, data, offset in codeview.iter_subsections(stream, c13_start, c13_end):
        if kind == codeview.DEBUG_S_LINES:
            fragments.append(codeview.parse_lines(data, offset))
        elif kind == codeview.DEBUG_S_FILECHKSMS:
            for entry, name_offset in codeview.parse_checksums(data).items():
                files[entry] = file_name(name_offset)
        elif kind == codeview.DEBUG_S_INLINEELINES:
            for inlinee, place in codeview.parse_inlinee_lines(data, offset).items():
                inlinee_lines.setdefault(inlinee, place)
    procedures = _procedures(stream, vaddr_of, 4 if symbols_end >= 4 else 0, symbols_end)
    reach: list[int] = []
    for procedure in procedures:
        reach.append(max(reach[-1], procedure.high) if reach else procedure.high)
    return DecodedModule(
        procedures,
        [procedure.low for procedure in procedures],
        reach,
        _line_table(fragments, vaddr_of),
        files,
        inlinee_lines,
        stream,
        symbols_end,
        {},
    )


def compile_module(
    stream: bytes | memoryview, module: ModuleInfo, section_rvas: list[int], image_base: int, file_name: FileName
) -> CompiledModule:
    """``stream`` of ``module`` decoded by the compiled twin (only where the kernels are built)."""
    assert kernels is not None
    compiled = kernels.decode_pdb_module(
        stream,
        module.symbols_size,
        module.c11_size,
        module.c13_size,
        section_rvas,
        image_base,
    )
    files: dict[int, str | None] = {}
    for entry, name_offset in compiled.checksums():
        files[entry] = file_name(name_offset)
    return CompiledModule(compiled, files, module.number)


def _procedures(stream: bytes, vaddr_of: VaddrOf, start: int, end: int) -> list[Procedure]:
    """The top-level procedures (vaddrs resolved), stepping over each one's body by its End."""
    procedures = []
    position = start
    while (record := codeview.next_symbol_record_of(stream, position, end, codeview.PROC_KINDS)) is not None:
        position = body_start = record.offset + 4 + len(record.body)
        procedure = codeview.parse_procedure(record)
        low = vaddr_of(procedure.section, procedure.offset)
        if low is not None:
            high = low + procedure.size
            procedures.append(Procedure(low, high, procedure.name, body_start, procedure.end_offset))
        # Resume after the closing record. An End that does not point forward at one (hostile, or
        # a cycle) leaves the procedure empty and the scan goes on from the record after it.
        closing = codeview.after_closing_record(stream, procedure.end_offset, body_start, end, codeview.PROC_END_KINDS)
        position = closing if closing is not None else position
    procedures.sort(key=lambda procedure: procedure.low)
    return procedures


def _line_table(fragments: list[codeview.LineFragment], vaddr_of: VaddrOf) -> LineTable:
    """Per file block: an entry at its fragment's start, its rows, a terminal entry at the fragment's
    end; blocks ordered by their first address, as llvm-symbolizer 14 flattens a module's lines."""
    groups: list[tuple[int, int, codeview.LineBlock]] = []  # (start vaddr, end vaddr, block)
    for fragment in fragments:
        base = vaddr_of(fragment.section, fragment.offset)
        if base is None:
            continue
        groups += [(base, base + fragment.code_size, block) for block in fragment.blocks if block.rows[0]]
    groups.sort(key=lambda group: group[0])
    table = LineTable([], [], [], [], set())
    for base, end, block in groups:
        # A file block's code is taken to start at its fragment's start, at its first row's
        # line (llvm-symbolizer 14 reads it so: code before the first row is not unnamed).
        offsets, lines, columns = block.rows
        table.vaddrs.append(base)
        table.vaddrs.extend([base + offset for offset in offsets])
        table.vaddrs.append(end)
        table.lines.extend((lines[0], *lines, lines[-1]))
        table.columns.extend((columns[0], *columns, columns[-1]))
        table.file_ids.extend([block.file_id] * (len(offsets) + 2))
        table.terminal.add(len(table.vaddrs) - 1)
    return table


def procedure_at(decoded: DecodedModule, vaddr: int) -> int | None:
    """The position of the first procedure (by low) holding ``vaddr``, as llvm's search finds it."""
    stop = bisect_right(decoded.procedure_lows, vaddr)
    position = bisect_right(decoded.procedure_reach, vaddr, 0, stop)  # the first that may reach past it
    for candidate in range(position, stop):
        if vaddr < decoded.procedures[candidate].high:
            return candidate
    return None


def sites_of(decoded: DecodedModule, position: int) -> list[InlineSite]:
    """The inline sites directly in procedure ``position``, found on first use. A body whose records
    do not decode leaves the procedure without inlined frames (its name and lines still answer)."""
    sites = decoded.sites.get(position)
    if sites is None:
        procedure = decoded.procedures[position]
        scope = SiteScope(decoded.stream, procedure.low, decoded.inlinee_lines)
        end = min(procedure.end_offset, decoded.symbols_end)
        try:
            sites = sites_in(scope, procedure.body_start, end, 0)
        except (CodeViewError, struct.error):
            sites = []
        decoded.sites[position] = sites
    return sites


def line_at(table: LineTable, vaddr: int) -> LineEntry | None:
    """The row holding ``vaddr`` as llvm-symbolizer finds it in the flattened module table."""
    vaddrs, terminal = table.vaddrs, table.terminal
    low, high = 0, len(vaddrs)
    while low < high:  # first entry past vaddr, or at vaddr and not terminal
        middle = (low + high) // 2
        if vaddrs[middle] < vaddr or (vaddrs[middle] == vaddr and middle in terminal):
            low = middle + 1
        else:
            high = middle
    position = low
    if position == len(vaddrs) or vaddrs[position] > vaddr:
        if position == 0 or position - 1 in terminal:
            return None
        position -= 1
    while position < len(vaddrs) and position in terminal:
        position += 1
    return table.entry(position) if position < len(vaddrs) else None

"""A PDB as a symbol source: frames, inlined ones included, at the vaddrs of the image it describes.

Hand-written, because no Python library reads what naming addresses needs: the C13 line
subsections and the ``S_INLINESITE`` annotations with their inlinee lines and IPI names.
The layouts come from LLVM's "The PDB File Format" pages (see the sibling modules).

Regions are the modules' section contributions (DBI); a module's symbols and lines are decoded
on the first lookup inside it. A fallback region per image section answers the rest from the
publics (``S_PUB32``), as llvm-symbolizer does for addresses in no module.

Naming follows llvm-symbolizer 14 reading a PDB natively:

- the outermost frame is the procedure (``S_GPROC32``/``S_LPROC32``, and the ``_ID`` and DPC
  forms, which llvm does not look at but which mean the same) holding the address; it takes
  the name of the last public at or before the address when that public starts where the
  procedure starts (the public holds the linkage, MSVC-decorated name), else the procedure's
  own name; outside any procedure it takes that public's name, whatever its distance;
- identical-code folding puts several publics at one address: the last of them in the
  publics address map wins, which is the entry llvm-symbolizer's binary search lands on;
- the outermost line is the module's C13 row holding the address (rows of one file block run
  until the next row or the end of the fragment's code);
- inlined frames come from the ``S_INLINESITE`` chain holding the address, innermost first,
  named from the IPI stream (``LF_FUNC_ID`` scope + name, ``LF_MFUNC_ID`` class + name), with
  the line of the annotation row holding the address and column 0; the chain stops outward at
  the first site whose inlinee has no ``DEBUG_S_INLINEELINES`` entry, as llvm's does;
- in a 32-bit PDB, public names lose their C decorations (``_f``, ``_f@8``, ``@f@8``,
  ``f@@8``), which llvm-symbolizer drops when it demangles.

One deliberate difference: llvm-symbolizer 14 reads an inlined frame's line as the line that
becomes current at the first annotation at or past the address, one row late for an address
inside a row (fixed in later LLVM); we report the row that holds the address.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple

from symbolize.formats.answers import AnswerLookup, LazyRuns
from symbolize.formats.errors import (
    MalformedInputError,
    MissingDebugInfoError,
    SymbolizeError,
    UnsupportedFormatError,
)
from symbolize.formats.native import kernels
from symbolize.formats.pdb import codeview
from symbolize.formats.pdb.codeview import CodeViewError, InlineRow
from symbolize.formats.pdb.msf import MsfFile
from symbolize.formats.pdb.streams import (
    DBI_STREAM,
    FEATURE_MINIMAL_DEBUG_INFO,
    IPI_STREAM,
    PDB_INFO_STREAM,
    TPI_STREAM,
    ImageSection,
    ModuleInfo,
    StringTable,
    TypeRecords,
    inlinee_name,
    parse_dbi_stream,
    parse_info_stream,
    parse_public_address_map,
    parse_section_headers,
    public_records,
)
from symbolize.formats.types import (
    AnswerRegion,
    AnswerRun,
    DebugHint,
    DebugId,
    DebugIdKind,
    DebugInfoSummary,
    Frame,
    Image,
    ReaderDefaults,
    Segment,
    Symbol,
)

_MACHINE_I386 = 0x14C
_DBI_FLAG_STRIPPED = 0x2
_NO_STREAM = 0xFFFF
PUBLICS_KEY = -1
# Bounds on what one hostile module can make us build.
_MAX_INLINE_DEPTH = 64


class _Public(NamedTuple):
    section: int
    offset: int
    name: str


class _SiteScope(NamedTuple):
    """What the inline sites of one procedure are read against."""

    stream: bytes
    base: int  # the procedure's vaddr, which annotation offsets count from
    inlinee_lines: dict[int, tuple[int, int]]


class _Site:
    """An inline site: its inlinee, and, decoded on first use (a lookup decodes only the sites it
    passes), its rows (vaddrs) from its annotations and the sites nested in its body."""

    __slots__ = ("_body", "_children", "_extent", "_file_id", "_rows", "_scope", "annotations", "first_line", "inlinee")

    def __init__(self, scope: _SiteScope, inlinee: int, annotations: bytes, body: tuple[int, int], level: int) -> None:
        self._scope = scope
        self.inlinee = inlinee
        self.annotations = annotations
        self._file_id, self.first_line = scope.inlinee_lines.get(inlinee, (0, 0))
        self._body = (body[0], body[1], level)
        self._rows: list[InlineRow] | None = None
        self._extent = (0, 0)  # [lowest low, highest high) of the rows, once decoded
        self._children: list[_Site] | None = None

    @property
    def rows(self) -> list[InlineRow]:
        if self._rows is None:
            try:
                rows = codeview.annotation_rows(self.annotations, self.first_line, self._file_id)
            except CodeViewError:
                rows = []  # annotations that do not decode: the site covers nothing, the rest answers
            base = self._scope.base
            self._rows = [InlineRow(base + row.low, base + row.high, row.line, row.file_id) for row in rows]
            if self._rows:
                self._extent = (min(row.low for row in self._rows), max(row.high for row in self._rows))
        return self._rows

    @property
    def children(self) -> list[_Site]:
        if self._children is None:
            start, end, level = self._body
            try:
                self._children = _sites_in(self._scope, start, end, level + 1)
            except (CodeViewError, struct.error):
                self._children = []  # a body that does not decode: the site has no nested sites
        return self._children

    def holds(self, vaddr: int) -> bool:
        rows = self.rows
        low, high = self._extent
        return low <= vaddr < high and any(row.low <= vaddr < row.high for row in rows)


class _Procedure(NamedTuple):
    """A top-level procedure; its inline sites are decoded on the first lookup inside it."""

    low: int
    high: int
    name: str
    body_start: int  # stream offset of the first record after the procedure's own
    end_offset: int  # its End field: the offset of its closing record


class _LineEntry(NamedTuple):
    vaddr: int
    line: int
    column: int
    file_id: int
    terminal: bool


class _LineTable(NamedTuple):
    """A module's flattened line entries as columns (tens of thousands per module: no tuple each)."""

    vaddrs: list[int]
    lines: list[int]
    columns: list[int]
    file_ids: list[int]
    terminal: set[int]  # positions of the entries that end a file block

    def entry(self, position: int) -> _LineEntry:
        return _LineEntry(
            self.vaddrs[position],
            self.lines[position],
            self.columns[position],
            self.file_ids[position],
            position in self.terminal,
        )


class _DecodedModule(NamedTuple):
    procedures: list[_Procedure]  # by low
    procedure_lows: list[int]
    procedure_reach: list[int]  # running maximum of the procedures' highs, for bisecting overlaps
    lines: _LineTable
    files: dict[int, str | None]  # checksum entry offset -> file name
    inlinee_lines: dict[int, tuple[int, int]]
    stream: bytes
    symbols_end: int
    sites: dict[int, list[_Site]]  # procedure position -> its inline-site tree, once decoded


# What a module's lookup gives (see _PythonModule.locate): the position of the procedure holding
# the vaddr, (line, column, file ID) of the line row holding it, (inlinee, file ID, line) of each
# inline site holding it, innermost first.
_Located = tuple[int | None, tuple[int, int, int] | None, Sequence[tuple[int, int, int]]]


class _PythonModule:
    """A module stream decoded by the Python reader: the reference for :class:`_CompiledModule`."""

    def __init__(self, decoded: _DecodedModule, number: int) -> None:
        self.decoded = decoded
        self.files = decoded.files
        self.number = number  # the DBI module's, which cross-module inlinee IDs are read against

    def procedure(self, position: int) -> tuple[int, str]:
        procedure = self.decoded.procedures[position]
        return procedure.low, procedure.name

    def locate(self, vaddr: int) -> _Located:
        decoded = self.decoded
        position = _procedure_at(decoded, vaddr)
        entry = _line_at(decoded.lines, vaddr)
        line = (entry.line, entry.column, entry.file_id) if entry is not None else None
        inlined: list[tuple[int, int, int]] = []
        if position is not None:
            for site in reversed(_site_chain(_sites_of(decoded, position), vaddr)):  # innermost first
                if site.inlinee not in decoded.inlinee_lines:
                    break
                row = next(row for row in site.rows if row.low <= vaddr < row.high)
                inlined.append((site.inlinee, row.file_id, row.line))
        return position, line, inlined

    def locate_many(self, vaddrs: list[int]) -> list[_Located]:
        return [self.locate(vaddr) for vaddr in vaddrs]

    def cut_points(self) -> list[int]:
        """Where answers may change: procedure bounds, inline site rows' bounds, line entries (and
        one past an address two entries share: the first answers at it, the last after it)."""
        decoded = self.decoded
        cuts: list[int] = []
        for position, procedure in enumerate(decoded.procedures):
            cuts += (procedure.low, procedure.high)
            pending = list(_sites_of(decoded, position))
            while pending:
                site = pending.pop()
                pending.extend(site.children)
                for row in site.rows:
                    cuts += (row.low, row.high)
        line_vaddrs = decoded.lines.vaddrs
        cuts += line_vaddrs
        cuts += (a + 1 for a, b in pairwise(line_vaddrs) if a == b)
        return cuts


class _CompiledModule:
    """A module stream decoded by the compiled twin (native/src/pdb_module.rs): the same answers as
    :class:`_PythonModule`, which tests/test_pdb_native.py checks."""

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


_ModuleAnswers = _PythonModule | _CompiledModule


class PdbFile(ReaderDefaults):
    """A PDB's answers at ``image_base + RVA`` vaddrs (the image's ``ImageBase``, given by the caller).

    Raises UnsupportedFormatError for an MSFZ, PDB 2.0 or /DEBUG:FASTLINK PDB,
    MalformedInputError when its container or fixed streams are broken.
    """

    format = "pdb"
    position_dependent = False

    def __init__(self, path: Path, image_base: int = 0, data: bytes | None = None) -> None:
        self.path = path
        self.image_base = image_base
        self.load_base = image_base
        if data is None:
            try:
                data = path.read_bytes()
            except FileNotFoundError as err:
                raise MissingDebugInfoError("file not found", path) from err
            except OSError as err:
                raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
        self._msf = MsfFile(data, path)
        self.info = parse_info_stream(self._msf.stream(PDB_INFO_STREAM), path)
        if FEATURE_MINIMAL_DEBUG_INFO in self.info.features:
            raise UnsupportedFormatError(
                "PDB written by /DEBUG:FASTLINK: it holds no symbols or lines of its own (they stay in "
                "the object files); relink with /DEBUG:FULL or merge it with `mspdbcmf`",
                path,
            )
        self.dbi = parse_dbi_stream(self._msf.stream(DBI_STREAM), path)
        self.debug_id: DebugId | None = DebugId(DebugIdKind.PDB, self.info.guid, self.dbi.age)
        self.is_32bit = self.dbi.machine == _MACHINE_I386
        self.arch = {0x8664: "x86_64", _MACHINE_I386: "i386", 0xAA64: "aarch64"}.get(self.dbi.machine, "unknown")
        self.sections: list[ImageSection] = (
            parse_section_headers(self._msf.stream(self.dbi.section_header_stream))
            if self.dbi.section_header_stream != _NO_STREAM
            else []
        )
        names_stream = self.info.named_streams.get("/names")
        self._strings = StringTable(self._msf.stream(names_stream), path) if names_stream is not None else None
        self._ids: TypeRecords | None = None
        self._types: TypeRecords | None = None
        self._publics: list[_Public] | None = None
        self._public_keys: list[tuple[int, int]] = []
        self._public_vaddr_list: list[int] | None = None
        self._symbols: list[Symbol] | None = None  # at the bound image's vaddrs
        self._inlinee_names: dict[int, str | None] = {}
        self._cross_scopes: dict[int, tuple[list[tuple[int, tuple[int, ...]]], dict[int, int]]] = {}
        self._decoded: dict[int, _ModuleAnswers] = {}
        self._reference_modules: dict[int, _ModuleAnswers] = {}  # by the Python reader, when asked
        self._lookup: AnswerLookup | None = None  # built on the first lookup (a warm run verifies only)

    def bind_image(self, image: Image) -> None:
        """Answer at the vaddrs of ``image`` (its ``load_base`` is the ImageBase the PDB's RVAs add to)."""
        if image.load_base != self.image_base:
            self.image_base = self.load_base = image.load_base
            self._decoded.clear()
            self._reference_modules.clear()
            self._public_vaddr_list = None
            self._symbols = None
            self._lookup = None

    def segments(self) -> Sequence[Segment]:
        """The image's sections as the PDB records them (no file offsets: a PDB holds no code)."""
        return [
            Segment(self.image_base + s.rva, s.virtual_size, 0, 0, bool(s.characteristics & 0x20000000), s.name)
            for s in self.sections
        ]

    def debug_hints(self) -> Sequence[DebugHint]:
        return []

    def stream(self, number: int) -> bytes:
        """The bytes of MSF stream ``number`` (a module's symbols and lines: ``ModuleInfo.stream``)."""
        return self._msf.stream(number)

    # --- addresses -------------------------------------------------------------

    def vaddr_of(self, section: int, offset: int) -> int | None:
        """The vaddr of ``section:offset`` (1-based section), None when the section is unknown."""
        if not 0 < section <= len(self.sections):
            return None
        return self.image_base + self.sections[section - 1].rva + offset

    def _section_offset(self, vaddr: int) -> tuple[int, int] | None:
        rva = vaddr - self.image_base
        for number, section in enumerate(self.sections, start=1):
            if section.rva <= rva < section.rva + max(section.virtual_size, 1):
                return number, rva - section.rva
        return None

    # --- publics ---------------------------------------------------------------

    def _load_publics(self) -> list[_Public]:
        if self._publics is None:
            offsets: list[int] = []
            records = b""
            if self.dbi.public_stream != _NO_STREAM:
                offsets = parse_public_address_map(self._msf.stream(self.dbi.public_stream), self.path)
                records = self._msf.stream(self.dbi.symbol_record_stream)
            found = public_records(records, offsets)
            if self.is_32bit:
                publics = [_Public(section, offset, self._undecorated(name)) for _flags, section, offset, name in found]
            else:
                publics = [_Public(section, offset, name) for _flags, section, offset, name in found]
            # The address map is sorted by (section, offset); keep that order even if a file is not,
            # so that bisecting stays meaningful.
            publics.sort(key=lambda public: (public.section, public.offset))
            self._publics = publics
            self._public_keys = [(public.section, public.offset) for public in publics]
        return self._publics

    def _undecorated(self, name: str) -> str:
        """A 32-bit C name without its calling-convention decoration; other names as they are."""
        if not self.is_32bit or not name or name[0] == "?":
            return name
        body = name[1:] if name[0] in "_@" else name
        at = body.rfind("@")
        if at >= 0 and body[at + 1 :].isdigit():
            body = body[:at]
        if body.endswith("@"):
            body = body[:-1]  # vectorcall: f@@8
        return body or name

    def _public_at_or_before(self, section: int, offset: int) -> _Public | None:
        publics = self._load_publics()
        position = bisect_right(self._public_keys, (section, offset)) - 1
        return publics[position] if position >= 0 else None

    def symbols(self) -> Sequence[Symbol]:
        """The publics as function symbols, each reaching the next public or its section's end."""
        if self._symbols is None:
            sections, count = self.sections, len(self.sections)
            publics = [public for public in self._load_publics() if 0 < public.section <= count]
            found = []
            for index, public in enumerate(publics):
                section = sections[public.section - 1]
                start = self.image_base + section.rva
                vaddr = start + public.offset
                end = start + section.virtual_size
                if index + 1 < len(publics) and publics[index + 1].section == public.section:
                    end = min(end, start + publics[index + 1].offset)
                found.append(Symbol(public.name, vaddr, max(end - vaddr, 0)))
            self._symbols = found
        return self._symbols

    # --- regions and answers -----------------------------------------------------

    def answer_regions(self) -> Sequence[AnswerRegion]:
        regions = []
        modules = self.dbi.modules
        for contribution in self.dbi.contributions:
            low = self.vaddr_of(contribution.section, contribution.offset)
            if low is None or not 0 <= contribution.module < len(modules):
                continue
            if modules[contribution.module].stream == _NO_STREAM:
                continue
            regions.append(AnswerRegion(low, low + contribution.size, contribution.module))
        for section in self.sections:
            low = self.image_base + section.rva
            regions.append(AnswerRegion(low, low + section.virtual_size, PUBLICS_KEY, fallback=True))
        return regions

    def answers(self, key: int) -> Sequence[AnswerRun]:
        if key == PUBLICS_KEY:
            return self._public_runs()
        if not 0 <= key < len(self.dbi.modules):
            return []
        return self._module_runs(key)

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first; [] when nothing names it."""
        if self._lookup is None:
            self._lookup = AnswerLookup(self.answer_regions(), self._lookup_answers)
        return self._lookup.frames_at(vaddr)

    def _lookup_answers(self, key: int) -> Sequence[AnswerRun] | LazyRuns:
        """What lookups decode: the publics' runs whole, a module's frames one address at a time
        (its symbols and lines read once, a procedure's inline sites on the first lookup in it)."""
        if key == PUBLICS_KEY:
            return _PublicFrames([symbol for symbol in self.symbols() if symbol.size > 0])
        if not 0 <= key < len(self.dbi.modules):
            return []
        return _ModuleFrames(self, self._decode_module(self.dbi.modules[key]))

    def _public_runs(self) -> list[AnswerRun]:
        return [
            AnswerRun(symbol.vaddr, symbol.vaddr + symbol.size, (Frame(symbol.name),))
            for symbol in self.symbols()
            if symbol.size > 0
        ]

    def _public_vaddrs(self) -> list[int]:
        """The publics' vaddrs, sorted (where a procedure's name may change to a public's)."""
        if self._public_vaddr_list is None:
            found = (self.vaddr_of(public.section, public.offset) for public in self._load_publics())
            self._public_vaddr_list = sorted(vaddr for vaddr in found if vaddr is not None)
        return self._public_vaddr_list

    def _module_runs(self, key: int) -> list[AnswerRun]:
        module = self.dbi.modules[key]
        decoded = self._decode_module(module)
        spans = []
        for contribution in self.dbi.contributions:
            if contribution.module != key:
                continue
            low = self.vaddr_of(contribution.section, contribution.offset)
            if low is not None:
                spans.append((low, low + contribution.size))
        cuts: set[int] = set(decoded.cut_points())
        for low, high in spans:
            cuts.update((low, high))
        public_vaddrs = self._public_vaddrs()
        for low, high in spans:
            cuts.update(public_vaddrs[bisect_left(public_vaddrs, low) : bisect_left(public_vaddrs, high)])
        points = sorted(cuts)
        pieces: list[tuple[int, int]] = []
        for low, high in sorted(spans):
            inside = [low, *points[bisect_right(points, low) : bisect_left(points, high)]]
            pieces += pairwise([*sorted(set(inside)), high])
        located = decoded.locate_many([low for low, _high in pieces])
        # Runs under one call share their frames: built once per distinct answer (and outer name).
        memo: dict[tuple[object, ...], tuple[Frame, ...]] = {}
        runs: list[AnswerRun] = []
        for (run_low, run_high), (position, line, inlined) in zip(pieces, located, strict=True):
            name = self._outer_name(decoded.procedure(position) if position is not None else None, run_low)
            answer = (name, position, line, *inlined)
            frames = memo.get(answer)
            if frames is None:
                frames = memo[answer] = self._frames_from(decoded, name, position, line, inlined)
            if not frames:
                continue
            if runs and runs[-1].high == run_low and runs[-1].frames == frames:
                runs[-1] = runs[-1]._replace(high=run_high)
            else:
                runs.append(AnswerRun(run_low, run_high, frames))
        runs.sort(key=lambda run: run.low)
        return runs

    # --- one module ------------------------------------------------------------

    def _frames_in_module(self, decoded: _ModuleAnswers, vaddr: int) -> tuple[Frame, ...]:
        position, line, inlined = decoded.locate(vaddr)
        name = self._outer_name(decoded.procedure(position) if position is not None else None, vaddr)
        return self._frames_from(decoded, name, position, line, inlined)

    def _frames_from(
        self,
        decoded: _ModuleAnswers,
        name: str | None,
        position: int | None,
        line: tuple[int, int, int] | None,
        inlined: Sequence[tuple[int, int, int]],
    ) -> tuple[Frame, ...]:
        """The frames of a located vaddr (:meth:`_PythonModule.locate`) whose outermost frame is named ``name``."""
        if name is None and line is None:
            return ()
        outer = Frame(name, decoded.files.get(line[2]), line[0], line[1]) if line is not None else Frame(name)
        if position is None:
            return (outer,)
        files, named, number = decoded.files, self._inlinee_name, decoded.number
        return (
            *(Frame(named(inlinee, number), files.get(file), row_line, 0) for inlinee, file, row_line in inlined),
            outer,
        )

    def _outer_name(self, procedure: tuple[int, str] | None, vaddr: int) -> str | None:
        """The outermost frame's name at ``vaddr`` inside ``procedure`` (its low and name), if any."""
        place = self._section_offset(vaddr)
        public = self._public_at_or_before(*place) if place is not None else None
        if public is not None:
            public_vaddr = self.vaddr_of(public.section, public.offset)
            if procedure is None or procedure[0] == public_vaddr:
                return public.name
        return procedure[1] if procedure is not None else None

    def _inlinee_name(self, item_id: int, module_number: int) -> str | None:
        """The name of inlinee ``item_id`` as module ``module_number`` refers to it (a cross-module
        ID is first resolved to the IPI index the exporting module gives it)."""
        if item_id & codeview.CROSS_MODULE_ID:
            global_index = self._cross_module_index(item_id, module_number)
            if global_index is None or global_index & codeview.CROSS_MODULE_ID:
                return None  # unresolved, or (hostile) resolved to another cross-module ID
            return self._inlinee_name(global_index, module_number)
        if item_id in self._inlinee_names:
            return self._inlinee_names[item_id]
        if self._ids is None or self._types is None:
            self._ids = self._type_records(IPI_STREAM, "IPI")
            self._types = self._type_records(TPI_STREAM, "TPI")
        try:
            name = inlinee_name(self._ids, self._types, item_id)
        except struct.error:
            name = None
        self._inlinee_names[item_id] = name
        return name

    def _cross_module_index(self, item_id: int, module_number: int) -> int | None:
        """The global IPI index of cross-module ID ``item_id`` of module ``module_number``: its entry
        in the module's DEBUG_S_CROSSSCOPEIMPORTS names the exporting module (matched on the DBI
        module name, case-insensitively, as the ``pdb`` crate does) and the local ID, which that
        module's DEBUG_S_CROSSSCOPEEXPORTS maps to the global index. None where any link is
        missing or broken: the frame stays, unnamed."""
        entry, position = codeview.split_cross_module_id(item_id)
        imports = self._cross_scope(module_number)[0]
        if entry >= len(imports) or position >= len(imports[entry][1]) or self._strings is None:
            return None
        name_offset, local_ids = imports[entry]
        exporter_name = self._strings.get(name_offset)
        if exporter_name is None:
            return None
        wanted = exporter_name.casefold()
        for module in self.dbi.modules:
            if module.name.casefold() == wanted:
                return self._cross_scope(module.number)[1].get(local_ids[position])
        return None

    def _cross_scope(self, module_number: int) -> tuple[list[tuple[int, tuple[int, ...]]], dict[int, int]]:
        """Module ``module_number``'s cross-scope imports and exports, read once (empty when its
        stream or subsections do not decode)."""
        found = self._cross_scopes.get(module_number)
        if found is None:
            imports: list[tuple[int, tuple[int, ...]]] = []
            exports: dict[int, int] = {}
            module = self.dbi.modules[module_number]
            if module.stream != _NO_STREAM:
                try:
                    stream = self._msf.stream(module.stream)
                    start = module.symbols_size + module.c11_size
                    for kind, data, _offset in codeview.iter_subsections(stream, start, start + module.c13_size):
                        if kind == codeview.DEBUG_S_CROSSSCOPEIMPORTS:
                            imports += codeview.parse_cross_scope_imports(data)
                        elif kind == codeview.DEBUG_S_CROSSSCOPEEXPORTS:
                            exports = {**codeview.parse_cross_scope_exports(data), **exports}
                except (CodeViewError, MalformedInputError, struct.error):
                    pass
            found = self._cross_scopes[module_number] = (imports, exports)
        return found

    def _type_records(self, stream: int, what: str) -> TypeRecords:
        """The TPI or IPI records; an empty table when the stream is broken, so that a damaged type
        stream leaves inlined frames unnamed (their files and lines stay) instead of every module
        broken."""
        try:
            return TypeRecords(self._msf.stream(stream), self.path, what)
        except MalformedInputError:
            return TypeRecords(b"", self.path, what)

    def _decode_module(self, module: ModuleInfo, *, reference: bool = False) -> _ModuleAnswers:
        """Module ``module`` decoded once, by the compiled twin where built, else (or with
        ``reference``) by the Python reader; raises MalformedInputError when it does not decode."""
        cache = self._reference_modules if reference or kernels is None else self._decoded
        decoded = cache.get(module.number)
        if decoded is None:
            stream = self._msf.stream(module.stream)
            try:
                if cache is self._decoded and kernels is not None:
                    decoded = self._compiled_module(stream, module)
                else:
                    decoded = _PythonModule(self._decode_module_stream(stream, module), module.number)
            except (CodeViewError, struct.error) as err:
                offset = err.offset if isinstance(err, CodeViewError) else None
                raise MalformedInputError(
                    f"module {module.number} ({module.name}) stream {module.stream}: {err}", self.path, offset
                ) from err
            cache[module.number] = decoded
        return decoded

    def _compiled_module(self, stream: bytes, module: ModuleInfo) -> _CompiledModule:
        assert kernels is not None
        compiled = kernels.decode_pdb_module(
            stream,
            module.symbols_size,
            module.c11_size,
            module.c13_size,
            [section.rva for section in self.sections],
            self.image_base,
        )
        files: dict[int, str | None] = {}
        for entry, name_offset in compiled.checksums():
            files[entry] = self._strings.get(name_offset) if self._strings is not None else None
        return _CompiledModule(compiled, files, module.number)

    def _decode_module_stream(self, stream: bytes, module: ModuleInfo) -> _DecodedModule:
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
                    files[entry] = self._strings.get(name_offset) if self._strings is not None else None
            elif kind == codeview.DEBUG_S_INLINEELINES:
                for inlinee, place in codeview.parse_inlinee_lines(data, offset).items():
                    inlinee_lines.setdefault(inlinee, place)
        procedures = self._procedures(stream, 4 if symbols_end >= 4 else 0, symbols_end)
        reach: list[int] = []
        for procedure in procedures:
            reach.append(max(reach[-1], procedure.high) if reach else procedure.high)
        return _DecodedModule(
            procedures,
            [procedure.low for procedure in procedures],
            reach,
            self._line_table(fragments),
            files,
            inlinee_lines,
            stream,
            symbols_end,
            {},
        )

    def _procedures(self, stream: bytes, start: int, end: int) -> list[_Procedure]:
        """The top-level procedures (vaddrs resolved), stepping over each one's body by its End."""
        procedures = []
        position = start
        while (record := codeview.next_symbol_record_of(stream, position, end, codeview.PROC_KINDS)) is not None:
            position = body_start = record.offset + 4 + len(record.body)
            procedure = codeview.parse_procedure(record)
            low = self.vaddr_of(procedure.section, procedure.offset)
            if low is not None:
                high = low + procedure.size
                procedures.append(_Procedure(low, high, procedure.name, body_start, procedure.end_offset))
            # Resume after the closing record. An End that does not point forward at one (hostile, or
            # a cycle) leaves the procedure empty and the scan goes on from the record after it.
            closing = codeview.after_closing_record(
                stream, procedure.end_offset, body_start, end, codeview.PROC_END_KINDS
            )
            position = closing if closing is not None else position
        procedures.sort(key=lambda procedure: procedure.low)
        return procedures

    def _line_table(self, fragments: list[codeview.LineFragment]) -> _LineTable:
        """Per file block: an entry at its fragment's start, its rows, a terminal entry at the fragment's
        end; blocks ordered by their first address, as llvm-symbolizer 14 flattens a module's lines."""
        groups: list[tuple[int, int, codeview.LineBlock]] = []  # (start vaddr, end vaddr, block)
        for fragment in fragments:
            base = self.vaddr_of(fragment.section, fragment.offset)
            if base is None:
                continue
            groups += [(base, base + fragment.code_size, block) for block in fragment.blocks if block.rows[0]]
        groups.sort(key=lambda group: group[0])
        table = _LineTable([], [], [], [], set())
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

    def inline_sites_at(self, vaddr: int) -> list[tuple[int, int, bytes]]:
        """(procedure start, inlinee's first line, binary annotations) of each inline site holding
        ``vaddr``, innermost first: what another tool's reading of the annotations can be checked on."""
        for region in self.answer_regions():
            if region.fallback or not region.low <= vaddr < region.high:
                continue
            reference = self._decode_module(self.dbi.modules[region.key], reference=True)
            assert isinstance(reference, _PythonModule)
            decoded = reference.decoded
            position = _procedure_at(decoded, vaddr)
            if position is not None:
                chain = _site_chain(_sites_of(decoded, position), vaddr)
                low = decoded.procedures[position].low
                return [(low, site.first_line, site.annotations) for site in reversed(chain)]
        return []

    # --- summary ---------------------------------------------------------------

    def debug_info(self) -> DebugInfoSummary:
        has_lines = any(module.c13_size > 0 for module in self.dbi.modules if module.stream != _NO_STREAM)
        return DebugInfoSummary(
            has_symbols=bool(self._load_publics()),
            has_dwarf=False,
            has_line_info=has_lines,
            has_inline_info=bool(self._msf.stream(IPI_STREAM)),
        )

    def lines_missing_reason(self) -> str | None:
        """Why this PDB names functions but no lines, or None when it has lines."""
        if self.debug_info().has_line_info:
            return None
        if self.dbi.flags & _DBI_FLAG_STRIPPED:
            return "the PDB is stripped (public symbols only, as /PDBSTRIPPED writes it): no lines"
        return "the PDB has no module line information"

    def close(self) -> None:
        self._decoded.clear()
        self._reference_modules.clear()

    def __enter__(self) -> PdbFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PdbFile({str(self.path)!r})"


class _ModuleFrames:
    """A module's answers asked one address at a time (:class:`LazyRuns`): the cold lookup path."""

    def __init__(self, pdb: PdbFile, decoded: _ModuleAnswers) -> None:
        self._pdb = pdb
        self._decoded = decoded

    def run_at(self, vaddr: int) -> AnswerRun | None:
        frames = self._pdb._frames_in_module(self._decoded, vaddr)
        return AnswerRun(vaddr, vaddr + 1, frames) if frames else None


class _PublicFrames:
    """The publics' runs (:meth:`PdbFile._public_runs`) found by the same bisection, without building
    a run per public: most lookups land in modules, and the fallback is asked for few addresses."""

    def __init__(self, symbols: list[Symbol]) -> None:
        self._symbols = symbols
        self._lows = [symbol.vaddr for symbol in symbols]

    def run_at(self, vaddr: int) -> AnswerRun | None:
        position = bisect_right(self._lows, vaddr) - 1
        if position < 0:
            return None
        symbol = self._symbols[position]
        if not vaddr < symbol.vaddr + symbol.size:
            return None
        return AnswerRun(symbol.vaddr, symbol.vaddr + symbol.size, (Frame(symbol.name),))


def _procedure_at(decoded: _DecodedModule, vaddr: int) -> int | None:
    """The position of the first procedure (by low) holding ``vaddr``, as llvm's search finds it."""
    stop = bisect_right(decoded.procedure_lows, vaddr)
    position = bisect_right(decoded.procedure_reach, vaddr, 0, stop)  # the first that may reach past it
    for candidate in range(position, stop):
        if vaddr < decoded.procedures[candidate].high:
            return candidate
    return None


def _sites_of(decoded: _DecodedModule, position: int) -> list[_Site]:
    """The inline sites directly in procedure ``position``, found on first use. A body whose records
    do not decode leaves the procedure without inlined frames (its name and lines still answer)."""
    sites = decoded.sites.get(position)
    if sites is None:
        procedure = decoded.procedures[position]
        scope = _SiteScope(decoded.stream, procedure.low, decoded.inlinee_lines)
        end = min(procedure.end_offset, decoded.symbols_end)
        try:
            sites = _sites_in(scope, procedure.body_start, end, 0)
        except (CodeViewError, struct.error):
            sites = []
        decoded.sites[position] = sites
    return sites


def _sites_in(scope: _SiteScope, start: int, end: int, level: int) -> list[_Site]:
    """The inline sites directly in ``stream[start:end]`` (blocks looked through), each one's body
    stepped over by its End (the offset of its S_INLINESITE_END); an End that does not point at one
    inside ``end`` leaves that site without nested sites, and the scan goes on after its record."""
    if level > _MAX_INLINE_DEPTH:
        raise CodeViewError(f"inline sites nested more than {_MAX_INLINE_DEPTH} deep", start)
    sites = []
    position = start
    kinds = codeview.INLINE_SITE_KINDS
    while (record := codeview.next_symbol_record_of(scope.stream, position, end, kinds)) is not None:
        site = codeview.parse_inline_site(record)
        position = body_start = record.offset + 4 + len(record.body)
        closing = codeview.after_closing_record(
            scope.stream, site.end_offset, body_start, end, codeview.INLINE_SITE_END_KINDS
        )
        body_end = site.end_offset if closing is not None else body_start
        sites.append(_Site(scope, site.inlinee, site.annotations, (body_start, body_end), level))
        position = closing if closing is not None else body_start
    return sites


def _site_chain(sites: list[_Site], vaddr: int) -> list[_Site]:
    """The inline sites holding ``vaddr``, outermost first (at each level the first that holds it)."""
    chain: list[_Site] = []
    level = sites
    while level and len(chain) <= _MAX_INLINE_DEPTH:
        holding = next((site for site in level if site.holds(vaddr)), None)
        if holding is None:
            break
        chain.append(holding)
        level = holding.children
    return chain


def _line_at(table: _LineTable, vaddr: int) -> _LineEntry | None:
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

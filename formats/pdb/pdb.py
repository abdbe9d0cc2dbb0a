"""A PDB as a symbol source: frames, inlined ones included, at the vaddrs of the image it describes.

Hand-written, because no Python library reads what naming addresses needs: the C13 line
subsections and the ``S_INLINESITE`` annotations with their inlinee lines and IPI names.
The layouts come from LLVM's "The PDB File Format" pages (see the sibling modules). Here: the
file class, which ties the container (``msf.py``), the fixed streams (``streams.py``), the
publics (``publics.py``), the module streams (``module_stream.py``, their inline sites in
``inline.py``) and inlinee names (``inlinees.py``) into answer regions and runs.

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

import contextlib
import mmap
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from symbolize.formats.answers import AnswerLookup, LazyRuns
from symbolize.formats.errors import MalformedInputError, UnsupportedFormatError
from symbolize.formats.mapped import map_read_only
from symbolize.formats.native import kernels
from symbolize.formats.pdb.codeview import CodeViewError
from symbolize.formats.pdb.inline import site_chain
from symbolize.formats.pdb.inlinees import InlineeNames
from symbolize.formats.pdb.module_stream import (
    CompiledModule,
    DecodedModule,
    ModuleAnswers,
    PythonModule,
    compile_module,
    decode_module_stream,
    procedure_at,
    sites_of,
)
from symbolize.formats.pdb.msf import MsfFile
from symbolize.formats.pdb.publics import Public, PublicFrames, public_at, public_symbols, read_publics
from symbolize.formats.pdb.streams import (
    DBI_STREAM,
    FEATURE_MINIMAL_DEBUG_INFO,
    IPI_STREAM,
    NO_STREAM,
    PDB_INFO_STREAM,
    ImageSection,
    ModuleInfo,
    StringTable,
    parse_dbi_stream,
    parse_info_stream,
    parse_section_headers,
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
PUBLICS_KEY = -1


class PdbFile(ReaderDefaults):
    """A PDB's answers at ``image_base + RVA`` vaddrs (the image's ``ImageBase``, given by the caller).

    Raises UnsupportedFormatError for an MSFZ, PDB 2.0 or /DEBUG:FASTLINK PDB,
    MalformedInputError when its container or fixed streams are broken.
    """

    format = "pdb"
    position_dependent = False

    def __init__(self, path: Path, image_base: int = 0, data: bytes | None = None) -> None:
        """Open ``path`` (mmap, read only: a lookup reads a few of its streams), or read ``data``
        and name it ``path``. Call :meth:`close` (or use ``with``) to release the mmap."""
        self.path = path
        self.image_base = image_base
        self.load_base = image_base
        self._map: mmap.mmap | None = None
        self._decoded: dict[int, ModuleAnswers] = {}
        self._reference_modules: dict[int, ModuleAnswers] = {}  # by the Python reader, when asked
        self._lookup: AnswerLookup | None = None  # built on the first lookup (a warm run verifies only)
        try:
            source = data if data is not None else map_read_only(path)
            self._map = source if isinstance(source, mmap.mmap) else None
            self._open(source)
        except BaseException:
            self.close()
            raise

    def _open(self, data: bytes | mmap.mmap) -> None:
        path = self.path
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
            if self.dbi.section_header_stream != NO_STREAM
            else []
        )
        names_stream = self.info.named_streams.get("/names")
        self._strings = StringTable(self._msf.stream(names_stream), path) if names_stream is not None else None
        self._inlinee_names = InlineeNames(self._msf, self.dbi.modules, self._strings, path)
        self._publics: list[Public] | None = None
        self._public_names: list[str] | None = None  # of each public, as _public_keys orders them
        self._public_keys: list[int] = []  # section << 32 | offset of each public
        self._public_vaddr_list: list[int] | None = None
        self._symbols: list[Symbol] | None = None  # at the bound image's vaddrs
        self._regions: list[AnswerRegion] | None = None  # at the bound image's vaddrs
        # Whether the sections lie in RVA order without overlap (as linkers write them): then the
        # publics' fallback is found per address (_PublicsAt), without a symbol per public.
        self._sections_in_order = all(
            low.rva + max(low.virtual_size, 1) <= high.rva for low, high in pairwise(self.sections)
        )

    def bind_image(self, image: Image) -> None:
        """Answer at the vaddrs of ``image`` (its ``load_base`` is the ImageBase the PDB's RVAs add to)."""
        if image.load_base != self.image_base:
            self.image_base = self.load_base = image.load_base
            self._decoded.clear()
            self._reference_modules.clear()
            self._public_vaddr_list = None
            self._symbols = None
            self._regions = None
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

    def _public_index(self) -> tuple[list[int], list[str]]:
        """Each public's key (``section << 32 | offset``) and name, sorted by key, read once."""
        if self._public_names is None:
            self._public_keys, self._public_names = read_publics(self._msf, self.dbi, self.path, self.is_32bit)
        return self._public_keys, self._public_names

    def _load_publics(self) -> list[Public]:
        if self._publics is None:
            keys, names = self._public_index()
            self._publics = [public_at(keys, names, position) for position in range(len(keys))]
        return self._publics

    def symbols(self) -> Sequence[Symbol]:
        """The publics as function symbols, each reaching the next public or its section's end."""
        if self._symbols is None:
            self._symbols = public_symbols(self._load_publics(), self.sections, self.image_base)
        return self._symbols

    # --- regions and answers -----------------------------------------------------

    def answer_regions(self) -> Sequence[AnswerRegion]:
        if self._regions is None:
            self._regions = self._answer_regions()
        return self._regions

    def _answer_regions(self) -> list[AnswerRegion]:
        regions = []
        starts = [self.image_base + section.rva for section in self.sections]  # section N at N - 1
        with_stream = [module.stream != NO_STREAM for module in self.dbi.modules]
        for section, offset, size, _characteristics, module in self.dbi.contributions:
            if 0 < section <= len(starts) and 0 <= module < len(with_stream) and with_stream[module]:
                low = starts[section - 1] + offset
                regions.append(AnswerRegion(low, low + size, module))
        for low, image_section in zip(starts, self.sections, strict=True):
            regions.append(AnswerRegion(low, low + image_section.virtual_size, PUBLICS_KEY, fallback=True))
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
            if self._sections_in_order:
                return _PublicsAt(self)
            return PublicFrames([symbol for symbol in self.symbols() if symbol.size > 0])
        if not 0 <= key < len(self.dbi.modules):
            return []
        return _ModuleFrames(self, self._decode_module(self.dbi.modules[key]))

    def _public_run_at(self, vaddr: int) -> AnswerRun | None:
        """The run of :meth:`symbols` holding ``vaddr`` (sections in order: see _PublicsAt), found
        without them: the last public at or before it in its section reaches the next public of
        the section or the section's end."""
        place = self._section_offset(vaddr)
        if place is None:
            return None
        keys, names = self._public_index()
        number, offset = place
        position = bisect_right(keys, number << 32 | offset) - 1
        if position < 0 or keys[position] >> 32 != number:
            return None
        section = self.sections[number - 1]
        start = self.image_base + section.rva
        low, high = start + (keys[position] & 0xFFFFFFFF), start + section.virtual_size
        if position + 1 < len(keys) and keys[position + 1] >> 32 == number:
            high = min(high, start + (keys[position + 1] & 0xFFFFFFFF))
        return AnswerRun(low, high, (Frame(names[position]),)) if low <= vaddr < high else None

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

    def _frames_in_module(self, decoded: ModuleAnswers, vaddr: int) -> tuple[Frame, ...]:
        position, line, inlined = decoded.locate(vaddr)
        name = self._outer_name(decoded.procedure(position) if position is not None else None, vaddr)
        return self._frames_from(decoded, name, position, line, inlined)

    def _frames_from(
        self,
        decoded: ModuleAnswers,
        name: str | None,
        position: int | None,
        line: tuple[int, int, int] | None,
        inlined: Sequence[tuple[int, int, int]],
    ) -> tuple[Frame, ...]:
        """The frames of a located vaddr (:meth:`PythonModule.locate`) whose outermost frame is named ``name``."""
        if name is None and line is None:
            return ()
        outer = Frame(name, decoded.files.get(line[2]), line[0], line[1]) if line is not None else Frame(name)
        if position is None:
            return (outer,)
        files, named, number = decoded.files, self._inlinee_names.name, decoded.number
        return (
            *(Frame(named(inlinee, number), files.get(file), row_line, 0) for inlinee, file, row_line in inlined),
            outer,
        )

    def _outer_name(self, procedure: tuple[int, str] | None, vaddr: int) -> str | None:
        """The outermost frame's name at ``vaddr`` inside ``procedure`` (its low and name), if any."""
        place = self._section_offset(vaddr)
        if place is not None:
            keys, names = self._public_index()
            position = bisect_right(keys, place[0] << 32 | place[1]) - 1  # the last public at or before it
            if position >= 0:
                public_vaddr = self.vaddr_of(keys[position] >> 32, keys[position] & 0xFFFFFFFF)
                if procedure is None or procedure[0] == public_vaddr:
                    return names[position]
        return procedure[1] if procedure is not None else None

    def _decode_module(self, module: ModuleInfo, *, reference: bool = False) -> ModuleAnswers:
        """Module ``module`` decoded once, by the compiled twin where built, else (or with
        ``reference``) by the Python reader; raises MalformedInputError when it does not decode."""
        cache = self._reference_modules if reference or kernels is None else self._decoded
        decoded = cache.get(module.number)
        if decoded is None:
            compiled = cache is self._decoded and kernels is not None
            # The compiled twin borrows a view of the mmap (it keeps the stream for inline sites).
            stream = self._msf.stream_view(module.stream) if compiled else self._msf.stream(module.stream)
            try:
                if compiled:
                    decoded = self._compiled_module(stream, module)
                else:
                    assert isinstance(stream, bytes)
                    decoded = PythonModule(self._decode_module_stream(stream, module), module.number)
            except (CodeViewError, struct.error) as err:
                offset = err.offset if isinstance(err, CodeViewError) else None
                raise MalformedInputError(
                    f"module {module.number} ({module.name}) stream {module.stream}: {err}", self.path, offset
                ) from err
            cache[module.number] = decoded
        return decoded

    def _compiled_module(self, stream: bytes | memoryview, module: ModuleInfo) -> CompiledModule:
        rvas = [section.rva for section in self.sections]
        return compile_module(stream, module, rvas, self.image_base, self._file_name)

    def _decode_module_stream(self, stream: bytes, module: ModuleInfo) -> DecodedModule:
        return decode_module_stream(stream, module, self.vaddr_of, self._file_name)

    def _file_name(self, name_offset: int) -> str | None:
        """A source file's name, by its offset in the /names string table."""
        return self._strings.get(name_offset) if self._strings is not None else None

    def inline_sites_at(self, vaddr: int) -> list[tuple[int, int, bytes]]:
        """(procedure start, inlinee's first line, binary annotations) of each inline site holding
        ``vaddr``, innermost first: what another tool's reading of the annotations can be checked on."""
        for region in self.answer_regions():
            if region.fallback or not region.low <= vaddr < region.high:
                continue
            reference = self._decode_module(self.dbi.modules[region.key], reference=True)
            assert isinstance(reference, PythonModule)
            decoded = reference.decoded
            position = procedure_at(decoded, vaddr)
            if position is not None:
                chain = site_chain(sites_of(decoded, position), vaddr)
                low = decoded.procedures[position].low
                return [(low, site.first_line, site.annotations) for site in reversed(chain)]
        return []

    # --- summary ---------------------------------------------------------------

    def debug_info(self) -> DebugInfoSummary:
        has_lines = any(module.c13_size > 0 for module in self.dbi.modules if module.stream != NO_STREAM)
        return DebugInfoSummary(
            has_symbols=bool(self._public_index()[0]),
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
        self._lookup = None  # its module answers hold views of the mmap
        if self._map is not None:
            # A caller may still hold a view of a stream: the mmap is then freed with it.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None

    def __enter__(self) -> PdbFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PdbFile({str(self.path)!r})"


class _PublicsAt:
    """The publics' fallback asked one address at a time (:class:`LazyRuns`), where the sections
    lie in RVA order without overlap: the runs of :class:`PublicFrames` over :meth:`PdbFile.symbols`
    (their lows are then in order, each run reaching at most its section's end), found per address
    instead of a symbol built for each of the PDB's publics (a cold lookup asks it for few)."""

    def __init__(self, pdb: PdbFile) -> None:
        self.run_at = pdb._public_run_at


class _ModuleFrames:
    """A module's answers asked one address at a time (:class:`LazyRuns`): the cold lookup path."""

    def __init__(self, pdb: PdbFile, decoded: ModuleAnswers) -> None:
        self._pdb = pdb
        self._decoded = decoded

    def run_at(self, vaddr: int) -> AnswerRun | None:
        frames = self._pdb._frames_in_module(self._decoded, vaddr)
        return AnswerRun(vaddr, vaddr + 1, frames) if frames else None

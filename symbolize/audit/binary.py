"""Auditing one binary: gather what its reader and discovery can say, then judge (``verdict.py``).

Each file is measured by its format's coverage module, through ``symbolize.formats.coverage``
(its sections, what each name source covers, a Mach-O debug map's objects: the values of
``symbolize.formats.facts``, for ELF, PE, PDB, Mach-O and its dSYM); the auditor does the
arithmetic over the ranges.
Debug files come from the project's discovery: each hint the image lists
(``Image.debug_hints()``: build ID, ``.gnu_debuglink``, the PDB of the RSDS record, the
dSYM) goes through the locator registered for its kind (``symbolize.discovery.locate``),
which finds and verifies the file (build ID, CRC32, GUID and age, UUID) and says why it
refused the others; each hint is reported on its own. Files given with ``--debug-file`` are
checked by the same locators' verification. Only files found and matching count toward
coverage: that is what a symbolizer will use. A PDB is bound to its image first (its
RVAs answer at the image's ImageBase).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from symbolize.audit.distro import distribution_file
from symbolize.audit.frames import RUST_SYMBOL, UNWIND_SECTIONS, audit_frame_pointers
from symbolize.audit.lookups import check_lookups, not_checked
from symbolize.audit.report import (
    BinaryAudit,
    CoverageReport,
    DebugFileReport,
    DebugInfoReport,
    Identity,
    SplitUnitReport,
    SymbolReport,
    SymbolTableKind,
    UnreadableBinary,
)
from symbolize.audit.verdict import judge
from symbolize.discovery import Locator, LookupContext, SearchOptions, locate
from symbolize.discovery.elf_locators import BuildIdLocator, DebugLinkLocator
from symbolize.discovery.macho_locators import DsymLocator
from symbolize.discovery.paths import build_id_path
from symbolize.discovery.pdb_locator import PdbLocator
from symbolize.discovery.registry import READER_HINTS
from symbolize.formats.coverage import auditable, coverage, debug_map_facts, producers, section_facts
from symbolize.formats.errors import (
    MalformedInputError,
    NotFoundError,
    SymbolizeError,
    UnsupportedFormatError,
)
from symbolize.formats.facts import AddressRange, Coverage, SectionFact, SymbolTable, covered_bytes, merge_ranges
from symbolize.formats.types import DebugHint, DebugInfoSummary, HintKind, ObjectFile, Symbol
from symbolize.loader import Loader

# Which locator verifies a --debug-file, by the first of these hints the binary lists.
_GIVEN_FILE_CHECKS: tuple[tuple[HintKind, Locator], ...] = (
    (HintKind.DEBUGLINK, DebugLinkLocator()),
    (HintKind.BUILD_ID, BuildIdLocator()),
    (HintKind.PDB, PdbLocator()),
    (HintKind.DSYM, DsymLocator()),
)


_Source = TypeVar("_Source", bound=ObjectFile)
_DWARF_INFO_SECTIONS = frozenset({".debug_info", ".zdebug_info", "__debug_info"})


def audit_binary(
    path: Path,
    *,
    debug_files: Sequence[Path] = (),
    search_paths: Sequence[Path] = (),
    debug_dirs: Sequence[Path] | None = None,
    arch: str | None = None,
) -> BinaryAudit | UnreadableBinary:
    """The audit of ``path`` (its ``arch`` slice when universal), or why it cannot be audited."""
    searched = SearchOptions(search_paths=tuple(search_paths))
    loader = Loader(searched if debug_dirs is None else searched._replace(debug_dirs=tuple(debug_dirs)))
    try:
        image = loader.open(path, arch=arch)
        if not auditable(image):
            return UnreadableBinary(str(path), f"no auditor yet for {image.format} files")
        return _audit(image, debug_files, loader, arch)
    except UnsupportedFormatError as err:
        return UnreadableBinary(str(path), err.reason)  # as lookup and index say it
    except SymbolizeError as err:
        return UnreadableBinary(str(path), err.reason)
    finally:
        loader.close()


def architectures(path: Path) -> list[str | None]:
    """The slices to audit in ``path``: each architecture of a universal file, else [None] (the file)."""
    loader = Loader()
    try:
        arches = list(loader.open(path).slice_arches())
    except SymbolizeError:
        return [None]  # audit_binary says why
    finally:
        loader.close()
    return list(arches) if len(arches) > 1 else [None]


def _audit(
    binary: ObjectFile, given: Sequence[Path], loader: Loader, arch: str | None
) -> BinaryAudit:
    sections = section_facts(binary)
    code = merge_ranges(
        (section.vaddr, section.vaddr + section.size)
        for section in sections
        if section.executable and not section.without_bytes
    )
    file_reports, sources = _located_files(binary, sections, loader)
    for given_path in given:
        report, opened = _given_debug_file(binary, given_path, loader)
        file_reports.append(report)
        if opened is not None and all(opened.path.resolve() != source.path.resolve() for source in sources):
            sources.append(opened)

    for source in sources:
        loader.supply_all(source)  # coverage reads every unit: every split unit's .dwo is needed
    coverages = [coverage(source) for source in sources]
    coverage_report = _coverage_report(coverages, code)
    split_units = tuple(
        SplitUnitReport(name, resolved) for coverage in coverages for name, resolved in coverage.split_units
    )
    if split_units:
        file_reports.append(_split_report(binary, split_units))
    dsym_served = any(report.how == HintKind.DSYM.value and report.matches for report in file_reports)
    debug_map = None if dsym_served else _debug_map_report(binary)
    if debug_map is not None:
        file_reports.append(debug_map)
    debug_info = _debug_info_report(binary, sections, sources, coverages, file_reports, split_units)
    functions = _union(coverage.functions for coverage in coverages)
    all_symbols = _function_symbols(sources)
    table = min((coverage.symbol_table for coverage in coverages), key=lambda found: found.rank)
    symbol_report = SymbolReport(_KINDS[table], len(all_symbols), table.value)
    unwind = tuple(name for name in UNWIND_SECTIONS if any(section.name == name for section in sections))
    frame_pointers = audit_frame_pointers(loader, binary, unwind, code, all_symbols, functions)
    identity = Identity(
        path=str(binary.path),
        format=binary.format,
        arch=binary.arch,
        debug_id=str(binary.debug_id) if binary.debug_id is not None else None,
        debug_id_kind=binary.debug_id.kind.value if binary.debug_id is not None else None,
    )
    rust = _built_by_rustc(binary) or any(RUST_SYMBOL.match(symbol.name) for symbol in all_symbols)
    if any(report.how == "given" and report.matches for report in file_reports):
        lookups = not_checked("not checked: a lookup does not read --debug-file files")
    else:
        symbols = _union(coverage.symbols for coverage in coverages)
        claims = (
            _union([symbols, functions]),
            _union(coverage.lines for coverage in coverages),
            _union(coverage.inlined for coverage in coverages),
        )
        lookups = check_lookups(
            binary.path, arch, claims, code, tuple(loader.options.search_paths), tuple(loader.options.debug_dirs)
        )
    distribution = distribution_file(binary.path) if binary.format == "elf" else None
    verdict = judge(
        identity, symbol_report, debug_info, coverage_report, frame_pointers, rust=rust, lookups=lookups,
        distribution=distribution,
    )  # fmt: skip
    return BinaryAudit(identity, symbol_report, debug_info, coverage_report, frame_pointers, verdict, lookups)


def _built_by_rustc(binary: ObjectFile) -> bool:
    """Whether the file says rustc built it (an ELF ``.comment`` entry ``rustc version 1.95.0 ...``,
    which a build stripped of its symbols keeps)."""
    return any(producer.startswith("rustc version ") for producer in producers(binary))


def _coverage_report(coverages: Sequence[Coverage], code: Sequence[AddressRange]) -> CoverageReport:
    """What every source together covers of ``code`` (a debug file and the binary's own symbols)."""
    symbols = _union(coverage.symbols for coverage in coverages)
    functions = _union(coverage.functions for coverage in coverages)
    # The llvm-dwarfdump-style figures of the one source whose DWARF covers most.
    best = max(coverages, key=lambda coverage: covered_bytes(coverage.functions, code))
    return CoverageReport(
        code_bytes=sum(high - low for low, high in code),
        symbol_bytes=covered_bytes(symbols, code),
        line_bytes=covered_bytes(_union(coverage.lines for coverage in coverages), code),
        function_bytes=covered_bytes(functions, code),
        inlined_bytes=covered_bytes(_union(coverage.inlined for coverage in coverages), code),
        name_bytes=covered_bytes(_union([symbols, functions]), code),
        inlined_calls=best.inlined_entries,
        llvm_bytes_within_functions=best.function_range_bytes,
        llvm_bytes_within_inlined_functions=best.inlined_range_bytes,
    )


def _debug_info_report(
    binary: ObjectFile,
    sections: Sequence[SectionFact],
    sources: Sequence[ObjectFile],
    coverages: Sequence[Coverage],
    file_reports: Sequence[DebugFileReport],
    split_units: tuple[SplitUnitReport, ...],
) -> DebugInfoReport:
    summaries = [_summary(source) for source in sources]
    return DebugInfoReport(
        files=tuple(file_reports),
        dwarf_versions=tuple(
            sorted(
                {v for summary in summaries for v in summary.dwarf_versions}
                | {v for coverage in coverages for v in coverage.dwarf_versions}
            )
        ),
        compressed_sections=tuple(
            f"{source.path.name}:{section.name}"
            for source in sources
            for section in section_facts(source)
            if section.compressed
        ),
        split_units=split_units,
        broken_units=tuple(unit for coverage in coverages for unit in coverage.broken_units),
        file_bytes=binary.path.stat().st_size,
        debug_section_bytes=sum(
            section.size for section in sections if section.name.startswith((".debug_", ".zdebug_"))
        ),
        line_table_bytes=sum(
            section.size
            for section in sections
            if section.name in (".debug_line", ".debug_line_str", ".zdebug_line", ".zdebug_line_str")
        ),
    )


def _union(range_lists: Iterable[Iterable[AddressRange]]) -> tuple[AddressRange, ...]:
    return merge_ranges(pair for ranges in range_lists for pair in ranges)


def _function_symbols(sources: Sequence[ObjectFile]) -> list[Symbol]:
    found: dict[tuple[str, int], Symbol] = {}
    for source in sources:
        for symbol in source.symbols():
            found.setdefault((symbol.name, symbol.vaddr), symbol)
    return sorted(found.values(), key=lambda symbol: (symbol.vaddr, symbol.name))


# The report's kinds (schema 1), each table that names exported functions only being "dynamic-only".
_KINDS = {
    SymbolTable.FULL: SymbolTableKind.FULL,
    SymbolTable.MINIDEBUGINFO: SymbolTableKind.MINIDEBUGINFO,
    SymbolTable.EXTERNAL: SymbolTableKind.DYNAMIC_ONLY,
    SymbolTable.DYNAMIC: SymbolTableKind.DYNAMIC_ONLY,
    SymbolTable.EXPORTS: SymbolTableKind.DYNAMIC_ONLY,
    SymbolTable.NONE: SymbolTableKind.NONE,
}


def _located_files(
    binary: ObjectFile, sections: Sequence[SectionFact], loader: Loader
) -> tuple[list[DebugFileReport], list[ObjectFile]]:
    """Where the binary's debug info lives: in itself, and where each of its hints leads."""
    reports: list[DebugFileReport] = []
    sources: list[ObjectFile] = [binary]
    summary = _summary(binary)
    # Its own DWARF sections: a Mach-O binary's summary also counts its debug map's objects.
    own_dwarf = summary.has_dwarf and any(section.name in _DWARF_INFO_SECTIONS for section in sections)
    if own_dwarf:
        versions = ", ".join(str(version) for version in summary.dwarf_versions)
        reports.append(DebugFileReport("embedded", str(binary.path), True, None, f"DWARF {versions}".strip()))
    if any(section.name == ".gnu_debugdata" for section in sections):
        reports.append(
            DebugFileReport("minidebuginfo", str(binary.path), True, None, "local function symbols in .gnu_debugdata")
        )
    context = LookupContext(loader, binary.path, binary.path, binary.arch, binary.debug_id)
    hints = list(binary.debug_hints())
    for hint in hints:
        if hint.kind in READER_HINTS:
            continue  # asked for by the reader while decoding (split DWARF is reported from the units)
        refused: list[str] = []
        located = locate(hint, context, refused)
        how = hint.kind.value
        if located is not None:
            reports.append(DebugFileReport(how, str(located.path), True, True, _match_detail(hint.kind)))
            opened = _bound(located.opened, binary)
            if auditable(opened) and all(opened.path.resolve() != s.path.resolve() for s in sources):
                sources.append(opened)
        elif refused:
            path, _colon, why = refused[0].partition(": ")
            reports.append(DebugFileReport(how, path if why else None, True, False, why or refused[0]))
        elif hint.kind is HintKind.BUILD_ID and (own_dwarf or len(hints) > 1):
            continue  # only where debug info could also have been: not a claim the binary makes
        elif not hint.name and own_dwarf:
            continue  # an RSDS record naming no PDB (MinGW's --build-id): the DWARF is in the image
        else:
            reports.append(DebugFileReport(how, None, False, None, _missing_detail(hint, loader.options)))
    return reports, sources


def _summary(source: ObjectFile) -> DebugInfoSummary:
    """What ``source`` carries; DWARF that cannot be walked counts as present and empty."""
    try:
        return source.debug_info()
    except MalformedInputError:
        return DebugInfoSummary(
            has_symbols=bool(source.symbols()), has_dwarf=True, has_line_info=False, has_inline_info=False
        )


def _match_detail(kind: HintKind) -> str:
    return {
        HintKind.BUILD_ID: "build ID matches",
        HintKind.DEBUGLINK: "build ID and CRC32 match",
        HintKind.PDB: "GUID and age match",
        HintKind.DSYM: "UUID matches",
    }.get(kind, "matches")


def _missing_detail(hint: DebugHint, options: SearchOptions) -> str:
    if hint.kind is HintKind.BUILD_ID:
        relative = build_id_path(hint.debug_id)
        places = ", ".join(str(directory / relative) for directory in options.debug_dirs) if relative else ""
        return f"not in {places}" if places else "no debug directory to look in"
    return f"{hint.name} not found" if hint.name else "not found"


def _split_report(binary: ObjectFile, units: Sequence[SplitUnitReport]) -> DebugFileReport:
    resolved = sum(unit.resolved for unit in units)
    package = Path(f"{binary.path}.dwp")
    where = str(package) if package.is_file() else ", ".join(sorted({unit.dwo_name for unit in units}))
    return DebugFileReport(
        "split-dwarf",
        where,
        resolved > 0,
        resolved == len(units) if resolved else None,
        f"{resolved} of {len(units)} split units found",
    )


def _debug_map_report(binary: ObjectFile) -> DebugFileReport | None:
    """A Mach-O binary's debug map: how many of the object files it names were found (their
    DWARF is what the binary's coverage counts when it has no dSYM)."""
    found = debug_map_facts(binary)
    if found is None:
        return None
    names, refused = found
    present = len(names) - sum(1 for name in names if name in refused)
    where = ", ".join(names[:3]) + (f", ... ({len(names)} objects)" if len(names) > 3 else "")
    reasons = sorted(set(refused.values()))
    detail = f"{present} of {len(names)} object files found" + (f" ({'; '.join(reasons)})" if reasons else "")
    return DebugFileReport(
        HintKind.DEBUG_MAP_OBJECT.value, where, present > 0, present == len(names) if present else None, detail
    )


def _given_debug_file(
    binary: ObjectFile, path: Path, loader: Loader
) -> tuple[DebugFileReport, ObjectFile | None]:
    """A ``--debug-file``: used when the locator of the binary's debuglink (else build ID, PDB, dSYM)
    would accept it."""
    try:
        opened = loader.open(path, image_path=binary.path, arch=binary.arch)
    except NotFoundError:
        return DebugFileReport("given", str(path), False, None, "file not found"), None
    except SymbolizeError as err:
        return DebugFileReport("given", str(path), True, False, err.reason), None
    context = LookupContext(loader, binary.path, binary.path, binary.arch, binary.debug_id)
    hints = {hint.kind: hint for hint in binary.debug_hints()}
    check = next(((hints[kind], locator) for kind, locator in _GIVEN_FILE_CHECKS if kind in hints), None)
    if check is None:
        return DebugFileReport("given", str(path), True, None, "the binary names no debug file to compare"), None
    refusal = check[1].refusal(check[0], opened, context)
    if refusal is not None:
        return DebugFileReport("given", str(path), True, False, refusal), None
    if not auditable(opened):
        return DebugFileReport("given", str(path), True, None, f"no auditor yet for {opened.format} files"), None
    return DebugFileReport("given", str(path), True, True, "matches"), _bound(opened, binary)


def _bound(source: _Source, binary: ObjectFile) -> _Source:
    """``source`` answering at ``binary``'s vaddrs: a PDB adds its RVAs to the image's ImageBase."""
    source.bind_image(binary)
    return source

"""Auditing one binary: gather what its reader and discovery can say, then judge (``verdict.py``).

Debug files come from the project's discovery (``symbolize.discovery``:
build-ID paths, ``.gnu_debuglink`` with its CRC, search paths) plus the
files given with ``--debug-file``, which are used only when they belong to
the build (same build ID; CRC32 of a debuglink when the binary has no build
ID). Only files found and matching count toward coverage: that is what a
symbolizer will use.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol, TypeGuard

from symbolize.audit.frames import audit_frame_pointers
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
from symbolize.discovery import DiscoveryOptions, open_module
from symbolize.formats.errors import MissingDebugInfoError, SymbolizeError, UnsupportedFormatError
from symbolize.formats.facts import AddressRange, Coverage, SectionFact, covered_bytes, merge_ranges
from symbolize.formats.types import DebugInfoSummary, ObjectFile, Symbol


class AuditableFile(ObjectFile, Protocol):
    """A reader that can tell the auditor its sections and what its name sources cover."""

    def section_facts(self) -> Sequence[SectionFact]: ...

    def coverage(self) -> Coverage: ...


# Rust's legacy mangling ends in a 17h<16 hex digits>E hash; v0 starts with _R.
_RUST_SYMBOL = re.compile(r"^_ZN.*17h[0-9a-f]{16}E$|^_R")


def audit_binary(
    path: Path,
    *,
    debug_files: Sequence[Path] = (),
    search_paths: Sequence[Path] = (),
    debug_dirs: Sequence[Path] | None = None,
) -> BinaryAudit | UnreadableBinary:
    """The audit of ``path``, or why it cannot be audited (missing, malformed, no reader yet)."""
    options = DiscoveryOptions(search_paths=search_paths)
    if debug_dirs is not None:
        options.debug_dirs = debug_dirs
    try:
        module = open_module(path, options)
    except UnsupportedFormatError as err:
        return UnreadableBinary(str(path), f"no reader yet: {err.reason}")
    except SymbolizeError as err:
        return UnreadableBinary(str(path), err.reason)
    try:
        binary = module.binary
        if not _auditable(binary):
            return UnreadableBinary(str(path), f"no auditor yet for {binary.format} files")
        return _audit(binary, module.debug_files, module.refused, debug_files, options)
    except SymbolizeError as err:
        return UnreadableBinary(str(path), err.reason)
    finally:
        options.cache.close()


def _auditable(opened: ObjectFile) -> TypeGuard[AuditableFile]:
    return callable(getattr(opened, "section_facts", None)) and callable(getattr(opened, "coverage", None))


def _audit(
    binary: AuditableFile,
    discovered: Sequence[ObjectFile],
    refused: Sequence[str],
    given: Sequence[Path],
    options: DiscoveryOptions,
) -> BinaryAudit:
    sections = binary.section_facts()
    code = merge_ranges(
        (section.vaddr, section.vaddr + section.size)
        for section in sections
        if section.executable and not section.without_bytes
    )
    file_reports: list[DebugFileReport] = []
    sources: list[AuditableFile] = [binary]
    for extra in discovered:
        if extra is not binary and _auditable(extra):
            sources.append(extra)
    for given_path in given:
        report, opened = _given_debug_file(binary, given_path, options)
        file_reports.append(report)
        if opened is not None and all(opened.path.resolve() != source.path.resolve() for source in sources):
            sources.append(opened)
    file_reports[:0] = _located_files(binary, sections, discovered, refused)

    coverages = [source.coverage() for source in sources]
    summaries = [source.debug_info() for source in sources]
    symbols = _union(coverage.symbols for coverage in coverages)
    lines = _union(coverage.lines for coverage in coverages)
    functions = _union(coverage.functions for coverage in coverages)
    inlined = _union(coverage.inlined for coverage in coverages)
    best = max(coverages, key=lambda coverage: covered_bytes(coverage.functions, code))
    coverage_report = CoverageReport(
        code_bytes=sum(high - low for low, high in code),
        symbol_bytes=covered_bytes(symbols, code),
        line_bytes=covered_bytes(lines, code),
        function_bytes=covered_bytes(functions, code),
        inlined_bytes=covered_bytes(inlined, code),
        name_bytes=covered_bytes(_union([symbols, functions]), code),
        inlined_calls=best.inlined_entries,
        llvm_bytes_within_functions=best.function_range_bytes,
        llvm_bytes_within_inlined_functions=best.inlined_range_bytes,
    )
    split_units = tuple(
        SplitUnitReport(name, resolved) for coverage in coverages for name, resolved in coverage.split_units
    )
    if split_units:
        file_reports.append(_split_report(binary, split_units))
    debug_info = DebugInfoReport(
        files=tuple(file_reports),
        dwarf_versions=tuple(sorted({v for summary in summaries for v in summary.dwarf_versions})),
        compressed_sections=tuple(
            f"{source.path.name}:{section.name}"
            for source in sources
            for section in source.section_facts()
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
    all_symbols = _function_symbols(sources)
    symbol_report = SymbolReport(_symbol_table_kind(sources, all_symbols), len(all_symbols))
    frame_pointers = audit_frame_pointers(binary, sections, code, all_symbols, functions)
    identity = Identity(
        path=str(binary.path),
        format=binary.format,
        arch=binary.arch,
        debug_id=str(binary.debug_id) if binary.debug_id is not None else None,
        debug_id_kind=binary.debug_id.kind.value if binary.debug_id is not None else None,
    )
    rust = any(_RUST_SYMBOL.match(symbol.name) for symbol in all_symbols)
    verdict = judge(identity, symbol_report, debug_info, coverage_report, frame_pointers, rust=rust)
    return BinaryAudit(identity, symbol_report, debug_info, coverage_report, frame_pointers, verdict)


def _union(range_lists: Iterable[Iterable[AddressRange]]) -> tuple[AddressRange, ...]:
    return merge_ranges(pair for ranges in range_lists for pair in ranges)


def _function_symbols(sources: Sequence[ObjectFile]) -> list[Symbol]:
    found: dict[tuple[str, int], Symbol] = {}
    for source in sources:
        for symbol in source.symbols():
            found.setdefault((symbol.name, symbol.vaddr), symbol)
    return sorted(found.values(), key=lambda symbol: (symbol.vaddr, symbol.name))


def _symbol_table_kind(sources: Sequence[AuditableFile], symbols: Sequence[Symbol]) -> SymbolTableKind:
    names = {section.name for source in sources for section in source.section_facts()}
    if not symbols:
        return SymbolTableKind.NONE
    if ".symtab" in names:
        return SymbolTableKind.FULL
    if ".gnu_debugdata" in names:
        return SymbolTableKind.MINIDEBUGINFO
    return SymbolTableKind.DYNAMIC_ONLY


def _located_files(
    binary: AuditableFile,
    sections: Sequence[SectionFact],
    discovered: Sequence[ObjectFile],
    refused: Sequence[str],
) -> list[DebugFileReport]:
    """Where the binary's debug info lives: in itself, and where its build ID and debuglink point."""
    reports: list[DebugFileReport] = []
    summary: DebugInfoSummary = binary.debug_info()
    if summary.has_dwarf:
        versions = ", ".join(str(version) for version in summary.dwarf_versions)
        reports.append(DebugFileReport("embedded", str(binary.path), True, None, f"DWARF {versions}".strip()))
    names = {section.name for section in sections}
    if ".gnu_debugdata" in names:
        reports.append(
            DebugFileReport("minidebuginfo", str(binary.path), True, None, "local function symbols in .gnu_debugdata")
        )
    separate = [found for found in discovered if found is not binary]
    found_by_id = [found for found in separate if ".build-id" in found.path.parts]
    link = binary.debug_link()
    if binary.debug_id is not None:
        refusals = [reason for reason in refused if "/.build-id/" in reason]
        if found_by_id:
            reports.append(DebugFileReport("build-id", str(found_by_id[0].path), True, True, "build ID matches"))
        elif refusals:
            reports.append(DebugFileReport("build-id", *_refused(refusals[0])))
        elif not summary.has_dwarf and link is None:
            # Informational: the build ID is the only way left to find debug info; its absence is
            # a reason only through the coverage it would have given.
            reports.append(
                DebugFileReport("build-id", None, False, None, f"no .build-id/{str(binary.debug_id)[:2]}/... file")
            )
    if link is not None:
        by_link = [found for found in separate if found.path.name == link.filename and found not in found_by_id]
        refusals = [reason for reason in refused if link.filename in reason and "/.build-id/" not in reason]
        if by_link:
            reports.append(DebugFileReport("debuglink", str(by_link[0].path), True, True, "CRC32 and build ID match"))
        elif found_by_id:
            pass  # the build-ID file serves; the debuglink is not needed
        elif refusals:
            reports.append(DebugFileReport("debuglink", *_refused(refusals[0])))
        else:
            reports.append(DebugFileReport("debuglink", None, False, None, f"{link.filename} not found"))
    return reports


def _refused(reason: str) -> tuple[str | None, bool, bool, str]:
    """(path, found, matches, detail) of a candidate discovery refused ("<path>: <why>")."""
    head, colon, rest = reason.partition(": ")
    return (head, True, False, rest) if colon else (None, True, False, reason)


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


def _given_debug_file(
    binary: ObjectFile, path: Path, options: DiscoveryOptions
) -> tuple[DebugFileReport, AuditableFile | None]:
    """A ``--debug-file``: used when its build ID (or, without one, the debuglink CRC32) matches."""
    try:
        opened = options.cache.open(path)
    except MissingDebugInfoError:
        return DebugFileReport("given", str(path), False, None, "file not found"), None
    except SymbolizeError as err:
        return DebugFileReport("given", str(path), True, False, err.reason), None
    if binary.debug_id is not None:
        if opened.debug_id != binary.debug_id:
            found = str(opened.debug_id) if opened.debug_id is not None else "none"
            return DebugFileReport("given", str(path), True, False, f"build ID {found} is not the binary's"), None
    else:
        link = binary.debug_link()
        if link is None:
            return DebugFileReport("given", str(path), True, None, "the binary has no build ID or debuglink"), None
        crc = zlib.crc32(path.read_bytes())
        if crc != link.crc32:
            return DebugFileReport("given", str(path), True, False, f"CRC32 {crc:08x} is not {link.crc32:08x}"), None
    if not _auditable(opened):
        return DebugFileReport("given", str(path), True, None, f"no auditor yet for {opened.format} files"), None
    return DebugFileReport("given", str(path), True, True, "matches"), opened

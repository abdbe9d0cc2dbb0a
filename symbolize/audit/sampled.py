"""Auditing a binary whose reader offers no coverage of its own: measured by asking it.

Readers that answer ``section_facts()`` and ``coverage()`` (ELF) are audited
exactly (``binary.py``). Any other reader (PE with its PDB, Mach-O with its
dSYM, as they land) is audited through its public surface alone: its
executable segments are the code; up to ``SAMPLE_ADDRESSES`` addresses spread
evenly over them are looked up through the same Module a profile's addresses
go through (the image and the debug files discovery located for its hints),
and the shares named, with a line and with inlined frames are the shares of
those lookups (an estimate: the report says so in ``coverage_note``). Debug
files are those the image's hints lead to through the locator registry, and
``--debug-file`` files whose debug ID is the image's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from symbolize.audit.frames import UNWIND_SECTIONS, audit_frame_pointers
from symbolize.audit.report import (
    BinaryAudit,
    CoverageReport,
    DebugFileReport,
    DebugInfoReport,
    Identity,
    SymbolReport,
    SymbolTableKind,
)
from symbolize.audit.verdict import judge
from symbolize.discovery import DiscoveryOptions, LookupContext, locate
from symbolize.discovery.registry import READER_HINTS
from symbolize.formats.errors import MalformedInputError, MissingDebugInfoError, SymbolizeError
from symbolize.formats.facts import merge_ranges
from symbolize.formats.types import Frame, HintKind, ObjectFile, Symbol
from symbolize.module import Module, Unknown

SAMPLE_ADDRESSES = 4096


def audit_by_lookups(image: ObjectFile, given: Sequence[Path], options: DiscoveryOptions) -> BinaryAudit:
    """The audit of ``image`` from its segments, symbols, hints and lookups (see the module docstring)."""
    code, section_names = _code_ranges(image)
    code_bytes = sum(high - low for low, high in code)
    reports: list[DebugFileReport] = []
    debug_files: list[ObjectFile] = []
    context = LookupContext(options, image.path, image.path, image.arch, image.debug_id)
    hints = list(image.debug_hints())
    own_dwarf = _has_dwarf(image)
    if own_dwarf:
        reports.append(DebugFileReport("embedded", str(image.path), True, None, "DWARF"))
    for hint in hints:
        if hint.kind in READER_HINTS:
            continue
        refused: list[str] = []
        located = locate(hint, context, refused)
        if located is not None:
            reports.append(DebugFileReport(hint.kind.value, str(located.path), True, True, "debug ID matches"))
            debug_files.append(_bound(located.opened, image))
        elif refused:
            where, _colon, why = refused[0].partition(": ")
            reports.append(DebugFileReport(hint.kind.value, where if why else None, True, False, why or refused[0]))
        elif hint.kind is HintKind.BUILD_ID and (own_dwarf or len(hints) > 1):
            continue  # only where debug info could also have been: not a claim the image makes
        elif not hint.name and own_dwarf:
            continue  # an RSDS record naming no PDB (MinGW's --build-id): the DWARF is in the image
        else:
            reports.append(DebugFileReport(hint.kind.value, None, False, None, f"{hint.name or 'file'} not found"))
    for path in given:
        report, opened = _given(image, path, options)
        reports.append(report)
        if opened is not None:
            debug_files.append(_bound(opened, image))
    module = Module(image, list(debug_files))
    sample = _spread(code, SAMPLE_ADDRESSES)
    results = module.lookup(sample) if sample else []
    named, lined, inlined = _shares(results)
    symbols = _symbols([image, *debug_files])
    summaries = []
    for source in [*debug_files, image]:
        try:
            summaries.append(source.debug_info())
        except MalformedInputError:
            continue
    coverage = CoverageReport(
        code_bytes=code_bytes,
        symbol_bytes=round(named * code_bytes),
        line_bytes=round(lined * code_bytes),
        # Line records come with the function records inline chains are read from (PDB, dSYM).
        function_bytes=round(lined * code_bytes),
        inlined_bytes=round(inlined * code_bytes),
        name_bytes=round(named * code_bytes),
        inlined_calls=sum(1 for result in results if isinstance(result, list) and len(result) > 1),
        llvm_bytes_within_functions=0,
        llvm_bytes_within_inlined_functions=0,
    )
    debug_info = DebugInfoReport(
        files=tuple(reports),
        dwarf_versions=tuple(sorted({v for summary in summaries for v in summary.dwarf_versions})),
        compressed_sections=(),
        split_units=(),
        broken_units=(),
        file_bytes=image.path.stat().st_size,
    )
    kind = SymbolTableKind.FULL if symbols else SymbolTableKind.NONE
    symbol_report = SymbolReport(kind, len(symbols))
    unwind = tuple(name for name in UNWIND_SECTIONS if name in section_names)
    frame_pointers = audit_frame_pointers(image, unwind, code, symbols, ())
    frame_pointers = frame_pointers._replace(
        note="; ".join(filter(None, [frame_pointers.note, f"coverage estimated from {len(sample)} lookups"]))
    )
    identity = Identity(
        path=str(image.path),
        format=image.format,
        arch=image.arch,
        debug_id=str(image.debug_id) if image.debug_id is not None else None,
        debug_id_kind=image.debug_id.kind.value if image.debug_id is not None else None,
    )
    verdict = judge(identity, symbol_report, debug_info, coverage, frame_pointers)
    return BinaryAudit(identity, symbol_report, debug_info, coverage, frame_pointers, verdict)


def _code_ranges(image: ObjectFile) -> tuple[tuple[tuple[int, int], ...], set[str]]:
    """The image's code, and the names of its sections (or segments).

    From the reader's sections when it lists them with an instruction flag (Mach-O's
    ``__TEXT`` segment also holds the headers and constants), else from the executable
    segments: what is both loaded and stored (a PE section's raw size is padded).
    """
    segments = image.segments()
    names = {segment.name for segment in segments}
    listed = getattr(image, "sections", None)
    sections = list(listed()) if callable(listed) else []
    if sections and all(hasattr(section, "has_instructions") for section in sections):
        names |= {str(section.name) for section in sections}
        code = merge_ranges(
            (section.vaddr, section.vaddr + section.size) for section in sections if section.has_instructions
        )
        return code, names
    code = merge_ranges(
        (s.vaddr, s.vaddr + min(s.memsz, s.filesz)) for s in segments if s.executable and min(s.memsz, s.filesz)
    )
    return code, names


def _bound(source: ObjectFile, image: ObjectFile) -> ObjectFile:
    """``source`` answering at ``image``'s vaddrs: a PDB adds its RVAs to the image's ImageBase."""
    bind = getattr(source, "bind_image", None)
    if callable(bind):
        bind(image)
    return source


def _has_dwarf(image: ObjectFile) -> bool:
    try:
        return image.debug_info().has_dwarf
    except MalformedInputError:
        return True


def _spread(code: Sequence[tuple[int, int]], count: int) -> list[int]:
    """Up to ``count`` addresses spread evenly over the code ranges, in order."""
    total = sum(high - low for low, high in code)
    if total == 0:
        return []
    step = max(1, total // count)
    addresses: list[int] = []
    for low, high in code:
        addresses.extend(range(low, high, step))
    return addresses


def _shares(results: Sequence[list[Frame] | Unknown]) -> tuple[float, float, float]:
    if not results:
        return 0.0, 0.0, 0.0
    frames = [result for result in results if isinstance(result, list) and result]
    named = sum(1 for result in frames if result[-1].function) / len(results)
    lined = sum(1 for result in frames if result[0].line > 0) / len(results)
    inlined = sum(1 for result in frames if len(result) > 1) / len(results)
    return named, lined, inlined


def _symbols(sources: Sequence[ObjectFile]) -> list[Symbol]:
    found: dict[tuple[str, int], Symbol] = {}
    for source in sources:
        symbols = getattr(source, "symbols", None)
        if not callable(symbols):
            continue
        for symbol in symbols():
            found.setdefault((symbol.name, symbol.vaddr), symbol)
    return sorted(found.values(), key=lambda symbol: (symbol.vaddr, symbol.name))


def _given(image: ObjectFile, path: Path, options: DiscoveryOptions) -> tuple[DebugFileReport, ObjectFile | None]:
    """A ``--debug-file``: used when its debug ID is the image's."""
    try:
        opened = options.open(path, image_path=image.path, arch=image.arch)
    except MissingDebugInfoError:
        return DebugFileReport("given", str(path), False, None, "file not found"), None
    except SymbolizeError as err:
        return DebugFileReport("given", str(path), True, False, err.reason), None
    if image.debug_id is None or opened.debug_id != image.debug_id:
        found = str(opened.debug_id) if opened.debug_id is not None else "none"
        return DebugFileReport("given", str(path), True, False, f"debug ID {found} is not the image's"), None
    return DebugFileReport("given", str(path), True, True, "debug ID matches"), opened

"""The compiled DWARF answer source (``_kernels.DwarfUnits``, native/src/dwarf/) against the Python runs.

For every unit of every fixture binary with DWARF (ELF, its separate debug files, Mach-O dSYMs and
debug-map objects, MinGW PE) and of the installed libpython, the compiled unit's columns, named by
the shared :func:`~symbolize.formats.dwarf.answers.chain_head`, must give the runs the Python
reference (``DwarfSymbolAnswers.answers`` with the compiled source switched off) gives: the same
addresses, the same frames, no broken span the reference does not have. A unit the compiled source
leaves to the reference (``unit_runs`` returns None) is counted; one that is ordinary (not a split
skeleton, no dwz file, nothing the reference finds broken) fails the test unless
:data:`DEFERRED` lists it with its reason. Lookups of hypothesis-drawn addresses through both
paths (``lookup_runs``, as a cold lookup asks) must answer alike, errors included.
Skipped where the kernels are not built or not enabled.
"""

from __future__ import annotations

import sysconfig
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.api import open_module
from symbolize.formats.answers import AnswerLookup
from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import answers as dwarf_answers
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
from symbolize.formats.dwarf.info import _is_skeleton
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.macho.debugmap import DebugMapSource
from symbolize.formats.macho.slices import list_slices
from symbolize.formats.native import kernels
from symbolize.module import Module
from tests.dwarf_builder import answering, getter
from tests.fixtures_data import BIN, FIXTURES, MACOS_BIN, WINDOWS_BIN
from tests.hostile_dwarf import (
    abbrev_offsets_apart_case,
    deep_skip_case,
    nested_inlines_case,
    past_address_space_case,
    shared_table_case,
)
from tests.kernel_twins import compiled_unit_runs, kernels_in, reference_runs, table_answers

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)

# Ordinary units the compiled source still leaves to the Python runs, by (file relative to the
# fixtures, architecture or "", unit offset): why. An entry whose unit the compiled source answers
# fails the test too, so the list shrinks as the compiled source widens.
DEFERRED: dict[tuple[str, str, int], str] = {}

MACHO_MAGICS = (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
SEARCH = (BIN, MACOS_BIN, WINDOWS_BIN, BIN / "debug", BIN / "cargo-unpacked")
LIBPYTHON = Path(sysconfig.get_config_var("LIBDIR") or "/nonexistent") / str(sysconfig.get_config_var("INSTSONAME"))


def _binaries() -> list[tuple[Path, str | None]]:
    """Every fixture file a reader opens with DWARF beside it (each slice of a universal Mach-O file)."""
    found: list[tuple[Path, str | None]] = []
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix in (".dwo", ".dwp", ".a"):
            continue
        head = path.read_bytes()[:4]
        if head == b"\x7fELF" or head[:2] == b"MZ":
            found.append((path, None))
        elif head in MACHO_MAGICS:
            found += [(path, piece.arch) for piece in list_slices(path)]
    return found


def _name(path: Path) -> str:
    return str(path.relative_to(FIXTURES)) if path.is_relative_to(FIXTURES) else str(path)


class UnitCase:
    """One DWARF answer source of an opened file, and the slice it is of."""

    def __init__(self, source: DwarfSymbolAnswers, arch: str, owner: object) -> None:
        self.source = source
        self.arch = arch
        self.owner = owner  # kept open: the source reads through its files

    @property
    def name(self) -> str:
        return _name(self.source.path)


def _dwarf_sources(module: Module) -> Iterator[DwarfSymbolAnswers]:
    for source in module.sources:
        answers = getattr(getattr(source, "reader", source), "_answers", None)
        found = answers() if answers is not None else None
        if isinstance(found, DwarfSymbolAnswers):
            yield found
        elif isinstance(found, DebugMapSource):
            for name in dict.fromkeys(region.object_name for region in found._regions):
                object_source = found._answers_of(name).source
                if isinstance(object_source, DwarfSymbolAnswers):
                    yield object_source


@cache
def _cases(path: Path, arch: str | None) -> list[UnitCase]:
    module = open_module(path, search_paths=SEARCH, use_cache=False, arch=arch)
    for source in module.sources:  # split units and the dwz file supplied, as a lookup would
        asked = getattr(source, "answer_regions", None)
        if asked is not None and hasattr(source, "reader"):
            for region in asked():
                if region.needs:
                    source.answers(region.key)
    return [UnitCase(source, arch or "", module) for source in _dwarf_sources(module)]


def _compare_units(case: UnitCase) -> Counter[str]:
    """Every unit of ``case`` both ways; the count of units answered and of each kind deferred."""
    source = case.source
    counts: Counter[str] = Counter()
    states = source.dwarf._load_units()
    dwz = source.dwarf._supplementary_found is not None
    units = source._compiled_units()
    assert units is not None
    for key, state in enumerate(states):
        reference = reference_runs(source, key)
        compiled = compiled_unit_runs(source, key)
        listed = (case.name, case.arch, state.unit.offset)
        if compiled is not None:
            assert compiled == reference, f"{case.name} unit at {state.unit.offset:#x}: the compiled runs differ"
            assert ("answered", *table_answers(source.answers(key))) == compiled  # the wired path asks the same
            assert listed not in DEFERRED, f"{listed} is answered now: take it off DEFERRED"
            counts["answered"] += 1
        elif _is_skeleton(state.unit):
            counts["deferred: split skeleton"] += 1
        elif dwz:
            counts["deferred: dwz"] += 1
        elif reference[0] == "raised" or reference[2]:
            counts["deferred: damaged"] += 1
        else:
            why = units.deferral(state.unit.offset, source.functions_only)
            assert listed in DEFERRED, f"{listed}: an ordinary unit the compiled source defers ({why})"
            counts[f"deferred: {DEFERRED[listed]}"] += 1
    return counts


BINARIES = _binaries()


@cache
def _file_counts(path: Path, arch: str | None) -> Counter[str]:
    counts: Counter[str] = Counter()
    for case in _cases(path, arch):
        counts.update(_compare_units(case))
    return counts


@pytest.mark.parametrize(("path", "arch"), BINARIES, ids=[f"{_name(path)}:{arch or ''}" for path, arch in BINARIES])
def test_every_fixture_unit_answers_as_the_reference(path: Path, arch: str | None) -> None:
    if not _file_counts(path, arch):
        pytest.skip("no DWARF")


def test_the_compiled_source_answers_most_fixture_units() -> None:
    """Not a vacuous pass: the compiled source answers most fixture units itself (the counts are
    printed: ``pytest -s``)."""
    counts: Counter[str] = Counter()
    for path, arch in BINARIES:
        counts.update(_file_counts(path, arch))
    print(f"fixture units: {dict(counts)}")
    assert counts["answered"] >= sum(counts.values()) // 2, dict(counts)


@pytest.mark.skipif(not LIBPYTHON.is_file(), reason="no shared libpython installed")
def test_every_libpython_unit_answers_as_the_reference() -> None:
    with ElfFile(LIBPYTHON) as elf:
        source = elf._answers()
        assert isinstance(source, DwarfSymbolAnswers)
        counts = _compare_units(UnitCase(source, "", elf))
    print(f"libpython units: {dict(counts)}")
    assert counts["answered"] > 0, dict(counts)


@cache
def _lookup_case(name: str, arch: str | None) -> UnitCase:
    (case,) = _cases(BIN / name if arch is None else MACOS_BIN / name, arch)[:1]
    return case


def _looked_up(source: DwarfSymbolAnswers, vaddrs: list[int], compiled: bool) -> list[object]:
    """``vaddrs`` looked up on a fresh lookup each time: through the compiled source's whole units
    (``answers``, what the index stores), or as a cold lookup of the Python reference does
    (``lookup_runs``, one function at a time)."""
    with kernels_in(kernels if compiled else None, dwarf_answers):
        return frames_each(AnswerLookup(source.answer_regions(), source.answers if compiled else source.lookup_runs),
                           vaddrs)


def frames_each(lookup: AnswerLookup, vaddrs: list[int]) -> list[object]:
    """``lookup.frames_at`` of each vaddr in order, or what it raises."""
    found: list[object] = []
    for vaddr in vaddrs:
        try:
            found.append(lookup.frames_at(vaddr))
        except MalformedInputError as error:
            found.append(("raised", type(error), str(error)))
    return found


LOOKUP_CASES = [("cdemo-gcc-dwarf4-pie", None), ("cppdemo-gcc-dwarf5-pie", None), ("cppdemo-clang-dwarf4-pie", None),
                ("rustdemo-full", None), ("cppdemo-universal", "arm64"), ("cdemo-x86_64", "x86_64")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), chosen=st.sampled_from(LOOKUP_CASES))
def test_drawn_addresses_look_up_alike(data: st.DataObject, chosen: tuple[str, str | None]) -> None:
    source = _lookup_case(*chosen).source
    regions = [region for region in source.answer_regions() if region.key >= 0 and region.low < region.high]
    inside = st.sampled_from(regions).flatmap(lambda region: st.integers(max(region.low - 4, 0), region.high + 4))
    vaddrs = data.draw(st.lists(inside | st.integers(0, 1 << 64), min_size=1, max_size=40))
    assert _looked_up(source, vaddrs, compiled=True) == _looked_up(source, vaddrs, compiled=False)


HOSTILE_SHAPES = {
    "20,000 nested lexical blocks": lambda: deep_skip_case(20_000)[0],
    "6,000 nested inlined calls": lambda: nested_inlines_case(6_000)[0],
    "2,000 units sharing one table": lambda: shared_table_case(units=2_000, table_size=500)[0],
    "600 units apart in one table": lambda: abbrev_offsets_apart_case(600)[0],
    "a range past the address space": lambda: past_address_space_case()[0],
}


@pytest.mark.parametrize("shape", list(HOSTILE_SHAPES))
def test_hostile_shapes_answer_as_the_reference_or_are_deferred(shape: str) -> None:
    """The shapes tests/test_hostile_input.py bounds the Python reader's work on: the compiled
    source answers them as the reference does (without exhausting its stack), or defers."""
    source = answering(DwarfInfo(getter(HOSTILE_SHAPES[shape]()), Path(shape)))
    answered = 0
    for key in range(len(source.dwarf._load_units())):
        compiled = compiled_unit_runs(source, key)
        if compiled is not None:
            assert compiled == reference_runs(source, key), f"unit {key}"
            answered += 1
    assert answered, "the compiled source deferred every unit"


class _FailingUnits:
    """Stands for a DwarfUnits whose Rust panicked: it raises what the source raises for a caught panic."""

    def unit_runs(self, unit_offset: int, functions_only: bool) -> None:
        assert kernels is not None
        raise kernels.CompiledDwarfError("the compiled DWARF reader failed (index out of bounds)")


def test_a_failure_of_the_compiled_source_is_the_readers_typed_error_naming_the_file() -> None:
    with ElfFile(BIN / "cdemo-gcc-dwarf5-pie") as elf:
        source = elf._answers()
        assert isinstance(source, DwarfSymbolAnswers)
        source._compiled = (_FailingUnits(),)  # type: ignore[assignment]
        with pytest.raises(MalformedInputError, match="compiled DWARF reader failed") as raised:
            source.answers(0)
        assert raised.value.path == BIN / "cdemo-gcc-dwarf5-pie"


def _compare_finding(name: str) -> None:
    """Both sides on the fuzz finding ``tests/data/<name>`` (fuzz_compiled_dwarf.py's input), rows
    answering everywhere and only inside functions; raises AssertionError where they differ."""
    import importlib.util

    fuzz = FIXTURES.parent / "fuzz"
    spec = importlib.util.spec_from_file_location("fuzz_compiled_dwarf", fuzz / "fuzz_compiled_dwarf.py")
    assert spec is not None and spec.loader is not None
    target = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(target)
    found = target.sections_of((FIXTURES.parent / "tests" / "data" / name).read_bytes())
    assert found is not None
    chosen, sections, functions_only = found
    for flag in (functions_only, not functions_only):
        target.compare(chosen, sections, flag)


def test_entries_after_the_roots_children_are_left_to_the_reference() -> None:
    """A fuzz finding (fuzz_compiled_dwarf.py in CI's smoke run, kept in tests/data/): a MinGW
    unit's ``.debug_info`` mutated so that entries follow the root's children, one naming an
    undefined abbreviation. The reference's walk reads on and refuses the unit; the compiled walk
    stopped at the root's end and answered it. It defers there now."""
    _compare_finding("compiled_dwarf_entries_after_root.bin")


def test_a_sibling_link_past_its_parents_null_entry_is_left_to_the_reference() -> None:
    """A fuzz finding (kept in tests/data/): a MinGW unit's ``.debug_info`` mutated so that a
    declaration without a sibling link (GCC's last child) holds a DIE whose ``DW_AT_sibling``
    points past the null entry that ends its parent's children. By the spec the null entries
    shape the tree (DWARF 5, 2.3 and 7.5.2; ``DW_AT_sibling`` only says where the next sibling
    is): the parent ends at its null entry, the root a little later, and the unit's functions
    after that are no one's children, so the reference names none there. The compiled walk went
    inside the parent, took the link, and named ``sort_values`` from beyond the root's end. It
    checks a link it takes inside such a subtree against the null entries now, and defers where
    they disagree."""
    _compare_finding("compiled_dwarf_truncated_unit.bin")

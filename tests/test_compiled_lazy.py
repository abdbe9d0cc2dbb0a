"""A cold lookup through the compiled source's lazy units (``_kernels.LazyUnit``) against the Python runs.

``DwarfSymbolAnswers.lookup_runs`` answers a unit the compiled source takes span by span in Rust
(the tree and line table decoded once, each span's runs built when an address lands in it); the
Python runs (``UnitRuns``, the reference) answer the rest, and a unit the compiled source gives up
on midway from then on. Every fixture binary with DWARF and the installed libpython must answer
alike both ways, frame for frame and error for error, at every run's edges and at drawn addresses.
Skipped where the kernels are not built or not enabled.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.answers import AnswerLookup
from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import answers as dwarf_answers
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers, _CompiledLazyRuns
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.native import kernels
from tests.dwarf_builder import answering, getter
from tests.kernel_twins import kernels_in

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)

from tests.test_compiled_dwarf import (
    BINARIES,
    HOSTILE_SHAPES,
    LIBPYTHON,
    LOOKUP_CASES,
    _cases,
    _lookup_case,
    _name,
    frames_each,
)


def _lookups(source: DwarfSymbolAnswers, vaddrs: list[int], compiled: bool) -> list[object]:
    """``vaddrs`` asked in order of one fresh lookup: through the compiled lazy units (``compiled``)
    or the Python runs alone."""
    with kernels_in(kernels if compiled else None, dwarf_answers):
        return frames_each(AnswerLookup(source.answer_regions(), source.lookup_runs), vaddrs)


def _edges(source: DwarfSymbolAnswers, most: int = 150) -> list[int]:
    """Each region's edges, and each run's first, last and middle address (the runs the index stores),
    at most ``most`` of them (drawn with a fixed seed), shuffled: spans built in any order answer alike."""
    vaddrs: set[int] = set()
    for region in source.answer_regions():
        vaddrs.update((max(region.low - 1, 0), region.low, max(region.high - 1, 0), region.high))
        if region.key < 0:
            continue
        try:
            table = source.answers(region.key)
        except MalformedInputError:
            continue
        for low, high in zip(table.lows, table.highs, strict=True):  # type: ignore[attr-defined]
            vaddrs.update((low, high - 1, (low + high) // 2))
    drawn = random.Random(1234)
    return drawn.sample(sorted(vaddrs), min(most, len(vaddrs)))


def _lazy_units(source: DwarfSymbolAnswers) -> int:
    """How many of ``source``'s units the compiled source answers lazily (not vacuous)."""
    return sum(isinstance(source.lookup_runs(key), _CompiledLazyRuns)
               for key in range(len(source.dwarf._load_units())) if source.dwarf._load_units()[key].error is None)


@pytest.mark.parametrize(("path", "arch"), BINARIES, ids=[f"{_name(path)}:{arch or ''}" for path, arch in BINARIES])
def test_every_fixture_looks_up_as_the_reference(path: Path, arch: str | None) -> None:
    cases = _cases(path, arch)
    if not cases:
        pytest.skip("no DWARF")
    for case in cases:
        vaddrs = _edges(case.source)
        assert _lookups(case.source, vaddrs, compiled=True) == _lookups(case.source, vaddrs, compiled=False), \
            case.name


def test_the_lazy_units_answer_most_fixture_units() -> None:
    lazy = total = 0
    for name, arch in LOOKUP_CASES:
        source = _lookup_case(name, arch).source
        lazy += _lazy_units(source)
        total += len(source.dwarf._load_units())
    assert lazy >= total // 2, (lazy, total)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), chosen=st.sampled_from(LOOKUP_CASES))
def test_drawn_addresses_look_up_alike(data: st.DataObject, chosen: tuple[str, str | None]) -> None:
    source = _lookup_case(*chosen).source
    regions = [region for region in source.answer_regions() if region.key >= 0 and region.low < region.high]
    inside = st.sampled_from(regions).flatmap(lambda region: st.integers(max(region.low - 4, 0), region.high + 4))
    vaddrs = data.draw(st.lists(inside | st.integers(0, 1 << 64), min_size=1, max_size=40))
    assert _lookups(source, vaddrs, compiled=True) == _lookups(source, vaddrs, compiled=False)


@pytest.mark.parametrize("shape", list(HOSTILE_SHAPES))
def test_hostile_shapes_look_up_as_the_reference(shape: str) -> None:
    source = answering(DwarfInfo(getter(HOSTILE_SHAPES[shape]()), Path(shape)))
    vaddrs = _edges(source)
    assert _lookups(source, vaddrs, compiled=True) == _lookups(source, vaddrs, compiled=False)


@pytest.mark.skipif(not LIBPYTHON.is_file(), reason="no shared libpython installed")
def test_libpython_looks_up_as_the_reference() -> None:
    with ElfFile(LIBPYTHON) as elf:
        source = elf._answers()
        assert isinstance(source, DwarfSymbolAnswers)
        regions = [region for region in source.answer_regions() if region.key >= 0 and region.low < region.high]
        drawn = random.Random(1234)
        vaddrs = [drawn.randrange(region.low, region.high) for region in drawn.choices(regions, k=300)]
        assert _lookups(source, vaddrs, compiled=True) == _lookups(source, vaddrs, compiled=False)
        assert _lazy_units(source) > len(regions) // 2


class _DeferringUnit:
    """A lazy unit that gives up on its second address, as one whose chain it cannot name does
    (``fault``: or fails there, as a caught panic does)."""

    def __init__(self, lazy: object, fault: str = "CompiledDwarfDeferred") -> None:
        self.lazy = lazy
        self.asked = 0
        self.fault = fault
        self.file_names = lazy.file_names  # type: ignore[attr-defined]

    def run_at(self, vaddr: int) -> object:
        self.asked += 1
        if self.asked > 1:
            raise getattr(kernels, self.fault)("a chain the compiled source cannot name")
        return self.lazy.run_at(vaddr)  # type: ignore[attr-defined]

    def runs_at(self, vaddrs: list[int]) -> list[object]:
        """The batch as LazyUnit.runs_at gives it: the list ends with what run_at raises."""
        found: list[object] = []
        for vaddr in vaddrs:
            try:
                found.append(self.run_at(vaddr))
            except Exception as error:
                found.append(error)
                break
        return found

    def chain(self, chain: int) -> object:
        return self.lazy.chain(chain)  # type: ignore[attr-defined]


def test_a_unit_given_up_midway_is_answered_by_the_python_runs() -> None:
    source = _lookup_case("cppdemo-gcc-dwarf5-pie", None).source
    key = next(region.key for region in source.answer_regions() if region.key >= 0)
    runs = source.lookup_runs(key)
    assert isinstance(runs, _CompiledLazyRuns)
    deferring = runs._lazy = _DeferringUnit(runs._lazy)  # type: ignore[assignment]
    vaddrs = [vaddr for vaddr in _edges(source) if any(region.key == key and region.low <= vaddr < region.high
                                                       for region in source.answer_regions())]
    with kernels_in(None, dwarf_answers):
        expected = [source.lookup_runs(key).run_at(vaddr) for vaddr in vaddrs]
    assert [runs.run_at(vaddr) for vaddr in vaddrs] == expected
    assert deferring.asked == 2 and runs._python_runs is not None


def _batch(source: DwarfSymbolAnswers, vaddrs: list[int], fault: str | None = None) -> list[object]:
    """``vaddrs`` asked of one fresh lookup in one batch (``frames_many``), as the CLI asks; with
    ``fault``, each compiled unit gives up (or fails) on its second address."""
    def runs(key: int) -> object:
        found = source.lookup_runs(key)
        if fault is not None and isinstance(found, _CompiledLazyRuns):
            found._lazy = _DeferringUnit(found._lazy, fault)  # type: ignore[assignment]
        return found

    lookup = AnswerLookup(source.answer_regions(), runs)  # type: ignore[arg-type]
    return [("raised", type(found), str(found)) if isinstance(found, MalformedInputError) else found
            for found in lookup.frames_many(vaddrs)]


class _OneAtATime:
    """Lazy runs asked only through ``run_at``: the lookup's per-address path."""

    def __init__(self, runs: _CompiledLazyRuns) -> None:
        self.run_at = runs.run_at


def _one_by_one(source: DwarfSymbolAnswers, vaddrs: list[int], fault: str) -> list[object]:
    """:func:`_batch`'s question asked one address at a time (``run_at``), the same fault injected."""
    def runs(key: int) -> object:
        found = source.lookup_runs(key)
        if isinstance(found, _CompiledLazyRuns):
            found._lazy = _DeferringUnit(found._lazy, fault)  # type: ignore[assignment]
            return _OneAtATime(found)
        return found

    return frames_each(AnswerLookup(source.answer_regions(), runs), vaddrs)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["cppdemo-gcc-dwarf5-pie", "rustdemo-full"])
def test_a_batch_looks_up_as_one_address_at_a_time(name: str) -> None:
    """A batch asks each unit for all its addresses at once (``LazyUnit.runs_at``): the answers
    are the reference's, also where a unit gives up or fails midway through its batch."""
    source = _lookup_case(name, None).source
    vaddrs = _edges(source, most=400)
    vaddrs += vaddrs[:20]  # an address asked twice in one batch
    expected = _lookups(source, vaddrs, compiled=False)
    assert _batch(source, vaddrs) == expected
    assert _batch(source, vaddrs, "CompiledDwarfDeferred") == expected
    failing = _batch(source, vaddrs, "CompiledDwarfError")
    assert failing == _one_by_one(source, vaddrs, "CompiledDwarfError")
    assert failing != expected  # the fault was met: the units it broke answer with its error


@pytest.mark.parametrize("finding", ["compiled_dwarf_truncated_unit.bin", "compiled_dwarf_entries_after_root.bin"])
def test_the_compiled_dwarf_findings_look_up_as_the_reference(finding: str) -> None:
    """fuzz_compiled_dwarf's findings (tests/data/), each a unit the compiled walk must leave to the
    reference, asked as a cold lookup asks (fuzz/fuzz_compiled_lazy.py's comparison)."""
    from fuzz.fuzz_compiled_lazy import compare, sections_of

    found = sections_of((Path(__file__).parent / "data" / finding).read_bytes())
    assert found is not None
    assert compare(*found) > 0


def test_lazy_units_answer_from_several_threads() -> None:
    """A long-lived reader (``symbolize serve``) asks from its request threads: units made in one
    thread answer in others, alike."""
    from concurrent.futures import ThreadPoolExecutor

    source = _lookup_case("rustdemo-full", None).source
    vaddrs = _edges(source, most=300)
    expected = _lookups(source, vaddrs, compiled=False)
    lookup = AnswerLookup(source.answer_regions(), source.lookup_runs)
    lookup.frames_at(vaddrs[0])  # a unit made here, asked in the workers

    def frames(vaddr: int) -> object:
        try:
            return lookup.frames_at(vaddr)
        except MalformedInputError as error:
            return ("raised", type(error), str(error))

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(frames, vaddrs)) == expected


def test_lazy_units_of_one_file_keep_their_own_state() -> None:
    """A file's lazy units share the units they decode (``lazy::LazyFile``) but not their spans
    and chains: one dropped, another of the same unit answers on, and one opened after it alike."""
    source = _lookup_case("rustdemo-full", None).source
    regions = [region for region in source.answer_regions() if region.key >= 0 and region.low < region.high]
    key = max(regions, key=lambda region: region.high - region.low).key
    vaddrs = [vaddr for vaddr in _edges(source, most=300)
              if any(region.key == key and region.low <= vaddr < region.high for region in regions)]
    assert vaddrs
    with kernels_in(None, dwarf_answers):
        reference = source.lookup_runs(key)
        expected = [reference.run_at(vaddr) for vaddr in vaddrs]
    first, second = source.lookup_runs(key), source.lookup_runs(key)
    assert isinstance(first, _CompiledLazyRuns) and isinstance(second, _CompiledLazyRuns)
    assert [first.run_at(vaddr) for vaddr in vaddrs] == expected
    del first
    assert [second.run_at(vaddr) for vaddr in reversed(vaddrs)] == expected[::-1]
    third = source.lookup_runs(key)
    assert isinstance(third, _CompiledLazyRuns)
    assert [third.run_at(vaddr) for vaddr in vaddrs] == expected

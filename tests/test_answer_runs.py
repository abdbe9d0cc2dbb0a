"""Region and run layouts at random: AnswerLookup, the flattening the index stores, and the index
itself, each against a brute-force reading of the precedence rule at every address."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.cache import build_index, load_index
from symbolize.formats.answers import AnswerLookup, RunTable, flatten_answers, owned_pieces
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import AnswerRegion, AnswerRun, Frame
from symbolize.index.indexed import IndexedObject
from tests.memory_source import MemorySource

SPAN = 48
_FRAMES = st.sampled_from(
    [
        Frame("a", "a.c", 1, 2, 1),
        Frame("b", None, 0, 0, 0),
        Frame("_ZN1c1dEv", "c.cc", 7, 0, 5),
        Frame(None, "d.c", 3, 1, 0),
        Frame("e"),
    ]
)


@st.composite
def _runs(draw: st.DrawFn) -> list[AnswerRun]:
    points = sorted(draw(st.sets(st.integers(0, SPAN), max_size=8)))
    runs = []
    for low, high in zip(points[::2], points[1::2], strict=False):
        frames = tuple(draw(st.lists(_FRAMES, min_size=1, max_size=3)))
        runs.append(AnswerRun(low, high, frames))
    return runs


@st.composite
def _layouts(draw: st.DrawFn) -> tuple[list[AnswerRegion], dict[int, list[AnswerRun]]]:
    keys = draw(st.integers(1, 4))
    runs = {key: draw(_runs()) for key in range(keys) if draw(st.integers(0, 4))}  # some keys broken
    regions = []
    for _ in range(draw(st.integers(0, 6))):
        low = draw(st.integers(0, SPAN - 1))
        regions.append(
            AnswerRegion(low, draw(st.integers(low, SPAN)), draw(st.integers(0, keys - 1)), draw(st.booleans()))
        )
    return regions, runs


def _reference(regions: list[AnswerRegion], runs: dict[int, list[AnswerRun]], vaddr: int) -> list[Frame] | str:
    """The rule as SymbolSource documents it, at one address: primary regions before fallback
    ones; among them the greatest low first, the later listed first where lows are equal; the
    first run holding the address answers; else the first broken region holding it."""
    order = sorted(enumerate(regions), key=lambda item: (item[1].fallback, -item[1].low, -item[0]))
    error = None
    for _, region in order:
        if not region.low <= vaddr < region.high:
            continue
        if region.key not in runs:
            error = error or f"region {region.key} is broken"
            continue
        for run in runs[region.key]:
            if run.low <= vaddr < run.high:
                return list(run.frames)
    return f"error: {error}" if error else []


def _answer(source: AnswerLookup | IndexedObject | MemorySource, vaddr: int) -> list[Frame] | str:
    try:
        return source.frames_at(vaddr)
    except MalformedInputError as error:
        return f"error: {error.reason}"


@settings(max_examples=300, deadline=None)
@given(_layouts())
def test_lookup_and_flattening_follow_the_rule_at_every_address(
    layout: tuple[list[AnswerRegion], dict[int, list[AnswerRun]]],
) -> None:
    regions, runs = layout
    source = MemorySource(Path("memory"), regions, runs)
    lookup = AnswerLookup(regions, source.answers)
    blocks = flatten_answers(regions, source.answers)
    for (low, high), following in zip(((b.low, b.high) for b in blocks), blocks[1:], strict=False):
        assert low < high <= following.low  # sorted and disjoint
    for vaddr in range(-1, SPAN + 2):
        expected = _reference(regions, runs, vaddr)
        assert _answer(lookup, vaddr) == expected, vaddr
        holding = [block for block in blocks if block.low <= vaddr < block.high]
        if not holding:
            assert expected == []
        elif holding[0].table is None:
            assert expected == f"error: {holding[0].error and holding[0].error.reason}"
        else:
            table = holding[0].table
            run = table.run_at(vaddr)
            assert run is not None and list(run.frames) == expected


@settings(max_examples=120, deadline=None)
@given(_layouts())
def test_the_index_answers_as_its_source_and_keeps_a_lone_regions_runs(
    layout: tuple[list[AnswerRegion], dict[int, list[AnswerRun]]],
) -> None:
    regions, runs = layout
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "memory.bin"
        path.write_bytes(b"x")
        source = MemorySource(path, regions, runs)
        build_index(source, Path(directory) / "cache")
        indexed = load_index(MemorySource(path, regions, runs), Path(directory) / "cache")
        assert indexed is not None
        try:
            for vaddr in range(0, SPAN + 2):
                assert _answer(indexed, vaddr) == _answer(source, vaddr), vaddr
            # One region holding all its runs, nothing else: the index gives those runs back exactly.
            if len(regions) == 1 and regions[0].key in runs:
                region = regions[0]
                inside = [
                    AnswerRun(max(run.low, region.low), min(run.high, region.high), run.frames)
                    for run in runs[region.key]
                    if max(run.low, region.low) < min(run.high, region.high)
                ]
                assert indexed.runs() == inside
                assert list(RunTable.from_runs(inside)) == inside
        finally:
            indexed.close()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 5)), max_size=8))
def test_owned_pieces_give_the_least_rank_holding_each_address(ranges: list[tuple[int, int, int]]) -> None:
    owners = [(low, high, rank, f"item{rank % 3}") for low, high, rank in ranges]
    pieces = owned_pieces(owners)
    found: dict[int, str] = {}
    for low, high, item in pieces:
        assert low < high
        for vaddr in range(low, high):
            found[vaddr] = item
    for vaddr in range(0, 41):
        holding = sorted((rank, item) for low, high, rank, item in owners if low <= vaddr < high)
        # Equal ranks: any of them may win, as long as it is one of the least.
        assert (found.get(vaddr) in {item for rank, item in holding if rank == holding[0][0]}) if holding else (
            vaddr not in found
        )


def test_deep_inline_nesting_builds_runs_without_recursion() -> None:
    """6,000 nested inlined calls at one address (the index builder's recursive descent
    overflowed at 1,200): the whole-unit runs and the lazy lookup give the same 6,001 frames."""
    from symbolize.formats.dwarf import DwarfInfo
    from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
    from symbolize.formats.symbols import SymbolIndex
    from tests.hostile_dwarf import nested_inlines_case

    sections, vaddr = nested_inlines_case(6_000)

    def answers() -> DwarfSymbolAnswers:
        return DwarfSymbolAnswers(Path("nested"), DwarfInfo(sections.get, Path("nested")), SymbolIndex([]))

    (region,) = answers().answer_regions()
    run = answers().answers(region.key).run_at(vaddr)
    assert run is not None and len(run.frames) == 6_001
    assert list(run.frames) == answers().frames_at(vaddr)
    assert [frame.function for frame in run.frames[:2]] == ["i5999", "i5998"] and run.frames[-1].function == "outer"

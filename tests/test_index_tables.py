"""The index's compiled tables (``_kernels.IndexTables``, native/src/dwarf/index.rs) against the
reference builder (symbolize/index/build.py's ``_Builder``): the same arrays, byte for byte.

On fixture binaries, every unit's chains go through the compiled tables' own naming of a compiled
unit (``unit_chains``) and the symbol table's through the tuple path (``chains``); hypothesis draws
tables whose heads share, repeat and nest frames, with strings and numbers only the reference keeps
exact (a lone surrogate, a line past 64 bits, an entry of -1), where the compiled tables must give
the build back to the reference (``IndexTablesDeferred``) rather than differ. Skipped where the
kernels are not built or not enabled.
"""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.answers import ChainHead, RunTable
from symbolize.formats.elf import ElfFile
from symbolize.formats.native import kernels
from symbolize.formats.types import AnswerRegion, AnswerRun, DebugInfoSummary, Frame
from symbolize.index import build
from tests.fixtures_data import BIN
from tests.kernel_twins import kernels_in

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)

FIXTURES = ("cdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf5-pie", "cppdemo-gcc-dwarf4-pie", "rustdemo-full",
            "libshape.so", "cdemo-gcc-symtab")  # fmt: skip


def both_ways(source: object) -> tuple[dict[str, array[int] | bytes], dict[str, array[int] | bytes]]:
    """``source``'s index arrays built by the compiled tables, then by the reference builder (the
    answer source itself compiled both times: only the builder differs)."""
    compiled = build.build_index_arrays(source)  # type: ignore[arg-type]
    with kernels_in(None, build):
        reference = build.build_index_arrays(source)  # type: ignore[arg-type]
    return compiled, reference


def assert_same_arrays(compiled: dict[str, array[int] | bytes], reference: dict[str, array[int] | bytes]) -> None:
    assert list(compiled) == list(reference)
    for name, values in reference.items():
        found = compiled[name]
        assert type(found) is type(values), name
        if isinstance(values, array):
            assert isinstance(found, array)
            assert (found.typecode, found.tobytes()) == (values.typecode, values.tobytes()), name
        else:
            assert found == values, name


@pytest.mark.parametrize("name", FIXTURES)
def test_a_fixtures_index_arrays_are_the_references(name: str) -> None:
    path = BIN / name
    if not path.is_file():
        pytest.skip(f"{name} is not built")
    with ElfFile(path) as elf:
        assert_same_arrays(*both_ways(elf))


class TableSource:
    """A symbol source of one region per table (later tables win where they overlap)."""

    def __init__(self, tables: Sequence[RunTable]) -> None:
        self.tables = tables

    def answer_regions(self) -> list[AnswerRegion]:
        regions = []
        for key, table in enumerate(self.tables):
            if len(table):
                regions.append(AnswerRegion(table.lows[0], table.highs[-1], key))
        return regions

    def answers(self, key: int) -> RunTable:
        return self.tables[key]

    def debug_info(self) -> DebugInfoSummary:
        return DebugInfoSummary(has_symbols=True, has_dwarf=True, has_line_info=True, has_inline_info=True,
                                dwarf_versions=(5,), split_dwarf=False)  # fmt: skip


class _Heads(list[ChainHead]):
    """Chain heads a weak reference can follow."""


class AskedTables:
    """A symbol source whose tables are made as asked and kept by no one else, as a reader's are,
    three regions of one function each; the first table's heads are followed (``first_heads``)."""

    def __init__(self) -> None:
        self.first_heads: weakref.ref[_Heads] | None = None

    def answer_regions(self) -> list[AnswerRegion]:
        return [AnswerRegion(0x1000 * key, 0x1000 * key + 0x10, key) for key in (1, 2, 3)]

    def answers(self, key: int) -> RunTable:
        heads = _Heads([ChainHead(f"f{key}", key, ())])
        if key == 1:
            self.first_heads = weakref.ref(heads)
        table = RunTable(["a.c"], heads)
        table.append(0x1000 * key, 0x1000 * key + 0x10, 0, key, 0, 0)
        return table

    def debug_info(self) -> DebugInfoSummary:
        return TableSource([]).debug_info()


@pytest.mark.parametrize("builder", ["compiled", "reference"])
def test_a_table_goes_once_its_runs_are_laid_out(builder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every table waits in the flattened blocks for its turn, and a compiled unit's heads hold its
    # chains: each table must go once laid out, not with the whole layout.
    source = AskedTables()
    alive_when_asked: list[bool] = []
    for builder_class in (build._Builder, build._CompiledTables):
        table_chains = builder_class.table_chains

        def watched(self: build._Builder, table: RunTable, table_chains: Any = table_chains) -> Sequence[int]:
            assert source.first_heads is not None
            alive_when_asked.append(source.first_heads() is not None)
            return table_chains(self, table)  # type: ignore[no-any-return]

        monkeypatch.setattr(builder_class, "table_chains", watched)
    with kernels_in(kernels if builder == "compiled" else None, build):
        arrays = build.build_index_arrays(source)  # type: ignore[arg-type]
    assert alive_when_asked == [True, False, False]
    assert len(arrays["run_low"]) == 6  # three runs, each followed by a gap


names = st.one_of(st.none(), st.sampled_from(["main", "f", "", "_ZN3foo3barE", "naïve", "\udcff", "x\ud800"]))
numbers = st.one_of(st.integers(0, 300), st.sampled_from([-1, -(1 << 70), (1 << 64) - 1, 1 << 64, 1 << 130]))
entries = st.one_of(st.none(), st.integers(0, 1 << 20), st.sampled_from([-1, (1 << 64) - 1]))
frames = st.builds(Frame, names, names, numbers, numbers, numbers, names, entries, numbers)


@st.composite
def run_tables(draw: st.DrawFn) -> list[RunTable]:
    pool = draw(st.lists(frames, min_size=1, max_size=6))
    outers = [tuple(draw(st.lists(st.sampled_from(pool), max_size=4))) for _ in range(draw(st.integers(1, 4)))]
    tables = []
    for _ in range(draw(st.integers(1, 3))):
        heads = [ChainHead(draw(names), draw(numbers), draw(st.sampled_from(outers)), draw(names), draw(names),
                           draw(entries)) for _ in range(draw(st.integers(1, 5)))]  # fmt: skip
        files = draw(st.lists(names, max_size=3))
        table = RunTable(files, heads)
        low = draw(st.integers(0, 1 << 12))
        for _ in range(draw(st.integers(1, 6))):
            high = low + draw(st.integers(1, 64))
            table.append(low, high, draw(st.integers(-1, 3)), draw(st.integers(0, 99)), 0,
                         draw(st.integers(0, len(heads) - 1)), draw(st.integers(0, 3)))  # fmt: skip
            low = high + draw(st.sampled_from([0, 0, 8]))
        tables.append(table)
    return tables


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run_tables())
def test_drawn_tables_index_as_the_reference_indexes_them(tables: list[RunTable]) -> None:
    source = TableSource(tables)
    try:
        reference = TableSource(tables)
        with kernels_in(None, build):
            expected = build.build_index_arrays(reference)  # type: ignore[arg-type]
    except UnicodeEncodeError:
        return  # a surrogate the reference cannot write either: no index to compare
    assert_same_arrays(build.build_index_arrays(source), expected)  # type: ignore[arg-type]


def test_a_string_only_the_reference_keeps_exact_gives_the_build_back() -> None:
    tables = kernels.IndexTables()
    with pytest.raises(kernels.IndexTablesDeferred):
        tables.intern_all(["a", "lone \udcff"])
    frame = Frame("f", None, 1 << 130, 0, 0, None, None, 0)
    with pytest.raises(kernels.IndexTablesDeferred):
        tables.chains([ChainHead("g", 0, (frame,))])
    # A byte the file held that is not UTF-8 (surrogateescape): stored as the reference stores it.
    run = AnswerRun(0x10, 0x20, (Frame("\udcff", None, 1, 0, 0, None, None, 0),))
    assert_same_arrays(*both_ways(TableSource([RunTable.from_runs([run])])))
    # No byte at all: the reference's own error, either way.
    run = AnswerRun(0x10, 0x20, (Frame("\ud800", None, 1, 0, 0, None, None, 0),))
    for builder in (kernels, None):
        with kernels_in(builder, build), pytest.raises(UnicodeEncodeError):
            build.build_index_arrays(TableSource([RunTable.from_runs([run])]))  # type: ignore[arg-type]


def test_an_index_built_with_the_compiled_tables_is_written_as_the_references(tmp_path: Path) -> None:
    from symbolize.cache import build_index

    path = BIN / "cppdemo-gcc-dwarf5-pie"
    if not path.is_file():
        pytest.skip("fixture not built")
    with ElfFile(path) as elf:
        compiled = build_index(elf, tmp_path / "compiled").read_bytes()
    with kernels_in(None, build), ElfFile(path) as elf:
        reference = build_index(elf, tmp_path / "reference").read_bytes()
    assert compiled == reference


@given(st.sampled_from("qQ").flatmap(lambda code: st.tuples(st.just(code), st.lists(
    st.integers(-(1 << 63), (1 << 63) - 1) if code == "q" else st.integers(0, (1 << 64) - 1), max_size=40))))
def test_a_run_column_is_narrowed_as_the_reference_narrows_it(column: tuple[str, list[int]]) -> None:
    code, values = column
    expected = build._narrowest(array(code, values))
    found = build._CompiledTables(kernels.IndexTables()).narrowest(code, array(code, values).tobytes())
    assert (found.typecode, found.tobytes()) == (expected.typecode, expected.tobytes())


@given(
    st.lists(st.integers(0, (1 << 64) - 1), max_size=6), st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=20)
)
def test_a_column_is_gathered_as_a_python_list_is_indexed(ids: list[int], items: list[int]) -> None:
    # Mostly items inside the table (from its end too), as a table's file and head columns are.
    items = [item % (2 * len(ids)) - len(ids) if ids and item % 3 else item for item in items]
    try:
        expected: array[int] | None = array("Q", [ids[item] for item in items])
    except IndexError:
        expected = None  # the build lays such a table's runs out the reference's way
    found = build._CompiledTables(kernels.IndexTables()).translated(ids, array("q", items))
    assert found == (expected.tobytes() if expected is not None else None)

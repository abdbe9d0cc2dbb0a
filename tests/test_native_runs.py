"""The compiled whole-unit sweep (``native/src/unit_runs.rs``) against ``UnitRuns._sweep``.

``_kernels.build_unit_runs`` must append to a ``RunTable`` the runs the Python sweep appends, with
chain heads numbered alike (both ask ``UnitRuns._head``), or append nothing and return False.
Checked on every unit of every ELF fixture (the answers an index is built from) and on
hypothesis-made spans over fixture units (any leaf, any bounds, crossing symbols and sequences).
Skipped where the kernels are not built or not enabled.
"""

from __future__ import annotations

from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.answers import RunTable
from symbolize.formats.dwarf import answers as dwarf_answers
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers, UnitRuns
from symbolize.formats.elf import ElfFile
from symbolize.formats.native import kernels
from tests.fixtures_data import FIXTURES
from tests.kernel_twins import kernels_in

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)

ELF_FILES = sorted(path for path in FIXTURES.rglob("*") if path.is_file() and path.read_bytes()[:4] == b"\x7fELF")


class _Recording:
    """Stands for the kernels module in answers.py; records what ``build_unit_runs`` returned."""

    def __init__(self) -> None:
        self.SymbolBounds = kernels.SymbolBounds  # type: ignore[union-attr]
        self.returned: list[bool] = []

    def build_unit_runs(self, *args: Any) -> bool:
        returned: bool = kernels.build_unit_runs(*args)  # type: ignore[union-attr]
        self.returned.append(returned)
        return returned


def _table(table: RunTable) -> tuple[object, ...]:
    return (list(table.lows), list(table.highs), list(table.files), list(table.lines), list(table.columns),
            list(table.heads), list(table.chain_heads), list(table.file_names))


def _all_answers(path: Path, sweep: Any) -> list[object]:
    with kernels_in(sweep, dwarf_answers), ElfFile(path) as elf:
        source = elf._answers()
        if isinstance(source, DwarfSymbolAnswers):
            source._compiled = (None,)  # the Python runs, whose sweep this compares: not the compiled source
        found: list[object] = []
        # One unit can have many regions (rustc's units hold many ranges): each unit once.
        for key in dict.fromkeys(region.key for region in elf.answer_regions()):
            try:
                found.append(_table(elf.answers(key)))  # type: ignore[arg-type]
            except Exception as error:  # any type: the two sides must raise the same one
                found.append(("raised", type(error), str(error)))
        return found


@pytest.mark.parametrize("path", ELF_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_unit_sweeps_alike(path: Path) -> None:
    recording = _Recording()
    assert _all_answers(path, recording) == _all_answers(path, None)
    if not recording.returned:
        pytest.skip("no DWARF units")
    assert all(recording.returned)  # the kernel swept every real unit itself


@cache
def _source(name: str) -> tuple[ElfFile, DwarfSymbolAnswers]:
    elf = ElfFile(FIXTURES / "bin" / name)
    source = elf._answers()
    assert isinstance(source, DwarfSymbolAnswers)
    return elf, source


def _unit_runs(source: DwarfSymbolAnswers, key: int) -> UnitRuns:
    return source._unit(key, whole=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(["cdemo-gcc-dwarf4-pie", "cppdemo-gcc-dwarf5-pie",
                                              "cppdemo-clang-dwarf4-pie", "rustdemo-full"]))
def test_made_spans_sweep_alike(data: st.DataObject, name: str) -> None:
    _, source = _source(name)
    keys = sorted({region.key for region in source.answer_regions() if region.key >= 0})
    key = data.draw(st.sampled_from(keys))
    reference_runs = _unit_runs(source, key)
    reference_runs.all_runs()  # every subtree expanded, so any node can be a leaf
    nodes = len(reference_runs._index.node_ranges)
    pieces = reference_runs._row_pieces
    low = min((piece[0] for piece in pieces), default=0)
    high = max((piece[1] for piece in pieces), default=64)
    points = sorted(set(data.draw(st.lists(st.integers(max(low - 32, 0), high + 32), min_size=2, max_size=24))))
    spans = [(start, stop, data.draw(st.integers(-1, nodes - 1)))
             for start, stop in pairwise(points) if data.draw(st.booleans())]
    if data.draw(st.booleans()):
        spans.append((high + 40, 1 << 65, -1))  # the gap after the unit's last function
    compiled_runs = _unit_runs(source, key)
    python_runs = _unit_runs(source, key)
    compiled = RunTable(compiled_runs._file_names, compiled_runs._heads)
    returned = kernels.build_unit_runs(compiled_runs, compiled, spans, source._symbol_bounds())  # type: ignore[union-attr]
    if not returned:
        assert _table(compiled)[:6] == ([], [], [], [], [], [])
        compiled_runs._sweep(compiled, spans)
    reference = RunTable(python_runs._file_names, python_runs._heads)
    python_runs._sweep(reference, spans)
    assert _table(compiled) == _table(reference)

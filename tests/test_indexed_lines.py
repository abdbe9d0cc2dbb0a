"""The warm rewrite's kernel path (symbolize/indexed_lines.py) against its reference in symbolize/rewrite.py.

For each indexed fixture binary and for hypothesis-made indexes (broken regions, gaps, names and
files None, empty or any text, several sources), the same locations named both ways give the same
profile message (Functions in the same order, the same Lines), the same summary (counts, reasons,
details, in the same order) and the same facts for the mapping's flags, in every demangle mode.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.demangle import DemangleMode
from symbolize.discovery import SearchOptions, open_module
from symbolize.formats.native import kernels
from symbolize.formats.types import AnswerRegion, AnswerRun
from symbolize.index.indexed import IndexedObject
from symbolize.indexed_lines import NamedFacts, attach_indexed_lines
from symbolize.loader import Loader
from symbolize.module import Module
from symbolize.pprof import StringTable
from symbolize.proto.profile_pb2 import Profile
from symbolize.rewrite import _attach_results, _FunctionTable, _Pending
from symbolize.summary import MappingSummary
from tests.fixtures_data import FIXTURES
from tests.test_index import fixture_addresses
from tests.test_warm_kernel import _memory_index, _regions_and_runs

pytestmark = pytest.mark.skipif(kernels is None, reason="compiled kernels not built")

DEBUG_DIR = FIXTURES / "bin" / "debug"
BINARIES = sorted({FIXTURES / json.loads(p.read_text())["binary"] for p in (FIXTURES / "expected").glob("*.json")})


def _profile(vaddrs: list[int]) -> Profile:
    profile = Profile()
    profile.string_table.append("")
    profile.function.add(id=7, name=0)  # a Function already there: new ones take later ids
    for number, vaddr in enumerate(vaddrs, 1):
        profile.location.add(id=number, address=vaddr)
    return profile


def _both_ways(module: Module, vaddrs: list[int], mode: DemangleMode) -> tuple[tuple[bytes, str, NamedFacts], ...]:
    outcomes = []
    for compiled in (True, False):
        profile = _profile(vaddrs)
        strings = StringTable(profile)
        functions = _FunctionTable(profile, strings, mode)
        summary = MappingSummary("memory")
        to_look_up = list(zip(profile.location, vaddrs, strict=True))
        if compiled:
            facts = attach_indexed_lines(module, to_look_up, summary, functions.id_of_fields)
            assert facts is not None, "the kernel declined a batch it should answer"
        else:
            pending = [(_Pending(location, 1), vaddr) for location, vaddr in to_look_up]
            facts = _attach_results(pending, module.lookup(vaddrs), summary, functions)
        outcomes.append((profile.SerializeToString(), json.dumps(summary.to_json()), facts))
    return tuple(outcomes)


def _fixture_vaddrs(binary: Path) -> list[int]:
    vaddrs = fixture_addresses(binary, per_segment=400)
    return [*vaddrs, 0, *vaddrs[:50]]  # addresses asked again, as locations of twins are


@pytest.mark.parametrize("binary", BINARIES, ids=lambda p: p.name)
def test_every_fixture_names_the_same_lines_both_ways(binary: Path, tmp_path: Path) -> None:
    options = SearchOptions(debug_dirs=[DEBUG_DIR], index_dir=tmp_path, build_missing_indexes=True)
    module = open_module(binary, Loader(options))
    vaddrs = _fixture_vaddrs(binary)
    if not all(isinstance(source, IndexedObject) for source in module.sources):
        # A stripped binary's own symbol table is not indexed: the Python path names it.
        profile = _profile(vaddrs)
        summary = MappingSummary("x")
        assert attach_indexed_lines(module, list(zip(profile.location, vaddrs, strict=True)), summary, max) is None
        assert summary.locations == 0 and not any(len(location.line) for location in profile.location)
        return
    for mode in ("full", "short", "none"):
        compiled, reference = _both_ways(module, vaddrs, mode)
        assert compiled == reference, mode
    assert compiled[2].named > 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shapes=st.lists(_regions_and_runs(), min_size=1, max_size=3),
    mode=st.sampled_from(["full", "short", "none"]),
    extra=st.lists(st.integers(0, 2**64 - 1), max_size=4),
)
def test_made_up_indexes_name_the_same_lines_both_ways(
    tmp_path_factory: pytest.TempPathFactory,
    shapes: list[tuple[list[AnswerRegion], dict[int, list[AnswerRun]]]],
    mode: DemangleMode,
    extra: list[int],
) -> None:
    sources = [_memory_index(tmp_path_factory.mktemp("index"), *shape) for shape in shapes]
    module = Module(sources[-1], sources[:-1], own_source=sources[-1])  # type: ignore[arg-type]
    high = max(regions[-1].high for regions, _ in shapes)
    vaddrs = [*range(high + 4), *extra, *range(0, high, 3)]
    compiled, reference = _both_ways(module, vaddrs, mode)
    assert compiled == reference


def test_lines_at_the_end_of_int64_name_the_same_both_ways(tmp_path: Path) -> None:
    from symbolize.formats.types import Frame

    # The run tables keep lines in int64 (past it they are clamped), as pprof's Line.line is.
    regions = [AnswerRegion(0, 16, 0)]
    runs = {0: [AnswerRun(0, 8, (Frame("f", "a.c", 2**63 - 1, 2**63 - 1, 1),)), AnswerRun(8, 16, (Frame("g"),))]}
    indexed = _memory_index(tmp_path, regions, runs)
    module = Module(indexed, [indexed], own_source=indexed)  # type: ignore[arg-type]
    compiled, reference = _both_ways(module, [4, 9, 20], "full")
    assert compiled == reference
    assert compiled[2] == NamedFacts(named=2, functions=True, files=True, lines=True, inlines=False)

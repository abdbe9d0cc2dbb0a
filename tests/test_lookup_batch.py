"""A cold lookup's batch path gives what one address at a time gives.

- ``lookup --obj`` reads a plain hex line without ``parse_query`` (symbolize/cli/llvm_protocol.py,
  ``_PLAIN_HEX``): every line it takes must be the address ``parse_query`` reads.
- ``Module.lookup`` asks each source for all the addresses still unnamed at once
  (``frames_many``): its results must be the ones of asking every source address by address
  (``frames_at``), first frames found, else the first error, else the unnamed reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.api import Session
from symbolize.cli.llvm_input import parse_query
from symbolize.cli.llvm_protocol import _PLAIN_HEX
from symbolize.formats.answers import AnswerLookup
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import Frame
from symbolize.module import Module, Reason, Unknown

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bin"
# DWARF 4 and 5, PIE and not, split units (needs followed per region), dwz, a symbol table alone.
BINARIES = [
    "cdemo-gcc-dwarf5-pie", "cdemo-clang-dwarf4-nopie", "cppdemo-gcc-dwarf5-pie", "cdemo-clang-split",
    "cppdemo-gcc-dwz", "cdemo-gcc-symtab",
]  # fmt: skip


@given(st.text(alphabet="0xX123456789abcdefABCDEFg_ +-", max_size=22))
def test_a_line_read_as_plain_hex_is_the_address_parse_query_reads(line: str) -> None:
    if _PLAIN_HEX(line):
        assert parse_query(line, "obj").address == int(line[2:], 16)


def _opened(name: str) -> Module:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{path} not built")
    module, _loader = Session(search_paths=[FIXTURES], use_cache=False).open_module(path, None)
    return module


def _one_at_a_time(module: Module, vaddr: int) -> list[Frame] | Unknown:
    """``Module.lookup``'s answer for one address from the sources' ``frames_at`` (its rule)."""
    error: MalformedInputError | None = None
    for source in module.sources:
        try:
            frames = source.frames_at(vaddr)
        except MalformedInputError as err:
            error = error or err
            continue
        if frames:
            return frames
    if error is not None:
        return Unknown(Reason.DAMAGED_DEBUG_INFO, str(error))
    return Unknown(module.unnamed_reason())


# Each test opens its binary twice per drawn batch: a few dozen batches a binary.
_A_FEW = settings(max_examples=25, deadline=None)


@pytest.mark.parametrize("name", BINARIES)
@_A_FEW
@given(data=st.data())
def test_a_batch_of_lookups_answers_as_one_address_at_a_time(name: str, data: st.DataObject) -> None:
    batch, single = _opened(name), _opened(name)  # each with its own readers
    symbols = [symbol.vaddr for symbol in batch.image.symbols()] or [0x1000]  # type: ignore[attr-defined]
    low, high = min(symbols), max(symbols) + 0x100
    vaddrs = data.draw(st.lists(st.integers(max(0, low - 0x40), high) | st.sampled_from(symbols), max_size=60))
    assert batch.lookup(vaddrs) == [_one_at_a_time(single, vaddr) for vaddr in vaddrs]


def _general(lookup: AnswerLookup, vaddr: int) -> list[Frame] | MalformedInputError:
    """What :meth:`AnswerLookup.frames_many` answers, from every tier's overlap-aware scan (no
    shortcut for the one region holding an address)."""
    error: MalformedInputError | None = None
    for tier in lookup._tiers:
        found, error = lookup._in_tier(tier.holding(vaddr), vaddr, error)
        if found is not None:
            return found
    return error if error is not None else []


@pytest.mark.parametrize("name", [name for name in BINARIES if name != "cdemo-gcc-symtab"])
@_A_FEW
@given(data=st.data())
def test_the_one_region_shortcut_answers_as_the_overlap_aware_scan(name: str, data: st.DataObject) -> None:
    shortcut, general = (_opened(name).sources[0].reader._answers()._answer_lookup() for _ in range(2))  # type: ignore[attr-defined]
    edges = [
        edge
        for region in shortcut._tiers[0].regions
        for edge in (region.low - 1, region.low, region.high - 1, region.high)
    ]
    vaddrs = data.draw(st.lists(st.sampled_from(edges) | st.integers(min(edges), max(edges)), min_size=1, max_size=60))
    assert shortcut.frames_many(vaddrs) == [_general(general, vaddr) for vaddr in vaddrs]

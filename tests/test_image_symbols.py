"""A separate debug file's frames named as llvm-symbolizer 14 names them: the outermost
frame by its binary's own symbols first (a stripped library keeps only its .dynsym), else by the
debug file's DWARF, never by the debug file's own symbol table where either names the address.

``fixtures/bin/libalias.so`` (fixtures/src/aliasdemo.c) is stripped to a .dynsym that lists
``public_work`` after its alias ``real_work``, the reverse of the full .symtab its debug file keeps,
and that lacks the static alias ``helper_alias``, which the DWARF calls ``helper``. Its stored
llvm-symbolizer answers are compared in tests/test_differential.py; here the same answers through
the real console script, with and without the index, and on this machine's libc with its debug
package, live.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.api import open_module
from symbolize.cache import index_key
from symbolize.formats.elf import ElfFile
from symbolize.formats.symbols import RankedSymbol, SymbolIndex, SymbolRuns, preference, symbol_runs
from symbolize.formats.types import Symbol
from symbolize.module import Unknown
from tests.test_cli_contracts import FIXTURE_BIN, NO_SIDE_EFFECTS, ROOT, run

LIBRARY = FIXTURE_BIN / "libalias.so"
DEBUG_FILE = FIXTURE_BIN / "libalias.so.debug"
EXPECTED = ROOT / "fixtures" / "expected" / "libalias.so.json"
LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")


def _named_by_llvm() -> dict[str, list[str]]:
    """address -> llvm-symbolizer's function names, innermost first, where it names every frame."""
    entries = json.loads(EXPECTED.read_text())["addresses"]
    return {
        entry["address"]: [frame["function"] for frame in entry["frames"]]
        for entry in entries
        if all(frame["function"] for frame in entry["frames"])
    }


def _our_names(lines: str, count: int) -> list[list[str]]:
    """The function names of each answer of ``lookup`` text output (LLVM style, blank-line separated)."""
    answers = [block.splitlines()[0::2] for block in lines.strip("\n").split("\n\n")]
    assert len(answers) == count, lines
    return answers


@pytest.mark.parametrize("cached", [False, True], ids=["uncached", "index"])
def test_lookup_names_the_library_as_llvm_symbolizer_does(tmp_path: Path, cached: bool) -> None:
    expected = _named_by_llvm()
    assert {"public_work", "helper"} <= {names[-1] for names in expected.values()}
    if cached:
        cache = ["--cache-dir", tmp_path / "cache"]
        built = run("index", LIBRARY, *cache)
        assert built.returncode == 0, built.stderr
        assert list((tmp_path / "cache" / "index").glob("*.idx")), "no index was built"
        options = [*cache, "--no-background-index"]
    else:
        options = NO_SIDE_EFFECTS
    result = run("lookup", "--obj", LIBRARY, "--no-demangle", *options, *expected)
    assert result.returncode == 0, result.stderr
    ours = dict(zip(expected, _our_names(result.stdout, len(expected)), strict=True))
    assert ours == expected


def test_a_bound_debug_file_has_an_index_of_its_own() -> None:
    """The index of a debug file naming frames by its binary's symbols is not the one of the same
    file read alone (a stand-in for a missing binary, named by its own symbols)."""
    with ElfFile(DEBUG_FILE) as alone, ElfFile(DEBUG_FILE) as bound, ElfFile(LIBRARY) as library:
        bound.bind_image(library)
        assert alone.frames_at(0x1130)[0].function == "real_work"
        assert bound.frames_at(0x1130)[0].function == "public_work"
        assert index_key(alone) != index_key(bound)


def test_a_binary_is_not_bound_to_itself() -> None:
    with ElfFile(LIBRARY) as library, ElfFile(LIBRARY) as again:
        library.bind_image(again)
        assert library.answer_inputs() == ""


def _libc_debug_file() -> Path | None:
    """libc's separate debug file, as discovery finds it (the debug package's); None without one."""
    if not LIBC.is_file():
        return None
    return next((source.path for source in open_module(LIBC).debug_files if source.path != LIBC), None)


@pytest.mark.skipif(LLVM_SYMBOLIZER is None, reason="llvm-symbolizer not installed")
def test_libc_with_its_debug_package_names_as_llvm_symbolizer_does() -> None:
    """3,000 addresses of this machine's libc: inside its debug file's function symbols, at their
    starts and at random. Function names and lines of every frame match llvm-symbolizer's, but where
    llvm names nothing at all and we name the address by the debug file's own symbol (the
    deliberate difference the README lists: libgcc's helpers linked into libc carry no DWARF)."""
    debug_file = _libc_debug_file()
    if debug_file is None:
        pytest.skip("libc's debug file is not installed")
    with ElfFile(debug_file) as debug:
        symbols = [symbol for symbol in debug.symbols() if symbol.size > 0]
        debug_names = {symbol.name for symbol in debug.symbols()}
    rng = random.Random(14)
    addresses = sorted(
        {symbol.vaddr for symbol in rng.sample(symbols, 1000)}
        | {rng.randrange(symbol.vaddr, symbol.vaddr + symbol.size) for symbol in rng.sample(symbols, 2000)}
    )
    output = subprocess.run(
        [str(LLVM_SYMBOLIZER), f"--obj={LIBC}", "--output-style=JSON", "--inlines", "--no-demangle"],
        input="\n".join(f"{address:#x}" for address in addresses), capture_output=True, text=True, check=True,
    ).stdout
    theirs = [
        [(frame["FunctionName"] if frame["FunctionName"] not in ("", "??") else None, frame["Line"])
         for frame in json.loads(line)["Symbol"]]
        for line in output.splitlines()
    ]
    results = open_module(LIBC).lookup(addresses)
    differences, named_by_debug_symbols = [], 0
    for address, their_frames, result in zip(addresses, theirs, results, strict=True):
        ours = [] if isinstance(result, Unknown) else [(frame.function, frame.line) for frame in result]
        if ours == their_frames or (not ours and their_frames == [(None, 0)]):
            continue
        if their_frames == [(None, 0)] and len(ours) == 1 and ours[0][1] == 0 and ours[0][0] in debug_names:
            named_by_debug_symbols += 1
            continue
        differences.append((f"{address:#x}", their_frames, ours))
    assert differences == []
    assert named_by_debug_symbols < len(addresses) // 100


_SYMBOLS = st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 40), st.sampled_from("abcdef")), max_size=12
)


def _index(entries: list[tuple[int, int, str]], prefix: str) -> SymbolIndex:
    return SymbolIndex(
        RankedSymbol(Symbol(f"{prefix}{name}", vaddr, size), None, (0, position))
        for position, (vaddr, size, name) in enumerate(entries)
    )


@given(_SYMBOLS, _SYMBOLS)
@settings(max_examples=300, deadline=None)
def test_the_debug_files_symbols_answer_only_where_the_images_name_nothing(
    image_entries: list[tuple[int, int, str]], debug_entries: list[tuple[int, int, str]]
) -> None:
    """symbol_runs(image, beneath=debug file): at every address, the image's symbol where one covers
    it, else the debug file's; runs sorted and disjoint."""
    image, debug = _index(image_entries, "image."), _index(debug_entries, "debug.")
    table = symbol_runs(image, debug)
    assert all(low < high for low, high in zip(table.lows, table.highs, strict=True))
    assert all(high <= low for high, low in zip(table.highs, table.lows[1:], strict=False))
    for vaddr in range(0, 260):
        run = table.run_at(vaddr)
        above, below = image.position_at(vaddr), debug.position_at(vaddr)
        expected = image.symbols[above].name if above >= 0 else debug.symbols[below].name if below >= 0 else None
        assert (run.frames[0].function if run is not None else None) == expected, vaddr


_SOURCED = st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 40), st.sampled_from("abc"), st.sampled_from([None, "a.c"]),
              st.sampled_from([None, 150, 220])),
    max_size=12,
)


@given(_SOURCED, _SOURCED | st.none(), st.sampled_from([0, (1 << 64) - 60]))
@settings(max_examples=300, deadline=None)
def test_a_lookups_symbol_runs_answer_as_the_whole_table(
    image_entries: list[tuple[int, int, str, str | None, int | None]],
    debug_entries: list[tuple[int, int, str, str | None, int | None]] | None, base: int,
) -> None:
    """SymbolRuns (what a lookup asks the symbol table through) gives symbol_runs' frames at every
    address: size-0 symbols reaching a section's end, sources, the debug file's symbols beneath,
    and symbols whose end passes the 64-bit address space."""

    def index(entries: list[tuple[int, int, str, str | None, int | None]], prefix: str) -> SymbolIndex:
        return SymbolIndex(
            RankedSymbol(Symbol(f"{prefix}{name}", base + vaddr, size, source), end and base + end, (0, position))
            for position, (vaddr, size, name, source, end) in enumerate(entries)
        )

    image = index(image_entries, "image.")
    debug = index(debug_entries, "debug.") if debug_entries is not None else None
    table, lazy = symbol_runs(image, debug), SymbolRuns(image, debug)
    for vaddr in range(base, min(base + 260, 1 << 64)):
        run, found = table.run_at(vaddr), lazy.run_at(vaddr)
        assert (found.frames if found is not None else None) == (run.frames if run is not None else None), vaddr


def _index_one_entry_at_a_time(entries: list[RankedSymbol]) -> tuple[list[int], list[int], list[int], list[Symbol]]:
    """SymbolIndex's rule written entry by entry (as it was before it became whole-table calls):
    the preferred entry of each address, the first of equal preferences; a size-0 symbol reaching
    the next start, the last its section's end (else one byte)."""
    best: dict[int, RankedSymbol] = {}
    for entry in entries:
        current = best.get(entry.symbol.vaddr)
        if current is None or preference(entry) > preference(current):
            best[entry.symbol.vaddr] = entry
    chosen = [best[vaddr] for vaddr in sorted(best)]
    starts = [entry.symbol.vaddr for entry in chosen]
    ends = []
    for position, entry in enumerate(chosen):
        if entry.symbol.size > 0:
            ends.append(entry.symbol.vaddr + entry.symbol.size)
        elif position + 1 < len(chosen):
            ends.append(starts[position + 1])
        else:
            ends.append(entry.section_end if entry.section_end is not None else entry.symbol.vaddr + 1)
    stops = [min(end, starts[position + 1]) if position + 1 < len(starts) else end for position, end in enumerate(ends)]
    return starts, ends, stops, [entry.symbol for entry in chosen]


@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 12), st.sampled_from("abc"), st.integers(0, 2),
                  st.integers(0, 3), st.sampled_from([None, 30, 60])),
        max_size=30,
    ),
    st.sampled_from([0, 1 << 40, (1 << 64) - 50]),
)
@settings(max_examples=400, deadline=None)
def test_the_symbol_index_keeps_the_preferred_symbol_of_each_address(
    drawn: list[tuple[int, int, str, int, int, int | None]], base: int
) -> None:
    """SymbolIndex (whole-table sorts) gives the per-entry rule's starts, ends, stops and symbols:
    equal addresses, equal sizes, equal orders (a reader without ranks gives every entry (0, 0)),
    size-0 symbols, section ends, addresses past 2**40 and near 2**64."""
    entries = [
        RankedSymbol(Symbol(f"{name}{position}", base + vaddr, size), end and base + end, (rank, order))
        for position, (vaddr, size, name, rank, order, end) in enumerate(drawn)
    ]
    index = SymbolIndex(iter(entries))
    assert (index.starts, index.ends, index.stops, index.symbols) == _index_one_entry_at_a_time(entries)
    # A reader's rows (formats/elf/symtab.py's), each symbol made only when asked, choose alike.
    made: list[int] = []

    def symbol_of(row: tuple[Any, ...]) -> Symbol:
        made.append(row[4])
        return entries[row[4]].symbol

    rows = [(entry.symbol.vaddr, entry.symbol.size, entry.section_end, entry.order, position)
            for position, entry in enumerate(entries)]  # fmt: skip
    from_rows = SymbolIndex.from_rows(rows, symbol_of)
    assert not made
    assert (from_rows.starts, from_rows.ends, from_rows.stops) == (index.starts, index.ends, index.stops)
    assert len(from_rows.symbols) == len(index.symbols) and from_rows.symbols[::-1] == index.symbols[::-1]
    assert list(from_rows.symbols) == index.symbols and len(made) == len(index.symbols)

"""Differential tests of the Mach-O reader against llvm-symbolizer 14 on the Mach-O fixtures.

The truth is llvm-symbolizer's own output (``--obj FILE[:ARCH] --dsym-hint``), stored by
``fixtures/make_expected_macos.py`` in ``fixtures/expected/macos/`` and re-checked live where
llvm-symbolizer is installed. Compared: function (raw), file, line and column of every frame,
innermost first.

Differences kept on purpose, each checked by a rule narrower than "anything":

* The outermost name of a stripped binary with a dSYM. llvm-symbolizer 14 names the outermost
  frame from the symbol table of the binary it was given, even when the dSYM beside it carries
  the whole table (dsymutil copies it): in a binary stripped with ``strip -x`` only globals are
  left, so a static function's code is named after the global before it (``geo::World::
  populate`` called ``app::run``). We name it from the dSYM's table, which names what is there.
  Rule: llvm's name is the stripped binary's nearest symbol at or before the address, ours the
  dSYM's symbol there; everything else (inner frames, file, line, column) is the same.
* Stripped binaries without a dSYM. llvm-symbolizer 14 sizes Mach-O symbols by the next symbol,
  so the code of a static function whose symbol was stripped is named after the global before
  it; ``LC_FUNCTION_STARTS`` says a function starts in between, so we leave it unnamed. Rule:
  llvm gives a bare name equal to the nearest symbol before the address, we give nothing, and a
  function start lies after that symbol and at or before the address.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from bisect import bisect_right
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from symbolize.formats.archive import split_member_path
from symbolize.formats.macho.debugmap import DebugMapSource
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.types import HintKind
from tests.fixtures_data import FIXTURES

EXPECTED = sorted((FIXTURES / "expected" / "macos").glob("*.json"))
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")

FrameKey = tuple[str | None, str | None, int, int]


@cache
def _expected(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _frames(entry: dict[str, Any]) -> list[FrameKey]:
    frames = [(f["function"], f["file"], f["line"], f["column"]) for f in entry["frames"]]
    return [] if frames == [(None, None, 0, 0)] else frames


def _dwarf_file(expected: dict[str, Any]) -> Path | None:
    if not expected["dsym"]:
        return None
    binary = FIXTURES / expected["binary"]
    return FIXTURES / expected["dsym"] / "Contents" / "Resources" / "DWARF" / binary.name


def _debug_map_object(directory: Path, recorded: str, arch: str) -> MachOFile:
    """An N_OSO object beside the binary: a file, or a member of a static archive (``lib.a(x.o)``)."""
    in_archive = split_member_path(recorded)
    if in_archive is None:
        return MachOFile(directory / recorded, arch)
    return MachOFile(directory / in_archive[0], arch, member=in_archive[1])


def _open_source(expected: dict[str, Any]) -> tuple[MachOFile, MachOFile | DebugMapSource]:
    """The binary, and what names its addresses: its dSYM, its debug map's objects, or itself."""
    binary = MachOFile(FIXTURES / expected["binary"], expected["arch"])
    dwarf_file = _dwarf_file(expected)
    if dwarf_file is not None:
        return binary, MachOFile(dwarf_file, expected["arch"])
    if expected["truth"]:
        objects: dict[str, MachOFile | str] = {
            hint.name: _debug_map_object(binary.path.parent, hint.name, expected["arch"])
            for hint in binary.debug_hints()
            if hint.kind is HintKind.DEBUG_MAP_OBJECT
        }
        return binary, DebugMapSource(binary, objects)
    return binary, binary


@cache
def _our_answers(path: Path) -> list[list[FrameKey]]:
    expected = _expected(path)
    _binary, source = _open_source(expected)
    return [
        [(f.function, f.file, f.line, f.column) for f in source.frames_at(int(entry["address"], 16))]
        for entry in expected["addresses"]
    ]


def _nearest_symbol(binary: MachOFile, vaddr: int) -> tuple[str, int] | None:
    """llvm-symbolizer 14's Mach-O symbol at ``vaddr``: the nearest defined symbol at or before it."""
    symbols = binary.defined_symbols()
    position = bisect_right([symbol.vaddr for symbol in symbols], vaddr) - 1
    return (symbols[position].name, symbols[position].vaddr) if position >= 0 else None


def _stripped_binary_names_outer_frame(
    binary: MachOFile, source: MachOFile | DebugMapSource, vaddr: int, ours: list[FrameKey], theirs: list[FrameKey]
) -> bool:
    if source is binary or not ours or len(ours) != len(theirs) or ours[:-1] != theirs[:-1]:
        return False
    nearest = _nearest_symbol(binary, vaddr)
    our_symbol = source.symbols() and next((s for s in reversed(source.symbols()) if s.vaddr <= vaddr), None)
    return (
        nearest is not None
        and theirs[-1] == (nearest[0], *ours[-1][1:])
        and bool(our_symbol)
        and ours[-1][0] == getattr(our_symbol, "name", None)
    )


def _function_start_past_stripped_symbol(
    binary: MachOFile, vaddr: int, ours: list[FrameKey], theirs: list[FrameKey]
) -> bool:
    nearest = _nearest_symbol(binary, vaddr)
    if ours or nearest is None or theirs != [(nearest[0], None, 0, 0)]:
        return False
    return any(nearest[1] < start <= vaddr for start in binary.function_starts())


def _classify(path: Path) -> tuple[int, int, list[tuple[str, list[FrameKey], list[FrameKey]]]]:
    """(addresses agreeing, differences covered by a rule, differences left)."""
    expected = _expected(path)
    binary, source = _open_source(expected)
    agree = allowed = 0
    left = []
    for entry, ours in zip(expected["addresses"], _our_answers(path), strict=True):
        theirs = _frames(entry)
        vaddr = int(entry["address"], 16)
        if ours == theirs:
            agree += 1
        elif _stripped_binary_names_outer_frame(binary, source, vaddr, ours, theirs) or (
            source is binary and _function_start_past_stripped_symbol(binary, vaddr, ours, theirs)
        ):
            allowed += 1
        else:
            left.append((entry["address"], theirs, ours))
    return agree, allowed, left


@pytest.mark.parametrize("expected_path", EXPECTED, ids=lambda p: p.stem)
def test_frames_agree_with_llvm_symbolizer(expected_path: Path) -> None:
    expected = _expected(expected_path)
    assert len(expected["addresses"]) >= 300
    agree, _allowed, left = _classify(expected_path)
    assert left == []
    assert agree > 0


def test_every_variant_is_compared() -> None:
    variants = json.loads((FIXTURES / "manifest.json").read_text())["macos_variants"]
    assert sorted(variants) == sorted(path.stem for path in EXPECTED)


def test_inline_chains_are_compared() -> None:
    """The fixtures exercise inlining: most DWARF variants have many multi-frame answers, all agreeing."""
    for path in EXPECTED:
        if _expected(path)["dsym"] or _expected(path)["truth"]:
            deep = [ours for ours in _our_answers(path) if len(ours) > 1]
            assert len(deep) >= 10 or "usemshape" in path.stem, path.stem


def test_the_deliberate_differences_still_happen() -> None:
    """Each rule above still covers at least one address: drop a rule once llvm and we agree."""
    allowed = {path.stem: _classify(path)[1] for path in EXPECTED}
    assert allowed["libmshape-macho-x86_64"] > 0  # static functions of a -x-stripped dylib with a dSYM
    assert allowed["cppdemo-macho-x86_64"] == 0  # with its symbol table kept, llvm and we agree exactly
    assert allowed["cdemo-macho-x86_64-stripped"] > 0  # code past a stripped symbol, without a dSYM


def test_debug_map_objects_give_lines_and_inlines() -> None:
    """The debug-map binaries are named from their objects' DWARF: lines and inline chains, not symbols alone."""
    for path in EXPECTED:
        if _expected(path)["truth"]:
            answers = _our_answers(path)
            assert sum(len(frames) > 1 for frames in answers) > 30
            assert sum(bool(frames) and frames[0][2] > 0 for frames in answers) > 250


@pytest.mark.skipif(LLVM_SYMBOLIZER is None, reason="llvm-symbolizer not installed")
@pytest.mark.parametrize("expected_path", EXPECTED, ids=lambda p: p.stem)
def test_stored_answers_are_what_llvm_symbolizer_says_here(expected_path: Path, tmp_path: Path) -> None:
    expected = _expected(expected_path)
    binary = FIXTURES / expected["binary"]
    universal = binary.read_bytes()[:4] == b"\xca\xfe\xba\xbe"
    command = [str(LLVM_SYMBOLIZER), f"--obj={binary}:{expected['arch']}" if universal else f"--obj={binary}",
               "--output-style=JSON", "--inlines", "--no-demangle"]  # fmt: skip
    if expected["dsym"]:
        command.append(f"--dsym-hint={FIXTURES / expected['dsym']}")
    elif expected["truth"] and shutil.which("dsymutil"):
        dsym = tmp_path / f"{binary.name}.dSYM"
        subprocess.run(["dsymutil", binary.name, "-o", str(dsym)], cwd=binary.parent, check=True)
        command.append(f"--dsym-hint={dsym}")
    elif expected["truth"]:
        pytest.skip("dsymutil not installed")
    addresses = "\n".join(entry["address"] for entry in expected["addresses"])
    output = subprocess.run(command, input=addresses, capture_output=True, text=True, check=True).stdout
    live = [json.loads(line)["Symbol"] for line in output.splitlines()]
    for entry, frames in zip(expected["addresses"], live, strict=True):
        names = [None if f["FunctionName"] in ("??", "") else f["FunctionName"] for f in frames]
        lines = [f["Line"] for f in frames]
        assert ([f["function"] for f in entry["frames"]], [f["line"] for f in entry["frames"]]) == (names, lines)

"""Differential tests: our answers against llvm-symbolizer's on every fixture binary.

The truth is llvm-symbolizer's own output, stored beside the fixtures by
``fixtures/make_expected.py`` (so the comparison runs where llvm is missing)
and re-checked live where llvm-symbolizer is installed (CI installs it).

Differences we keep on purpose, each checked by a rule narrower than "anything":

* Qualified names. Where a function has no linkage name (GCC omits it for some
  inlined template instances), llvm-symbolizer prints the bare DW_AT_name
  (``for_each<...>``); we prefix the enclosing namespaces and classes
  (``std::for_each<...>``), which is what a profile reader wants.
* Addresses outside the code. Line and inline entries of code the linker
  discarded sit at address 0 (rustc's std); such addresses name nothing real,
  and the two tools disagree on which dead entry to report. They are left out.
* Names from a separate debug file's symbols. llvm-symbolizer 14 reads symbols from the binary
  alone (a stripped one keeps only its .dynsym), so where neither the binary's symbols nor a DWARF
  function cover an address (crt code, ``_init``, assembly without debug info) it names nothing;
  we name it from the debug file's own symbol table (``_named_by_debug_file_symbols``).
* Split DWARF inlines. llvm-symbolizer 14 drops inlined frames whose
  DW_AT_ranges is a DW_FORM_rnglistx inside a .dwo unit (it does not apply the
  unit's base address). The non-split build of the same source names the same
  chain we do; see ``test_split_dwarf_inline_chain_matches_the_non_split_build``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from symbolize.api import lookup, open_module
from symbolize.formats.elf import ElfFile
from symbolize.module import Unknown
from tests.fixtures_data import FIXTURES
from tests.rust_names import RUST_LEGACY, rustc_demangle_escapes

EXPECTED = sorted((FIXTURES / "expected").glob("*.json"))
DEBUG_DIR = FIXTURES / "bin" / "debug"
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")

FrameKey = tuple[str | None, str | None, int, int]


@cache
def _expected(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _frames(entry: dict[str, Any]) -> list[FrameKey]:
    frames = [(f["function"], f["file"], f["line"], f["column"]) for f in entry["frames"]]
    return [] if frames == [(None, None, 0, 0)] else frames


def _same_frame(ours: FrameKey, theirs: FrameKey) -> bool:
    if ours == theirs:
        return True
    our_name, *our_place = ours
    their_name, *their_place = theirs
    return our_place == their_place and bool(our_name and their_name) and our_name.endswith("::" + their_name)


@cache
def _executable_ranges(binary: Path) -> list[tuple[int, int]]:
    with ElfFile(binary) as elf:
        return [(s.vaddr, s.vaddr + s.memsz) for s in elf.segments() if s.executable]


def _in_code(binary: Path, vaddr: int) -> bool:
    return any(low <= vaddr < high for low, high in _executable_ranges(binary))


def _split_dwarf_llvm_gap(ours: list[FrameKey], theirs: list[FrameKey]) -> bool:
    """llvm lost inner inlined frames: its outer frames are ours, its innermost names one of ours."""
    if len(ours) <= len(theirs) or not theirs:
        return False
    outer_match = all(_same_frame(o, t) for o, t in zip(ours[len(ours) - len(theirs) + 1 :], theirs[1:], strict=True))
    innermost = theirs[0]
    return outer_match and any(o[0] == innermost[0] for o in ours) and ours[0][1:3] == innermost[1:3]


@cache
def _section_of(binary: Path, vaddr: int) -> str:
    """The name of the allocated section holding ``vaddr`` ("" when none), read by pyelftools."""
    with binary.open("rb") as stream:
        for section in ELFFile(stream).iter_sections():
            if section["sh_addr"] <= vaddr < section["sh_addr"] + section["sh_size"] and section["sh_addr"]:
                return str(section.name)
    return ""


def _lld_plt_after_fini(binary: Path, vaddr: int, ours: list[FrameKey], theirs: list[FrameKey]) -> bool:
    """lld puts .plt after .fini, and _fini (size 0) is the last function symbol. llvm-symbolizer
    stretches a size-0 symbol to the next symbol of any kind, so it names the PLT stubs (and, past
    them, anything up to the next data symbol) _fini; we stop a size-0 symbol at the end of its
    section when no function follows it, and leave a PLT stub unnamed."""
    return not ours and [t[0] for t in theirs] == ["_fini"] and _section_of(binary, vaddr) == ".plt"


@cache
def _symbol_starts(path: Path) -> tuple[dict[str, set[int]], list[int]]:
    """(name -> start vaddrs of its symbols, every start sorted) of the code symbols of ``path``'s
    .symtab and .dynsym, read by pyelftools."""
    names: dict[str, set[int]] = {}
    with path.open("rb") as stream:
        for section in ELFFile(stream).iter_sections():
            if not isinstance(section, SymbolTableSection):
                continue
            for symbol in section.iter_symbols():
                if symbol["st_shndx"] != "SHN_UNDEF" and symbol["st_info"]["type"] in ("STT_FUNC", "STT_NOTYPE"):
                    names.setdefault(symbol.name.partition("@")[0], set()).add(symbol["st_value"])
    return names, sorted({start for starts in names.values() for start in starts})


def _named_by_debug_file_symbols(binary: Path, vaddr: int, ours: list[FrameKey], theirs: list[FrameKey]) -> bool:
    """llvm-symbolizer names nothing; we give one frame without a line, named by the nearest symbol
    at or below ``vaddr`` of the separate debug file's .symtab, a name the binary's tables lack."""
    debug_file = binary.with_name(binary.name + ".debug")
    if theirs or len(ours) != 1 or ours[0][2:] != (0, 0) or not debug_file.is_file():
        return False
    names, starts = _symbol_starts(debug_file)
    below = [start for start in starts if start <= vaddr]
    name = ours[0][0]
    return bool(name and below) and below[-1] in names.get(name or "", set()) and name not in _symbol_starts(binary)[0]


def _close_templates(name: str) -> str:
    while "> >" in name:
        name = name.replace("> >", ">>")
    return name


@cache
def _our_answers(expected_path: Path) -> list[list[FrameKey]]:
    expected = _expected(expected_path)
    module = open_module(FIXTURES / expected["binary"], debug_dirs=[DEBUG_DIR])
    addresses = [int(entry["address"], 16) for entry in expected["addresses"]]
    results = module.lookup(addresses)
    return [[] if isinstance(r, Unknown) else [(f.function, f.file, f.line, f.column) for f in r] for r in results]


@pytest.mark.parametrize("expected_path", EXPECTED, ids=lambda p: p.stem)
def test_frames_agree_with_llvm_symbolizer(expected_path: Path) -> None:
    expected = _expected(expected_path)
    assert len(expected["addresses"]) >= 300
    split = "split" in expected_path.stem
    binary = FIXTURES / expected["binary"]
    disagreements = []
    for entry, ours in zip(expected["addresses"], _our_answers(expected_path), strict=True):
        theirs = _frames(entry)
        if len(ours) == len(theirs) and all(_same_frame(o, t) for o, t in zip(ours, theirs, strict=True)):
            continue
        if split and _split_dwarf_llvm_gap(ours, theirs):
            continue
        if _lld_plt_after_fini(binary, int(entry["address"], 16), ours, theirs):
            continue
        if _named_by_debug_file_symbols(binary, int(entry["address"], 16), ours, theirs):
            continue
        if not _in_code(binary, int(entry["address"], 16)):
            continue
        disagreements.append((entry["address"], theirs, ours))
    assert disagreements == []


@pytest.mark.parametrize("expected_path", EXPECTED, ids=lambda p: p.stem)
def test_demangled_names_and_start_lines_agree_with_llvm_symbolizer(expected_path: Path) -> None:
    expected = _expected(expected_path)
    binary = FIXTURES / expected["binary"]
    addresses = [int(entry["address"], 16) for entry in expected["addresses"]]
    results = lookup(binary, addresses, demangle="full", debug_dirs=[DEBUG_DIR])
    disagreements = []
    raw_answers = _our_answers(expected_path)
    for entry, result, raw in zip(expected["addresses"], results, raw_answers, strict=True):
        if isinstance(result, Unknown) or len(result) != len(entry["frames"]):
            continue  # frame-count differences are the business of the test above
        for ours, our_raw, theirs in zip(result, raw, entry["frames"], strict=True):
            their_name = theirs.get("function_demangled", theirs["function"])
            if their_name is not None and RUST_LEGACY.search(theirs["function"] or ""):
                their_name = rustc_demangle_escapes(their_name)  # the deliberate difference (README)
            if ours.function is None or our_raw[0] != theirs["function"]:
                continue  # different raw names (folded code) are judged by the test above
            if ours.start_line != theirs.get("start_line", 0):
                disagreements.append((entry["address"], f"start line {theirs.get('start_line')}", ours.start_line))
            if their_name is None:
                continue
            # LLVM 14 (the peer) closes nested templates with "> >", the LLVM bundled by
            # pycxxfilt with ">>": the same name.
            our_name, normalized = (_close_templates(name) for name in (ours.function, their_name))
            if our_name != normalized and not our_name.endswith("::" + normalized):
                disagreements.append((entry["address"], their_name, ours.function))
    assert disagreements == []


def test_split_dwarf_inline_chain_matches_the_non_split_build() -> None:
    """Where llvm-symbolizer 14 and we disagree on split DWARF, the same code built without
    -gsplit-dwarf has the chain we report (functions by name; addresses differ between builds)."""
    split = FIXTURES / "expected" / "cdemo-clang-split.json"
    whole = FIXTURES / "expected" / "cdemo-clang-dwarf5-pie.json"
    if not split.exists() or not whole.exists():
        pytest.skip("split-DWARF fixtures not built")
    chains_in_whole_build = {
        tuple(f[0] for f in _frames(entry)) for entry in _expected(whole)["addresses"]
    }
    gaps = [
        tuple(f[0] for f in ours)
        for entry, ours in zip(_expected(split)["addresses"], _our_answers(split), strict=True)
        if _split_dwarf_llvm_gap(ours, _frames(entry))
    ]
    assert gaps, "no split-DWARF gap left: drop the exception from the differential test"
    assert all(chain in chains_in_whole_build for chain in gaps)


@pytest.mark.skipif(LLVM_SYMBOLIZER is None, reason="llvm-symbolizer not installed")
@pytest.mark.parametrize("expected_path", EXPECTED, ids=lambda p: p.stem)
def test_stored_answers_are_what_llvm_symbolizer_says_here(expected_path: Path, tmp_path: Path) -> None:
    expected = _expected(expected_path)
    # llvm-symbolizer 14 as Debian builds it reads no zstd sections: the stored truth for the
    # zstd variant comes from the same build uncompressed, named in "symbolized_file".
    binary = FIXTURES / expected.get("symbolized_file", expected["binary"])
    addresses = "\n".join(entry["address"] for entry in expected["addresses"])
    # Cargo's unpacked .dwo files are named by a path that exists nowhere: llvm-symbolizer reads them
    # from a package llvm-dwp makes of them, as make_expected.py did.
    dwo_files = [FIXTURES / name for name in expected.get("dwp_from_dwo", [])]
    dwp_options = []
    if dwo_files:
        dwp = tmp_path / "split-units.dwp"
        subprocess.run([shutil.which("llvm-dwp") or "llvm-dwp", *map(str, dwo_files), "-o", str(dwp)], check=True)
        dwp_options = [f"--dwp={dwp}"]
    output = subprocess.run(
        [str(LLVM_SYMBOLIZER), f"--obj={binary}", "--output-style=JSON", "--inlines", "--no-demangle",
         f"--debug-file-directory={DEBUG_DIR}", *dwp_options],
        input=addresses, capture_output=True, text=True, check=True, cwd=binary.parent,
    ).stdout
    live = [json.loads(line)["Symbol"] for line in output.splitlines()]
    stored = _expected(expected_path)["addresses"]
    for entry, frames in zip(stored, live, strict=True):
        names = [None if f["FunctionName"] in ("??", "") else f["FunctionName"] for f in frames]
        lines = [f["Line"] for f in frames]
        assert ([f["function"] for f in entry["frames"]], [f["line"] for f in entry["frames"]]) == (names, lines)


@pytest.mark.parametrize("variant", ["cdemo-gcc-split4", "cdemo-clang-split"])
def test_split_dwarf_from_the_dwo_alone_matches_the_package(variant: str, tmp_path: Path) -> None:
    """The stored truth was read through the .dwp; without it the .dwo next to the binary must give the same."""
    expected_path = FIXTURES / "expected" / f"{variant}.json"
    for suffix in ("", ".dwo"):
        shutil.copy(FIXTURES / "bin" / f"{variant}{suffix}", tmp_path / f"{variant}{suffix}")
    module = open_module(tmp_path / variant, use_cache=False)
    addresses = [int(entry["address"], 16) for entry in _expected(expected_path)["addresses"]]
    from_dwo = [[] if isinstance(r, Unknown) else [(f.function, f.file, f.line, f.column) for f in r]
                for r in module.lookup(addresses)]
    assert from_dwo == _our_answers(expected_path)
    assert sum(len(frames) > 1 for frames in from_dwo) > 50  # the inline trees really came from the .dwo

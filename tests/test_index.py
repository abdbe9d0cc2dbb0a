"""The persistent index: the same answers as the uncached path, and never trusted when damaged."""

from __future__ import annotations

import json
import random
import threading
import zlib
from array import array
from pathlib import Path

import pytest
from typer.testing import CliRunner

from symbolize.api import build_indexes, lookup, symbolize_profile
from symbolize.cache import build_index, cache_entries, clear_cache, index_key, index_path, load_index
from symbolize.cli.app import app
from symbolize.demangle import DemangleMode, demangle
from symbolize.discovery import SearchOptions, open_module
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import Frame
from symbolize.index.indexed import IndexedObject
from symbolize.index.store import IndexFile, write_index
from symbolize.loader import Loader
from symbolize.module import Module, PerFrame, Unknown
from symbolize.shaping import folded_frame
from tests.fixtures_data import FIXTURES

DEBUG_DIR = FIXTURES / "bin" / "debug"
BINARIES = sorted({FIXTURES / json.loads(p.read_text())["binary"] for p in (FIXTURES / "expected").glob("*.json")})


def _module(binary: Path, cache: SearchOptions) -> Module:
    return open_module(binary, Loader(cache._replace(debug_dirs=(DEBUG_DIR,))))


def fixture_addresses(binary: Path, per_segment: int = 1500) -> list[int]:
    """Every stored llvm-symbolizer address, plus ``per_segment`` random ones in each executable
    segment (the same ones for the same binary)."""
    expected = json.loads((FIXTURES / "expected" / f"{binary.name}.json").read_text())
    vaddrs = [int(entry["address"], 16) for entry in expected["addresses"]]
    rng = random.Random(binary.name)
    with ElfFile(binary) as elf:
        for segment in elf.segments():
            if segment.executable:
                vaddrs += [rng.randrange(segment.vaddr, segment.vaddr + segment.memsz) for _ in range(per_segment)]
    return vaddrs


@pytest.mark.parametrize("binary", BINARIES, ids=lambda p: p.name)
def test_indexed_answers_are_identical_to_the_uncached_path(binary: Path, tmp_path: Path) -> None:
    vaddrs = fixture_addresses(binary)
    uncached = _module(binary, SearchOptions())
    indexed = _module(binary, SearchOptions(index_dir=tmp_path, build_missing_indexes=True))
    assert any(isinstance(source, IndexedObject) for source in [*indexed.debug_files, indexed.binary])
    assert indexed.lookup(vaddrs) == uncached.lookup(vaddrs)


def _built(tmp_path: Path, name: str = "cppdemo-gcc-dwarf5-pie") -> tuple[ElfFile, Path]:
    elf = ElfFile(FIXTURES / "bin" / name)
    build_indexes([elf.path], cache_dir=tmp_path)
    return elf, index_path(tmp_path, index_key(elf))


def test_damaged_index_is_never_believed(tmp_path: Path) -> None:
    elf, path = _built(tmp_path, "cdemo-clang-dwarf5-pie")
    index = IndexFile(path, index_key(elf))
    code, start, items, _ = index._entries["run_line"]  # an array every lookup reads
    index.close()
    data = bytearray(path.read_bytes())
    data[start + array(code).itemsize * (items // 2)] ^= 0xFF
    path.write_bytes(bytes(data))
    vaddrs = fixture_addresses(elf.path)
    damaged = _module(elf.path, SearchOptions(index_dir=tmp_path))
    # The header is intact, so the index opens; the damage shows when the array is first used.
    assert isinstance(damaged.binary, IndexedObject)
    assert damaged.lookup(vaddrs) == _module(elf.path, SearchOptions()).lookup(vaddrs)
    assert not path.exists()


def test_index_arrays_take_the_narrowest_type(tmp_path: Path) -> None:
    elf, path = _built(tmp_path)
    index = IndexFile(path, index_key(elf))
    try:
        for name, (code, _, _, _) in index._entries.items():
            values = index.array(name)
            largest = max(values, default=0)
            wanted = next((c for c, bits in (("B", 8), ("H", 16), ("I", 32), ("Q", 64)) if largest < 1 << bits))
            assert code == wanted, name
    finally:
        index.close()


@pytest.mark.parametrize("mode", ["full", "short", "none"])
@pytest.mark.parametrize("inlines", [True, False])
def test_shaped_lookups_match_demangling_each_frame(tmp_path: Path, mode: DemangleMode, inlines: bool) -> None:
    """Indexed lookups share frames between addresses; shaping them once each changes no answer."""
    binary = FIXTURES / "bin" / "cppdemo-clang-dwarf5-pie"
    build_indexes([binary], cache_dir=tmp_path)
    vaddrs = fixture_addresses(binary)
    raw = _module(binary, SearchOptions(index_dir=tmp_path)).lookup(vaddrs)
    shaped = lookup(binary, vaddrs, demangle=mode, inlines=inlines, debug_dirs=[DEBUG_DIR], cache_dir=tmp_path)
    expected = []
    for frames in raw:
        if isinstance(frames, Unknown):
            expected.append(frames)
            continue
        named = [
            frame._replace(function=demangle(frame.function, mode)) if frame.function else frame for frame in frames
        ]
        expected.append(named if inlines else [folded_frame(named)])
    assert shaped == expected


def _starts(frame: Frame) -> tuple[int, str | None, int | None]:
    return frame.start_line, frame.start_file, frame.start_address


@pytest.mark.parametrize("indexed", [False, True])
def test_a_lookup_without_inlines_folds_as_the_printed_answers_do(tmp_path: Path, indexed: bool) -> None:
    """``inlines=False`` gives the frame llvm-symbolizer prints (folded_frame, the printed answers'
    rule): the outermost name, the rest the innermost frame's, its start line, file and entry too
    (``getLineInfoForAddress``'s ``StartLine``), not the outermost's."""
    binary = FIXTURES / "bin" / "cppdemo-clang-dwarf5-pie"
    vaddrs = fixture_addresses(binary, per_segment=200)
    if indexed:
        build_indexes([binary], cache_dir=tmp_path)
    where = {"debug_dirs": [DEBUG_DIR], "cache_dir": tmp_path, "use_cache": indexed}
    chains = lookup(binary, vaddrs, demangle="none", **where)  # type: ignore[arg-type]
    folded = lookup(binary, vaddrs, demangle="none", inlines=False, **where)  # type: ignore[arg-type]
    inlined = [chain for chain in chains if isinstance(chain, list) and _starts(chain[0]) != _starts(chain[-1])]
    assert inlined, "no inlined call whose start fields differ from its caller's: nothing checked"
    assert folded == [[folded_frame(chain)] if isinstance(chain, list) else chain for chain in chains]


@pytest.mark.parametrize("cut", [0, 10, 30, 200])
def test_truncated_index_is_refused_and_removed(tmp_path: Path, cut: int) -> None:
    elf, path = _built(tmp_path)
    path.write_bytes(path.read_bytes()[:cut])
    assert load_index(elf, tmp_path) is None
    assert not path.exists()


def test_index_of_another_file_is_not_trusted(tmp_path: Path) -> None:
    _, path = _built(tmp_path)
    other = ElfFile(FIXTURES / "bin" / "cdemo-gcc-dwarf5-pie")
    # Put the first file's index where the second one's belongs.
    target = index_path(tmp_path, index_key(other))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(path.read_bytes())
    assert load_index(other, tmp_path) is None


def test_two_builders_at_once_leave_one_whole_index(tmp_path: Path) -> None:
    binary = FIXTURES / "bin" / "rustdemo-full"
    threads = [threading.Thread(target=build_indexes, args=([binary],), kwargs={"cache_dir": tmp_path}) for _ in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = cache_entries(tmp_path)
    assert [entry.path.suffix for entry in entries] == [".idx"]
    vaddrs = fixture_addresses(binary)[:2000]
    assert lookup(binary, vaddrs, cache_dir=tmp_path) == lookup(binary, vaddrs, use_cache=False)


def test_cli_index_show_clear_and_no_cache(tmp_path: Path) -> None:
    runner = CliRunner()
    binary = FIXTURES / "bin" / "cppdemo-clang-dwarf5-pie"
    built = runner.invoke(app, ["index", str(binary), "--cache-dir", str(tmp_path)])
    assert built.exit_code == 0, built.output
    shown = runner.invoke(app, ["cache", "show", "--cache-dir", str(tmp_path)])
    assert shown.exit_code == 0 and str(binary.resolve()) in shown.output
    args = ["lookup", "--obj", str(binary), "--json", "0x1312", "--cache-dir", str(tmp_path)]
    warm = runner.invoke(app, args)
    cold = runner.invoke(app, [*args, "--no-cache"])
    assert warm.exit_code == cold.exit_code == 0
    assert warm.output == cold.output and json.loads(warm.output)["frames"]
    cleared = runner.invoke(app, ["cache", "clear", "--cache-dir", str(tmp_path)])
    assert cleared.exit_code == 0 and cache_entries(tmp_path) == []
    assert clear_cache(tmp_path) == 0


def test_profile_rewrite_is_identical_with_the_index(tmp_path: Path) -> None:
    profile = FIXTURES / "profiles" / "cppdemo-clang-dwarf5-pie.cpu.pb"
    search = [FIXTURES / "bin"]
    build_indexes([FIXTURES / "bin" / "cppdemo-clang-dwarf5-pie"], cache_dir=tmp_path)
    assert cache_entries(tmp_path)
    with_index, _ = symbolize_profile(profile, search_paths=search, cache_dir=tmp_path)
    without, _ = symbolize_profile(profile, search_paths=search, use_cache=False)
    assert with_index.SerializeToString(deterministic=True) == without.SerializeToString(deterministic=True)


def test_an_index_in_use_elsewhere_is_kept_when_replacing_it_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on Windows, where a file another process has mapped cannot be replaced."""
    elf, path = _built(tmp_path)
    before = path.read_bytes()

    def refuse(source: str, destination: Path) -> None:
        raise PermissionError(13, "in use", str(destination))

    monkeypatch.setattr("symbolize.index.store.os.replace", refuse)
    assert build_index(elf, tmp_path) == path  # builds and writes anew, whatever is there
    assert path.read_bytes() == before
    assert [entry.path for entry in cache_entries(tmp_path)] == [path]
    assert not list(path.parent.glob("*.tmp"))


def test_per_frame_values_are_computed_once_per_frame_object() -> None:
    computed: list[Frame] = []

    def count(frame: Frame) -> int:
        computed.append(frame)
        return len(computed)

    memo = PerFrame(count)
    shared, equal = Frame("f", "a.c", 1), Frame("f", "a.c", 1)
    assert [memo(shared), memo(shared), memo(equal), memo(shared)] == [1, 1, 2, 1]
    assert computed == [shared, equal]


def test_an_index_naming_an_unknown_array_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "crafted.idx"
    write_index(path, "key", {"a": array("B", [1, 2, 3])})
    data = bytearray(path.read_bytes())
    code_at = data.index(b"\x01\x00aB") + 3
    data[code_at : code_at + 1] = b"Z"
    # A crafted file, not a damaged one: its header checksum is right.
    header_length = int.from_bytes(data[8:12], "little")
    data[16:20] = zlib.crc32(bytes(data[20 : 20 + header_length])).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedInputError, match="index header is damaged"):
        IndexFile(path, "key")


@pytest.mark.parametrize("name", ["cppdemo-gcc-dwarf5-pie", "rustdemo-full"])
def test_index_stores_each_names_full_demangling(tmp_path: Path, name: str) -> None:
    elf, path = _built(tmp_path, name)
    index = IndexFile(path, index_key(elf))
    try:
        blob, offsets, name_full = index.array("str_blob"), index.array("str_offsets"), index.array("name_full")

        def text(string_id: int) -> str:
            return bytes(blob[offsets[string_id] : offsets[string_id + 1]]).decode("utf-8", "surrogateescape")

        names = (set(index.array("chain_name")) | set(index.array("frame_name"))) - {0}
        assert any(text(name_full[i]) != text(i) for i in names)  # something here is mangled
        for string_id in range(len(offsets) - 1):
            if string_id in names:
                assert text(name_full[string_id]) == demangle(text(string_id), "full")
            else:
                assert name_full[string_id] == 0
    finally:
        index.close()


def test_warm_lookups_take_names_demangled_from_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = FIXTURES / "bin" / "rustdemo-full"
    build_indexes([binary], cache_dir=tmp_path)
    vaddrs = fixture_addresses(binary)
    expected = lookup(binary, vaddrs, use_cache=False)
    monkeypatch.setattr("symbolize.demangle._full_names", {})

    def no_demangler(name: str) -> str:
        raise AssertionError(f"demangled {name} again")

    monkeypatch.setattr("symbolize.demangle._llvm_demangle", no_demangler)
    assert lookup(binary, vaddrs, cache_dir=tmp_path) == expected


def test_an_index_made_by_another_demangler_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elf, _ = _built(tmp_path)
    assert load_index(elf, tmp_path) is not None
    monkeypatch.setattr("symbolize.cache.DEMANGLER", "llvm 0.0.0")
    assert load_index(elf, tmp_path) is None


PE_BINARIES = sorted(
    FIXTURES / json.loads(path.read_text())["binary"] for path in (FIXTURES / "expected" / "windows").glob("*.json")
)


@pytest.mark.parametrize("binary", PE_BINARIES, ids=lambda p: p.name)
def test_indexed_pe_answers_are_identical_to_the_uncached_path(binary: Path, tmp_path: Path) -> None:
    """A PDB answers at ImageBase + RVA once bound to its image: its index must hold those answers."""
    from symbolize.formats.open import open_object

    expected = json.loads((FIXTURES / "expected" / "windows" / f"{binary.name}.json").read_text())
    vaddrs = [int(entry["address"], 16) for entry in expected["addresses"]]
    rng = random.Random(binary.name)
    image = open_object(binary)
    try:
        for segment in image.segments():
            if segment.executable:
                vaddrs += [rng.randrange(segment.vaddr, segment.vaddr + segment.memsz) for _ in range(500)]
    finally:
        image.close()
    uncached = _module(binary, SearchOptions())
    indexed = _module(binary, SearchOptions(index_dir=tmp_path, build_missing_indexes=True))
    uncached_results = uncached.lookup(vaddrs)
    assert any(isinstance(source, IndexedObject) for source in [*indexed.debug_files, indexed.binary])
    assert indexed.lookup(vaddrs) == uncached_results
    assert sum(not isinstance(result, Unknown) for result in uncached_results) > len(vaddrs) // 2
    # Warm: a new cache reading the index built above answers the same.
    warm = _module(binary, SearchOptions(index_dir=tmp_path))
    assert warm.lookup(vaddrs) == uncached_results


@pytest.mark.parametrize("name", ["cppdemo-gcc-dwarf5-pie", "rustdemo-full", "cdemo-gcc-symtab"])
def test_an_index_gives_its_runs_back_as_a_table_of_the_stored_columns(tmp_path: Path, name: str) -> None:
    """``IndexedObject.answers`` (a table of the stored columns, each run's file its own or its
    chain's) gives the runs the index answers from, frames and all."""
    elf, path = _built(tmp_path, name)
    indexed = IndexedObject(elf, IndexFile(path, index_key(elf)))
    try:
        table = indexed.answers(0)
        runs = indexed.runs()
        assert len(runs) > 10
        assert [(run.low, run.frames) for run in table] == [(run.low, run.frames) for run in runs]
        assert [run.high for run in table] == [min(run.high, (1 << 64) - 1) for run in runs]
        for run in runs:
            assert list(run.frames) == indexed.frames_at(run.low) == elf.frames_at(run.low)
    finally:
        indexed.close()


@pytest.mark.parametrize("typecode", ["Q", "q"])
@pytest.mark.parametrize("largest", [0, 255, 256, 65_535, 65_536, (1 << 32) - 1, 1 << 32, (1 << 63) - 1])
def test_a_wide_column_narrows_to_the_same_values(typecode: str, largest: int) -> None:
    """The run columns (64-bit arrays) narrow by a copy of their low bytes: every value, the
    largest included, comes through in the type a list of the same values takes."""
    from symbolize.index.build import _narrowest

    values = [0, 1, largest // 3, largest // 2, largest]
    narrowed = _narrowest(array(typecode, values))
    assert list(narrowed) == values
    assert narrowed.typecode == _narrowest(values).typecode

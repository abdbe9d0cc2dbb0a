"""Finding binaries and debug files, refusing mismatches, and Module.lookup's contract."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from symbolize.discovery import SearchOptions, find_module, open_module
from symbolize.formats import ElfFile
from symbolize.formats.errors import DebugIdMismatchError, MalformedInputError, MissingDebugInfoError
from symbolize.formats.types import (
    DebugHint,
    DebugId,
    DebugIdKind,
    DebugInfoSummary,
    Frame,
    Segment,
    Symbol,
    frames_or_errors,
)
from symbolize.loader import Loader
from symbolize.module import Module, Reason, Unknown
from tests.fixtures_data import BIN

DEBUG_DIR = BIN / "debug"
DEBUGLINK = BIN / "cdemo-gcc-debuglink"
BUILD_ID_BINARY = BIN / "cppdemo-gcc-buildid"
FAKE_ID = DebugId(DebugIdKind.GNU_BUILD_ID, b"\x01")


def build_id_of(path: Path) -> str:
    with ElfFile(path) as elf:
        return str(elf.debug_id)


def options(**kwargs: object) -> Loader:
    kwargs.setdefault("debug_dirs", [])
    return Loader(SearchOptions(**kwargs))  # type: ignore[arg-type]


def test_debuglink_next_to_binary() -> None:
    module = open_module(DEBUGLINK, options())
    assert [f.path for f in module.debug_files] == [BIN / "cdemo-gcc-debuglink.debug"]
    assert module.refused == []
    assert module.describe() == {
        "binary": str(DEBUGLINK),
        "debug_file": str(BIN / "cdemo-gcc-debuglink.debug"),
        "debug_id": build_id_of(DEBUGLINK),
    }


@pytest.mark.parametrize("where", [".debug", "debug-dir", "search-path"])
def test_debuglink_in_other_places(tmp_path: Path, where: str) -> None:
    binary_dir = tmp_path / "usr" / "bin"
    binary_dir.mkdir(parents=True)
    binary = Path(shutil.copy(DEBUGLINK, binary_dir))
    debug_dir, search = tmp_path / "debug", tmp_path / "search"
    target = {
        ".debug": binary_dir / ".debug",
        "debug-dir": debug_dir / binary_dir.relative_to(binary_dir.anchor),
        "search-path": search,
    }[where]
    target.mkdir(parents=True)
    shutil.copy(BIN / "cdemo-gcc-debuglink.debug", target)
    module = open_module(binary, options(debug_dirs=[debug_dir], search_paths=[search]))
    assert [f.path for f in module.debug_files] == [target / "cdemo-gcc-debuglink.debug"]


def test_debuglink_crc_mismatch_is_refused(tmp_path: Path) -> None:
    binary = Path(shutil.copy(DEBUGLINK, tmp_path))
    debug = tmp_path / "cdemo-gcc-debuglink.debug"
    debug.write_bytes((BIN / debug.name).read_bytes() + b"\0")  # same build ID, different CRC32
    module = open_module(binary, options())
    assert module.debug_files == []
    assert len(module.refused) == 1 and "CRC32" in module.refused[0]
    # The binary's symbol table still names code.
    symbol = next(s for s in module.binary.symbols() if s.size > 0)
    assert module.lookup([symbol.vaddr]) == [[Frame(function=symbol.name)]]


def test_debug_file_by_build_id() -> None:
    module = open_module(BUILD_ID_BINARY, options(debug_dirs=[DEBUG_DIR]))
    build_id = build_id_of(BUILD_ID_BINARY)
    expected = DEBUG_DIR / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    assert [f.path for f in module.debug_files] == [expected]


def test_build_id_mismatch_is_refused(tmp_path: Path) -> None:
    build_id = build_id_of(BUILD_ID_BINARY)
    fake = tmp_path / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    fake.parent.mkdir(parents=True)
    shutil.copy(BIN / "cdemo-gcc-debuglink.debug", fake)  # another build's debug file
    module = open_module(BUILD_ID_BINARY, options(debug_dirs=[tmp_path]))
    assert module.debug_files == []
    assert len(module.refused) == 1 and "does not match" in module.refused[0]


def test_binary_with_dwarf_is_its_own_debug_file() -> None:
    binary = BIN / "cdemo-gcc-dwarf5-pie"
    module = open_module(binary, options())
    assert [f.path for f in module.debug_files] == [binary]


def test_find_module_by_binary_option_and_search_path() -> None:
    build_id = build_id_of(DEBUGLINK)
    by_option = find_module("/usr/bin/cdemo-gcc-debuglink", build_id, options(binaries=[DEBUGLINK]))
    assert by_option.path == DEBUGLINK
    by_search = find_module("/usr/bin/cdemo-gcc-debuglink", None, options(search_paths=[BIN]))
    assert by_search.path == DEBUGLINK
    assert by_search.debug_files[0].path == BIN / "cdemo-gcc-debuglink.debug"
    # A --binary with another name is taken when its build ID is the one asked for.
    renamed = find_module("/opt/app", build_id.upper(), options(binaries=[BIN / "cdemo-gcc-symtab", DEBUGLINK]))
    assert renamed.path == DEBUGLINK


def test_find_module_refuses_mismatched_build_id() -> None:
    with pytest.raises(DebugIdMismatchError) as info:
        find_module("/usr/bin/cdemo-gcc-debuglink", "ab" * 20, options(search_paths=[BIN]))
    assert info.value.path == BIN / "cdemo-gcc-debuglink"
    assert info.value.found == build_id_of(DEBUGLINK)


def test_find_module_missing() -> None:
    with pytest.raises(MissingDebugInfoError, match="not found"):
        find_module("/no/such/binary", None, options(search_paths=[BIN]))


def test_find_module_falls_back_to_debug_file_by_build_id() -> None:
    build_id = build_id_of(BUILD_ID_BINARY)
    module = find_module("/gone/cppdemo", build_id, options(debug_dirs=[DEBUG_DIR]))
    assert str(module.binary.debug_id) == build_id
    assert module.image.segments()


def test_object_cache_reuses_and_reopens(tmp_path: Path) -> None:
    cache = Loader()
    copy = Path(shutil.copy(DEBUGLINK, tmp_path))
    first = cache.open(copy)
    assert cache.open(tmp_path / "." / copy.name) is first
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert cache.open(copy) is not first
    cache.close()


# --- Module.lookup with stand-in object files ------------------------------------------------


@dataclass
class FakeObject:
    """An ObjectFile answering from a table; raises for addresses in ``broken``."""

    frames: dict[int, list[Frame]]
    broken: set[int] = field(default_factory=set)
    named: bool = True
    calls: list[int] = field(default_factory=list)
    path: Path = Path("/fake")
    format: str = "elf"
    arch: str = "x86_64"
    debug_id: DebugId | None = FAKE_ID
    position_dependent: bool = False
    load_base: int = 0

    def segments(self) -> Sequence[Segment]:
        return []

    def symbols(self) -> Sequence[Symbol]:
        return []

    def debug_hints(self) -> Sequence[DebugHint]:
        return []

    def debug_info(self) -> DebugInfoSummary:
        return DebugInfoSummary(self.named, self.named, False, False)

    def frames_at(self, vaddr: int) -> list[Frame]:
        self.calls.append(vaddr)
        if vaddr in self.broken:
            raise MalformedInputError("broken unit", self.path, vaddr)
        return self.frames.get(vaddr, [])

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        return frames_or_errors(self.frames_at, vaddrs)

    def close(self) -> None:
        pass


def test_lookup_order_fallback_and_cache() -> None:
    debug = FakeObject({1: [Frame("inlined"), Frame("outer")]}, broken={3})
    binary = FakeObject({1: [Frame("symbol")], 2: [Frame("only_symbol")], 3: [Frame("symbol3")]})
    module = Module(binary, [debug])
    results = module.lookup([1, 2, 3, 4, 1])
    assert results == [
        [Frame("inlined"), Frame("outer")],
        [Frame("only_symbol")],
        [Frame("symbol3")],
        Unknown(Reason.NOT_COVERED),
        [Frame("inlined"), Frame("outer")],
    ]
    assert debug.calls == [1, 2, 3, 4]  # the repeated address came from the cache


def test_lookup_reports_broken_unit_for_that_address_only() -> None:
    binary = FakeObject({5: [Frame("fine")]}, broken={6})
    assert Module(binary, [binary]).lookup([6, 5]) == [
        Unknown(Reason.DAMAGED_DEBUG_INFO, "/fake: broken unit (at offset 0x6)"),
        [Frame("fine")],
    ]


def test_lookup_without_any_names() -> None:
    binary = FakeObject({}, named=False)
    assert Module(binary).lookup([1, 2]) == [Unknown(Reason.NO_DEBUG_INFO), Unknown(Reason.NO_DEBUG_INFO)]
    assert Module(binary).lookup([]) == []


def test_stripped_binary_gets_lines_from_its_debuglink_file() -> None:
    module = open_module(DEBUGLINK, options())
    functions = [s for s in module.binary.symbols() if s.size > 0 and not s.name.startswith("_")]
    assert functions
    for result in module.lookup([s.vaddr for s in functions]):
        assert not isinstance(result, Unknown)
        assert result[-1].file is not None and result[-1].line > 0

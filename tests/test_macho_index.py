"""Mach-O through the persistent index: dSYMs, slices of universal files and debug-map binaries
answer from their indexes exactly as they answer uncached."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from symbolize.api import build_indexes
from symbolize.cache import cache_entries
from symbolize.discovery import SearchOptions, open_module
from symbolize.formats.macho.file import MachOFile
from symbolize.index.indexed import IndexedObject
from symbolize.loader import Loader
from symbolize.module import Module, Unknown
from tests.fixtures_data import FIXTURES

# The variants with debug info to index: a dSYM, or the objects of a debug map.
INDEXED = sorted(
    path
    for path in (FIXTURES / "expected" / "macos").glob("*.json")
    if json.loads(path.read_text())["dsym"] or json.loads(path.read_text())["truth"]
)


def _variant(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _addresses(expected: dict[str, Any]) -> list[int]:
    """Every stored llvm-symbolizer address, and random ones all over the executable segments."""
    vaddrs = [int(entry["address"], 16) for entry in expected["addresses"]]
    rng = random.Random(expected["binary"] + expected["arch"])
    with MachOFile(FIXTURES / expected["binary"], expected["arch"]) as binary:
        for segment in binary.segments():
            if segment.executable:
                vaddrs += [rng.randrange(segment.vaddr, segment.vaddr + segment.memsz) for _ in range(800)]
    return vaddrs


def _module(expected: dict[str, Any], cache: SearchOptions) -> Module:
    return open_module(FIXTURES / expected["binary"], Loader(cache), arch=expected["arch"])


def _indexed_sources(module: Module) -> list[IndexedObject]:
    return [source for source in [*module.debug_files, module.binary] if isinstance(source, IndexedObject)]


@pytest.mark.parametrize("path", INDEXED, ids=lambda p: p.stem)
def test_indexed_macho_answers_are_identical_to_the_uncached_path(path: Path, tmp_path: Path) -> None:
    expected = _variant(path)
    vaddrs = _addresses(expected)
    uncached = _module(expected, SearchOptions()).lookup(vaddrs)
    assert sum(not isinstance(result, Unknown) for result in uncached) > len(expected["addresses"]) // 2
    indexed = _module(expected, SearchOptions(index_dir=tmp_path, build_missing_indexes=True))
    assert _indexed_sources(indexed), "no source of this Mach-O module was indexed"
    assert indexed.lookup(vaddrs) == uncached
    # Warm: a new cache reading the indexes built above answers the same.
    warm = _module(expected, SearchOptions(index_dir=tmp_path))
    assert _indexed_sources(warm)
    assert warm.lookup(vaddrs) == uncached


def test_symbolize_index_indexes_each_slice_of_a_universal_file_apart(tmp_path: Path) -> None:
    """One index per slice of the universal binary and of its dSYM: the slices' answers differ."""
    universal = [_variant(path) for path in INDEXED if "universal" in path.stem]
    assert len(universal) == 2
    for expected in universal:
        module = _module(expected, SearchOptions(index_dir=tmp_path, build_missing_indexes=True))
        indexed = _indexed_sources(module)
        assert {source.arch for source in indexed} == {expected["arch"]}
        assert any(source.path.parent.name == "DWARF" for source in indexed)  # the dSYM's slice
    assert len(cache_entries(tmp_path)) == 4  # binary and dSYM, each slice apart


def test_a_debug_map_index_is_keyed_by_the_objects_it_was_built_from(tmp_path: Path) -> None:
    """An index built while the objects were found is not used by a run that cannot find them."""
    expected = next(_variant(path) for path in INDEXED if path.stem == "cdemo-macho-x86_64-debugmap")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    binary = elsewhere / Path(expected["binary"]).name
    binary.write_bytes((FIXTURES / expected["binary"]).read_bytes())
    cache_dir = tmp_path / "cache"
    vaddrs = _addresses(expected)

    def lookup(search_paths: list[Path], cache: SearchOptions) -> list[object]:
        return list(open_module(binary, Loader(cache._replace(search_paths=tuple(search_paths)))).lookup(vaddrs))

    objects_dir = (FIXTURES / expected["binary"]).parent
    with_objects = lookup([objects_dir], SearchOptions(index_dir=cache_dir, build_missing_indexes=True))
    assert len(cache_entries(cache_dir)) == 1
    assert with_objects == list(_module(expected, SearchOptions()).lookup(vaddrs))
    without_objects = lookup([], SearchOptions())
    assert without_objects != with_objects  # the symbols alone: no lines
    assert lookup([], SearchOptions(index_dir=cache_dir)) == without_objects


def test_symbolize_index_builds_the_indexes_a_lookup_then_reads(tmp_path: Path) -> None:
    """``symbolize index`` over a binary with a dSYM and over a debug-map binary (its objects beside it)."""
    for stem in ("cppdemo-macho-x86_64", "cdemo-macho-arm64-debugmap"):
        expected = _variant(FIXTURES / "expected" / "macos" / f"{stem}.json")
        built = build_indexes([FIXTURES / expected["binary"]], cache_dir=tmp_path / stem)
        assert built, stem
        warm = _module(expected, SearchOptions(index_dir=tmp_path / stem))
        assert {source.index.path for source in _indexed_sources(warm)} == set(built)

"""A symbol source of the test's own (tests/memory_source.py) through the core: indexed, looked up,
background-indexed and used in a profile rewrite, with nothing in symbolize/ knowing its format."""

from __future__ import annotations

from pathlib import Path

import pytest

from symbolize.cache import build_index, index_key, is_indexable, load_index, with_index, worth_indexing
from symbolize.discovery import FileLoader
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import AnswerRegion, AnswerRun, DebugId, DebugIdKind, Frame
from symbolize.index.background import build_missing, failure_path, start_background_indexing
from symbolize.index.indexed import IndexedObject
from symbolize.module import Module, Reason, Unknown
from symbolize.rewrite import RewriteOptions, symbolize_profile
from tests.memory_source import MemorySource
from tests.test_rewrite import TEXT_START, location, make_profile

INNER = Frame("_ZN2ns5innerEv", "inner.h", 12, 3, 10)
CALLER = Frame("outer", "main.c", 40, 7, 38)
PLAIN = Frame("plain", "plain.c", 5, 0, 4)
SYMBOL = Frame("from_symbols")
BASE = TEXT_START


def _source(tmp_path: Path) -> MemorySource:
    path = tmp_path / "memory.bin"
    path.write_bytes(b"made-up contents")
    regions = [
        AnswerRegion(BASE, BASE + 0x100, 1),
        # Overlaps region 1 from a greater low: asked first there, but answers only part of it.
        AnswerRegion(BASE + 0x80, BASE + 0xC0, 2),
        AnswerRegion(BASE + 0x100, BASE + 0x200, 3),  # broken
        AnswerRegion(BASE, BASE + 0x180, 4, fallback=True),
    ]
    runs = {
        1: [
            AnswerRun(BASE, BASE + 0x20, (INNER, CALLER)),
            AnswerRun(BASE + 0x20, BASE + 0x40, (INNER._replace(line=13), CALLER)),
            AnswerRun(BASE + 0x60, BASE + 0x100, (PLAIN,)),
        ],
        2: [AnswerRun(BASE + 0x90, BASE + 0xA0, (PLAIN._replace(line=6),))],
        4: [AnswerRun(BASE + 0x30, BASE + 0x140, (SYMBOL,))],
    }
    return MemorySource(path, regions, runs, debug_id=DebugId(DebugIdKind.GNU_BUILD_ID, b"\xc0\xff\xee"),
                        load_base=BASE)


def _answer(source: MemorySource | IndexedObject, vaddr: int) -> list[Frame] | str:
    try:
        return source.frames_at(vaddr)
    except MalformedInputError as error:
        return f"error: {error}"


def test_the_source_answers_by_region_precedence(tmp_path: Path) -> None:
    source = _source(tmp_path)
    assert source.frames_at(BASE + 0x10) == [INNER, CALLER]
    assert source.frames_at(BASE + 0x95) == [PLAIN._replace(line=6)]  # region 2, the greater low
    assert source.frames_at(BASE + 0x85) == [PLAIN]  # region 2 has no run there: region 1 answers
    assert source.frames_at(BASE + 0x50) == [SYMBOL]  # region 1 has a gap: the fallback answers
    assert source.frames_at(BASE + 0x130) == [SYMBOL]  # inside the broken region, but a symbol covers it
    with pytest.raises(MalformedInputError, match="region 3 is broken"):
        source.frames_at(BASE + 0x150)
    assert source.frames_at(BASE + 0x300) == []


def test_indexed_and_uncached_answers_are_equal(tmp_path: Path) -> None:
    source = _source(tmp_path)
    assert is_indexable(source) and worth_indexing(source)
    build_index(source, tmp_path / "cache")
    indexed = load_index(_source(tmp_path), tmp_path / "cache")
    assert isinstance(indexed, IndexedObject)
    assert indexed.file.decoded == []  # answering from the index decodes nothing
    for vaddr in range(BASE - 0x10, BASE + 0x220):
        assert _answer(indexed, vaddr) == _answer(source, vaddr), hex(vaddr)
    assert indexed.file.decoded == []
    # Everything but answers that a symbol source declares is the source's own.
    assert indexed.load_base == BASE
    assert (indexed.format, indexed.arch, indexed.index_kind) == (source.format, source.arch, source.index_kind)


def test_the_index_key_holds_the_debug_id_fields(tmp_path: Path) -> None:
    key = index_key(_source(tmp_path))
    assert "gnu-build-id c0ffee age 0" in key and "MemorySource memory none" in key


def test_a_profile_is_rewritten_from_the_indexed_source(tmp_path: Path) -> None:
    index_dir = tmp_path / "cache"
    build_index(_source(tmp_path), index_dir)
    indexed = with_index(_source(tmp_path), index_dir, build_missing=False)
    assert isinstance(indexed, IndexedObject)
    module = Module(image=_source(tmp_path), own_source=indexed)

    def opener(filename: str, build_id: str | None, options: FileLoader) -> Module:
        return module

    addresses = {1: BASE + 0x10, 2: BASE + 0x95, 3: BASE + 0x150, 4: BASE + 0x50}
    profile = make_profile([[1], [2], [3], [4]], addresses)
    summary = symbolize_profile(profile, RewriteOptions(open_module=opener, adjust_return_addresses=False))
    strings = profile.string_table

    def names(location_id: int) -> list[str]:
        functions = {function.id: function for function in profile.function}
        return [strings[functions[line.function_id].system_name] for line in location(profile, location_id).line]

    assert names(1) == ["_ZN2ns5innerEv", "outer"]
    assert names(2) == ["plain"]
    assert names(3) == []  # the broken region's address stays unnamed, counted by its reason
    assert names(4) == ["from_symbols"]
    assert sum(mapping.reasons[Reason.DAMAGED_DEBUG_INFO] for mapping in summary.mappings) == 1
    broken = _answer(_source(tmp_path), BASE + 0x150)
    assert module.lookup([BASE + 0x150]) == [Unknown(Reason.DAMAGED_DEBUG_INFO, str(broken).removeprefix("error: "))]


def test_background_indexing_is_generic_and_records_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index_dir = tmp_path / "cache"
    source = _source(tmp_path)
    assert start_background_indexing([], index_dir) == []

    def bug(key: int) -> list[AnswerRun]:
        raise RuntimeError("a bug, not bad input")

    buggy = _source(tmp_path)
    buggy.answers = bug  # type: ignore[method-assign]
    # The detached builder reopens files by path; here it gets the synthetic source back.
    monkeypatch.setattr("symbolize.loader.open_object", lambda path, **opened_with: buggy)
    assert build_missing([source.path], index_dir) == 1
    assert "RuntimeError: a bug, not bad input" in (index_dir / "background.log").read_text()
    assert failure_path(index_dir, source).exists()
    # Recorded: no later run starts a builder for this file again (nothing is spawned here).
    assert start_background_indexing([source], index_dir) == []

    monkeypatch.setattr("symbolize.loader.open_object", lambda path, **opened_with: _source(tmp_path))
    failure_path(index_dir, source).unlink()
    assert build_missing([source.path], index_dir) == 0
    assert isinstance(load_index(source, index_dir), IndexedObject)

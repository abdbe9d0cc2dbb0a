"""A format of the test's own whose source needs a second file: the loader finds it and supplies it.

The format (an image that is also its symbol source, tests/memory_source.py's kind) lists two
regions; the second takes its frames from another file it names in the region's ``needs``. It is
discovered (``find_module``), indexed, looked up and used in a profile rewrite through
symbolize/loader.py, with nothing in symbolize/ knowing the format: the test registers a reader
for its files' magic (``formats.open.register_format``) and a locator for the hint.
The reader never opens the second file itself; read alone, its second region names nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from symbolize.discovery import Candidate, LocatorDefaults, LookupContext, SearchOptions, find_module, registry
from symbolize.formats.open import register_format
from symbolize.formats.types import (
    AnswerRegion,
    AnswerRun,
    DebugHint,
    DebugId,
    DebugIdKind,
    Frame,
    HintKind,
    ObjectFile,
    SectionSource,
)
from symbolize.index.indexed import IndexedObject
from symbolize.loader import Loader
from symbolize.module import Reason, Unknown
from symbolize.rewrite import RewriteOptions, symbolize_profile
from tests.memory_source import MemorySource
from tests.test_rewrite import TEXT_START, make_profile, names

APP_MAGIC = b"MEMAPP\n"
PART_MAGIC = b"MEMPART\n"
BASE = TEXT_START
OWN = Frame("own_function", "own.c", 7, 1, 5)
# The kind of hint the format's second region asks for; the test's locator follows it.
PART_HINT = DebugHint(HintKind.DEBUG_MAP_OBJECT, "part.mem")


class PartFile(MemorySource):
    """The second file, answering nothing itself: its function name is its ``frames`` section."""

    format = "mempart"

    def __init__(self, path: Path) -> None:
        super().__init__(path, [], {})
        self._frames = path.read_bytes().removeprefix(PART_MAGIC)

    def section_data(self, dwarf_name: str) -> bytes | None:
        return self._frames if dwarf_name == "frames" else None


class NeedingSource(MemorySource):
    """Region 1 answers from the file itself; region 2 from the part file supplied for its need."""

    def __init__(self, path: Path) -> None:
        regions = [AnswerRegion(BASE, BASE + 0x100, 1), AnswerRegion(BASE + 0x100, BASE + 0x200, 2, needs=(PART_HINT,))]
        runs = {1: [AnswerRun(BASE, BASE + 0x100, (OWN,))], 2: []}
        super().__init__(path, regions, runs, debug_id=DebugId(DebugIdKind.GNU_BUILD_ID, b"\x5e\xed"), load_base=BASE)
        self.supplied: list[tuple[DebugHint, SectionSource | None]] = []

    def supply(self, hint: DebugHint, found: SectionSource | None) -> None:
        self.supplied.append((hint, found))
        frames = found.section_data("frames") if found is not None else None
        if hint == PART_HINT and frames:
            self._runs[2] = [AnswerRun(BASE + 0x100, BASE + 0x200, (Frame(frames.decode(), "part.c", 3),))]


class PartLocator(LocatorDefaults):
    """The part file beside the image, by the name the hint records."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        directory = context.image_path.parent
        yield Candidate(directory / hint.name, directory)

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        return None if found.format == "mempart" else f"not a part file ({found.format})"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Path]:
    unregister = [
        register_format(APP_MAGIC, lambda path, arch: NeedingSource(path)),
        register_format(PART_MAGIC, lambda path, arch: PartFile(path)),
    ]
    kept = registry.located_by(HintKind.DEBUG_MAP_OBJECT)
    registry.register_locator(HintKind.DEBUG_MAP_OBJECT, PartLocator())
    (tmp_path / "part.mem").write_bytes(PART_MAGIC + b"from_the_part")
    path = tmp_path / "app.mem"
    path.write_bytes(APP_MAGIC)
    try:
        yield path
    finally:
        if kept is not None:
            registry.register_locator(HintKind.DEBUG_MAP_OBJECT, kept)
        for undo in unregister:
            undo()


def _lookup(app: Path, options: SearchOptions, vaddrs: Sequence[int]) -> tuple[list[object], list[object]]:
    with Loader(options) as loader:
        module = find_module(str(app), "5eed", loader)
        return list(module.lookup(vaddrs)), list(module.sources)


def test_read_alone_the_reader_answers_without_the_file_it_needs(app: Path) -> None:
    source = NeedingSource(app)
    assert source.frames_at(BASE + 0x10) == [OWN]
    assert source.frames_at(BASE + 0x110) == []
    assert source.supplied == []


def test_the_loader_supplies_the_needed_file_to_lookups(app: Path) -> None:
    results, _sources = _lookup(app, SearchOptions(), [BASE + 0x10, BASE + 0x110])
    assert results == [[OWN], [Frame("from_the_part", "part.c", 3)]]


def test_a_region_need_is_followed_only_when_the_region_is_asked(app: Path) -> None:
    with Loader() as loader:
        module = find_module(str(app), None, loader)
        image = module.image
        assert isinstance(image, NeedingSource)
        assert module.lookup([BASE + 0x10]) == [[OWN]]
        assert image.supplied == []
        module.lookup([BASE + 0x110])
        assert [(hint, found.path if found is not None else None) for hint, found in image.supplied] == [
            (PART_HINT, app.parent / "part.mem")
        ]


def test_a_missing_needed_file_is_supplied_as_none(app: Path) -> None:
    (app.parent / "part.mem").unlink()
    with Loader() as loader:
        module = find_module(str(app), None, loader)
        assert module.lookup([BASE + 0x10, BASE + 0x110]) == [[OWN], Unknown(Reason.NO_DEBUG_INFO)]
        assert isinstance(module.image, NeedingSource) and module.image.supplied == [(PART_HINT, None)]


def test_the_index_holds_the_answers_of_the_needed_file(app: Path, tmp_path: Path) -> None:
    options = SearchOptions(index_dir=tmp_path / "cache", build_missing_indexes=True)
    built, sources = _lookup(app, options, [BASE + 0x10, BASE + 0x110])
    assert any(isinstance(source, IndexedObject) for source in sources)
    assert built == [[OWN], [Frame("from_the_part", "part.c", 3)]]
    warm, sources = _lookup(app, SearchOptions(index_dir=tmp_path / "cache"), [BASE + 0x10, BASE + 0x110])
    assert any(isinstance(source, IndexedObject) for source in sources)
    assert warm == built


def test_a_profile_is_rewritten_with_the_needed_file(app: Path) -> None:
    profile = make_profile([[1, 2]], {1: BASE + 0x10, 2: BASE + 0x110}, mapping_files=(str(app),))
    profile.mapping[0].build_id = 0  # found by its path
    with Loader() as loader:
        symbolize_profile(profile, RewriteOptions(discovery=loader, adjust_return_addresses=False))
    assert names(profile, 1) == ["own_function"]
    assert names(profile, 2) == ["from_the_part"]

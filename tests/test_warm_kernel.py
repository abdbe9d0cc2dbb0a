"""The warm lookup kernel (native/src/warm.rs) against its Python twin (symbolize/answer_text.py).

Every fixture binary, indexed, gives the same bytes through ``render_lookup_answers`` as through
``AnswerText.render_reference``, in JSON and text, every demangle mode, with and without inlined
frames; so do hypothesis-made indexes (names with any characters, broken regions, gaps) and
hypothesis-made input lines (non-addresses, odd spellings, numbers past 64 bits).
"""

from __future__ import annotations

import itertools
import json
import random
import re
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.answer_text import AnswerText
from symbolize.cache import build_index, index_key, index_path, load_index
from symbolize.demangle import DemangleMode
from symbolize.discovery import SearchOptions, open_module
from symbolize.formats.elf import ElfFile
from symbolize.formats.native import kernels
from symbolize.formats.types import AnswerRegion, AnswerRun, Frame
from symbolize.index.indexed import IndexedObject
from symbolize.loader import Loader
from symbolize.module import Module
from symbolize.shaping import FrameShaper
from tests.fixtures_data import FIXTURES
from tests.memory_source import MemorySource

pytestmark = pytest.mark.skipif(kernels is None, reason="compiled kernels not built")

DEBUG_DIR = FIXTURES / "bin" / "debug"
BINARIES = sorted({FIXTURES / json.loads(p.read_text())["binary"] for p in (FIXTURES / "expected").glob("*.json")})
SHAPES = [(mode, inlines) for mode in ("full", "short", "none") for inlines in (True, False)]


def _texts(binary: Path) -> list[str]:
    """Every stored llvm-symbolizer address, random ones over the executable segments, odd lines."""
    expected = json.loads((FIXTURES / "expected" / f"{binary.name}.json").read_text())
    texts = [entry["address"] for entry in expected["addresses"]]
    rng = random.Random(binary.name)
    with ElfFile(binary) as elf:
        for segment in elf.segments():
            if segment.executable:
                texts += [hex(rng.randrange(segment.vaddr, segment.vaddr + segment.memsz)) for _ in range(400)]
    # Lines only Python's parse_address reads (the kernel asks it): echoed, or addresses after all.
    # The edges of the kernel's own reading (plain_address in native/src/warm.rs): 16 hex or 19
    # decimal digits at most, ASCII spaces around, no \x0b (which Python's strip takes off); a
    # number past 64 bits or below 0 the kernel leaves to the reference (the made-up indexes' test).
    return [*texts, "", "main", "0x", "12", "0X1F", " 0x10 ", "1_0", "0x1_0", "٣", "0x" + "0" * 20 + "1",
            " 0Xffffffffffffffff\t", "0x00000000000000001", "4096", "\x0b12", "\x1c0x10"]


def _both(module: Module, texts: list[str], mode: DemangleMode, inlines: bool, as_json: bool) -> tuple[str, str]:
    compiled = AnswerText(FrameShaper(mode, inlines), as_json)._compiled(module, texts)
    reference = AnswerText(FrameShaper(mode, inlines), as_json).render_reference(module, texts)
    assert compiled is not None, "the kernel declined a batch it should answer"
    return compiled, reference


@pytest.mark.parametrize("binary", BINARIES, ids=lambda p: p.name)
def test_every_fixture_answers_the_same_bytes_both_ways(binary: Path, tmp_path: Path) -> None:
    options = SearchOptions(debug_dirs=[DEBUG_DIR], index_dir=tmp_path, build_missing_indexes=True)
    module = open_module(binary, Loader(options))
    if not all(isinstance(source, IndexedObject) for source in module.sources):
        # A stripped binary's own symbol table is not indexed: the kernel leaves the batch to Python.
        assert AnswerText(FrameShaper("full", True), True)._compiled(module, ["0x1"]) is None
        return
    texts = _texts(binary)
    for mode, inlines in SHAPES:
        for as_json in (True, False):
            compiled, reference = _both(module, texts, mode, inlines, as_json)
            assert compiled == reference, (mode, inlines, as_json)


@pytest.mark.parametrize("binary", BINARIES[:3], ids=lambda p: p.name)
def test_hex_lines_read_by_the_kernel_as_they_came(binary: Path, tmp_path: Path) -> None:
    """``render_hex_lines`` hands the kernel the input lines themselves (leading zeros, upper
    case digits, sixteen digits): the bytes are those of the lines read as ints."""
    options = SearchOptions(debug_dirs=[DEBUG_DIR], index_dir=tmp_path, build_missing_indexes=True)
    module = open_module(binary, Loader(options))
    addresses = [int(text, 16) for text in _texts(binary) if re.fullmatch(r"0x[0-9a-fA-F]{1,16}", text)]
    lines = [f"0x{address:0{width}X}" for width, address in zip(itertools.cycle((1, 8, 16)), addresses)]
    lines += ["0xffffffffffffffff", "0x0000000000000000"]
    for mode, inlines in SHAPES:
        for as_json in (True, False):
            text = AnswerText(FrameShaper(mode, inlines), as_json)
            assert text._compiled(module, lines) is not None, "the kernel declined the lines"
            assert text.render_hex_lines(module, lines) == text.render_items(module, [int(line, 16) for line in lines])
            assert text.render_hex_lines(module, lines) == text.render_reference(module, lines)


def _memory_index(tmp_path: Path, regions: list[AnswerRegion], runs: dict[int, list[AnswerRun]]) -> IndexedObject:
    source = MemorySource(tmp_path / "memory.bin", regions, runs)
    source.path.write_bytes(b"")
    build_index(source, tmp_path / "cache")
    indexed = load_index(MemorySource(source.path, regions, runs), tmp_path / "cache")
    assert isinstance(indexed, IndexedObject)
    return indexed


# Names a real index may hold: plain C, mangled C++ and Rust, any text (escapes, non-ASCII), empty.
_NAMES = st.sampled_from(["main", "_ZN2ns5innerEv", "_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "", "f\"\\\n",
                          "\r\t\b\f\x01\x7f", "é→😀", "operator<<(int) const"])
_NAME = st.none() | _NAMES | st.text(max_size=12)
_FRAME = st.builds(
    Frame,
    _NAME,
    st.none() | st.sampled_from(["a.c", "", "dir/ü.h"]) | st.text(max_size=8),
    st.integers(0, 2**40),
    st.integers(0, 2**16),
    st.integers(0, 100),
)


@st.composite
def _regions_and_runs(draw: st.DrawFn) -> tuple[list[AnswerRegion], dict[int, list[AnswerRun]]]:
    count = draw(st.integers(1, 4))
    regions, runs = [], {}
    low = draw(st.integers(0, 64))
    for key in range(count):
        size = draw(st.integers(2, 64))
        regions.append(AnswerRegion(low, low + size, key))
        if draw(st.booleans()) or key == 0:
            cuts = sorted(draw(st.sets(st.integers(low + 1, low + size - 1), max_size=3)) | {low, low + size})
            runs[key] = [
                AnswerRun(start, end, tuple(draw(st.lists(_FRAME, min_size=1, max_size=4))))
                for start, end in itertools.pairwise(cuts)
                if draw(st.integers(0, 4))  # some pieces left out: gaps inside a region
            ]
        low += size + draw(st.integers(0, 16))
    return regions, runs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=_regions_and_runs(),
    extra=st.lists(st.text(max_size=6) | st.integers(-5, 2**70).map(hex), max_size=6),
    mode=st.sampled_from(["full", "short", "none"]),
    inlines=st.booleans(),
    as_json=st.booleans(),
)
def test_made_up_indexes_answer_the_same_bytes_both_ways(
    tmp_path_factory: pytest.TempPathFactory,
    shape: tuple[list[AnswerRegion], dict[int, list[AnswerRun]]],
    extra: list[str],
    mode: DemangleMode,
    inlines: bool,
    as_json: bool,
) -> None:
    regions, runs = shape
    indexed = _memory_index(tmp_path_factory.mktemp("index"), regions, runs)
    module = Module(indexed, [indexed], own_source=indexed)  # type: ignore[arg-type]
    texts = [hex(vaddr) for vaddr in range(0, regions[-1].high + 4)] + extra
    compiled = AnswerText(FrameShaper(mode, inlines), as_json)._compiled(module, texts)
    reference = AnswerText(FrameShaper(mode, inlines), as_json).render_reference(module, texts)
    if compiled is None:
        # Declined only where the Python path takes a turn the kernel leaves to it.
        assert any(text.startswith("0x-") or len(text) > 18 for text in texts) or _has_surrogates(reference)
    else:
        assert compiled == reference


def _has_surrogates(text: str) -> bool:
    return any(0xD800 <= ord(character) <= 0xDFFF for character in text)


def test_a_damaged_index_is_given_up_and_the_file_answers(tmp_path: Path) -> None:
    binary = FIXTURES / "bin" / "cppdemo-gcc-dwarf5-pie"
    module = open_module(binary, Loader(SearchOptions(index_dir=tmp_path, build_missing_indexes=True)))
    texts = _texts(binary)
    expected = AnswerText(FrameShaper("full", True), True).render_reference(module, texts)
    with ElfFile(binary) as elf:
        path = index_path(tmp_path, index_key(elf))
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the last array: its CRC32 no longer matches
    path.write_bytes(data)
    damaged = open_module(binary, Loader(SearchOptions(index_dir=tmp_path)))
    assert AnswerText(FrameShaper("full", True), True).render(damaged, texts) == expected
    assert not path.exists()


def test_kernel_errors_are_the_typed_error() -> None:
    assert kernels is not None
    with pytest.raises(kernels.IndexInconsistentError):
        kernels.crc32(b"abc", 2, 5)
    with pytest.raises(kernels.IndexInconsistentError):
        kernels.IndexedRuns(b"", dict.fromkeys(kernels.INDEXED_RUNS_ARRAYS, ("B", 0, 1)), [])


def test_the_kernel_borrows_the_mapped_index_and_lets_it_go(tmp_path: Path) -> None:
    """The kernel reads the index's mapping in place (a copy of the file was a tenth of a warm
    lookup of libpython): while it holds the mapping, the view cannot be released under it, and
    closing the source with a kernel alive neither raises nor leaves the kernel unable to read."""
    binary = FIXTURES / "bin" / "cppdemo-gcc-dwarf5-pie"
    options = SearchOptions(index_dir=tmp_path, build_missing_indexes=True)
    module = open_module(binary, Loader(options))
    (indexed,) = module.sources
    assert isinstance(indexed, IndexedObject)
    runs = indexed.compiled_runs()
    assert runs is not None
    with pytest.raises(BufferError):
        indexed.index._view.release()  # exported to the kernel, not copied
    texts = _texts(binary)
    expected = AnswerText(FrameShaper("full", True), True).render_reference(module, texts)
    assert AnswerText(FrameShaper("full", True), True)._compiled(module, texts) == expected
    indexed.close()
    assert indexed.compiled_runs() is None
    assert kernels is not None
    # The closed source's kernel still reads its mapping, unmapped only when the kernel goes.
    assert kernels.render_lookup_answers(texts, [runs], as_json=True, inlines=True, demangle_mode="full",
                                         shown=lambda name, full: full or name, parse_address=lambda text: None,
                                         unnamed_reason="no-debug-info") is not None


@given(data=st.binary(max_size=300), start=st.integers(0, 310), length=st.integers(0, 310))
def test_crc32_reads_any_buffer_as_zlib_does(data: bytes, start: int, length: int) -> None:
    assert kernels is not None
    for buffer in (data, memoryview(data), bytearray(data), memoryview(bytearray(data))[::1]):
        if start + length <= len(data):
            assert kernels.crc32(buffer, start, length) == zlib.crc32(data[start : start + length])
        else:
            with pytest.raises(kernels.IndexInconsistentError):
                kernels.crc32(buffer, start, length)

"""The PDB reader: identity and streams against llvm-pdbutil, other MSF layouts, refusals, hostile bytes.

Layouts lld-link cannot write (512-byte blocks, shuffled blocks, a stream directory spanning
several blocks) are made by re-laying a fixture PDB's own streams out (tests/msf_builder.py);
llvm-symbolizer reads the result too, which checks the builder.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import shutil
import struct
import subprocess
import time
from bisect import bisect_right
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.formats.answers import Block, flatten_answers
from symbolize.formats.errors import MalformedInputError, SymbolizeError, UnsupportedFormatError
from symbolize.formats.pdb import PdbFile
from symbolize.formats.pdb.codeview import (
    BA_CHANGE_CODE_LENGTH,
    BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET,
    BA_CHANGE_CODE_OFFSET,
    BA_CHANGE_CODE_OFFSET_AND_LINE_OFFSET,
    BA_CHANGE_CODE_OFFSET_BASE,
    BA_CHANGE_FILE,
    BA_CHANGE_LINE_OFFSET,
    BA_CODE_OFFSET,
    INLINE_SITE_KINDS,
    S_GPROC32,
    CodeViewError,
    InlineRow,
    annotation_rows,
    iter_annotations,
    iter_symbol_records,
    parse_inline_site,
)
from symbolize.formats.pdb.msf import MSFZ_MAGIC, MsfFile
from symbolize.formats.pdb.streams import FEATURE_MINIMAL_DEBUG_INFO
from symbolize.formats.pe.file import PeFile
from symbolize.formats.types import Frame
from tests.fixtures_data import FIXTURES
from tests.msf_builder import build_msf, streams_of

BIN = FIXTURES / "bin" / "windows"
PDBUTIL = shutil.which("llvm-pdbutil")
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")
IMAGE_BASE = 0x140000000


@cache
def _addresses(name: str) -> list[int]:
    data = json.loads((FIXTURES / "expected" / "windows" / f"{name}.json").read_text())
    return [int(entry["address"], 16) for entry in data["addresses"]]


def _answers(pdb: PdbFile, addresses: list[int]) -> list[list[tuple[str | None, str | None, int, int]]]:
    return [[(f.function, f.file, f.line, f.column) for f in pdb.frames_at(a)] for a in addresses]


@pytest.mark.skipif(PDBUTIL is None, reason="llvm-pdbutil not installed")
@pytest.mark.parametrize("name", ["winapp.pdb", "winlib.pdb", "win32demo.pdb", "winarm64.pdb"])
def test_identity_and_streams_agree_with_llvm_pdbutil(name: str) -> None:
    assert PDBUTIL is not None
    pdb = PdbFile(BIN / name)

    def dump(*what: str) -> str:
        assert PDBUTIL is not None
        return subprocess.run([PDBUTIL, "dump", *what, str(BIN / name)], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip

    summary = dump("--summary", "--modules")
    guid = re.search(r"GUID: \{([0-9A-F-]+)\}", summary)
    age = re.search(r"Age: (\d+)", summary)
    block = re.search(r"Block Size: (\d+)", summary)
    assert guid and age and block
    assert pdb.debug_id is not None and pdb.debug_id.guid_text() == guid.group(1).replace("-", "")
    assert pdb.dbi.age == int(age.group(1)) == pdb.debug_id.age
    assert pdb._msf.block_size == int(block.group(1))
    modules = re.findall(r"Mod (\d{4}) \| `([^`]*)`", summary)
    assert [(int(number), module) for number, module in modules] == [(m.number, m.name) for m in pdb.dbi.modules]
    contributions = re.findall(r"SC\S*\s*\| mod = (\d+), (\d+):(\d+), size = (\d+)", dump("--section-contribs"))
    listed = [tuple(map(int, c)) for c in contributions]
    assert listed and [c for c in listed if c[3] > 0] == [
        (c.module, c.section, c.offset, c.size) for c in pdb.dbi.contributions
    ]
    assert "/names" in pdb.info.named_streams


@pytest.mark.skipif(PDBUTIL is None, reason="llvm-pdbutil not installed")
def test_publics_agree_with_llvm_pdbutil() -> None:
    assert PDBUTIL is not None
    pdb = PdbFile(BIN / "winapp.pdb", image_base=IMAGE_BASE)
    dump = subprocess.run([PDBUTIL, "dump", "--publics", str(BIN / "winapp.pdb")], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    listed = re.findall(r"S_PUB32 \[size = \d+\] `([^`]*)`\n\s+flags = [^,]+, addr = (\d+):(\d+)", dump)
    ours = {(p.name, p.section, p.offset) for p in pdb._load_publics()}
    assert ours == {(name, int(section), int(offset)) for name, section, offset in listed}
    assert "?sort_values@app@@YAIPEAIHH@Z" in {name for name, _, _ in listed}


def _relaid(name: str, block_size: int, extra_streams: int = 0, seed: int = 1) -> bytes:
    streams: list[bytes | None] = list(streams_of((BIN / name).read_bytes()))
    streams += [b""] * extra_streams  # more stream sizes: a directory spanning several blocks
    return build_msf(streams, block_size, seed)


@pytest.mark.parametrize("block_size", [512, 1024, 2048, 32768])
def test_other_block_sizes_and_shuffled_blocks_give_the_same_answers(block_size: int, tmp_path: Path) -> None:
    data = _relaid("winapp.pdb", block_size, extra_streams=400)
    relaid = PdbFile(tmp_path / "winapp.pdb", image_base=IMAGE_BASE, data=data)
    assert relaid._msf.block_size == block_size
    if block_size <= 1024:
        directory_bytes = struct.unpack_from("<I", data, 32 + 12)[0]
        assert directory_bytes > block_size  # the directory really spans blocks
    original = PdbFile(BIN / "winapp.pdb", image_base=IMAGE_BASE)
    addresses = _addresses("winapp.exe")
    assert _answers(relaid, addresses) == _answers(original, addresses)


@pytest.mark.skipif(LLVM_SYMBOLIZER is None, reason="llvm-symbolizer not installed")
def test_llvm_symbolizer_reads_the_relaid_pdb_alike(tmp_path: Path) -> None:
    """The builder is checked by the peer: llvm-symbolizer answers the same from the 512-byte layout."""
    assert LLVM_SYMBOLIZER is not None
    shutil.copy(BIN / "winapp.exe", tmp_path / "winapp.exe")
    (tmp_path / "winapp.pdb").write_bytes(_relaid("winapp.pdb", 512, extra_streams=400))
    addresses = "\n".join(hex(a) for a in _addresses("winapp.exe")[:60])

    def run(directory: Path) -> str:
        return subprocess.run([LLVM_SYMBOLIZER, f"--obj={directory / 'winapp.exe'}", "--inlines"], input=addresses,
                              capture_output=True, text=True, check=True).stdout  # fmt: skip

    assert run(tmp_path) == run(BIN)


def _streams(name: str) -> list[bytes | None]:
    return list(streams_of((BIN / name).read_bytes()))


def test_fastlink_pdb_is_refused_with_a_reason(tmp_path: Path) -> None:
    streams = _streams("winapp.pdb")
    info = streams[1]
    assert info is not None
    streams[1] = info + struct.pack("<I", FEATURE_MINIMAL_DEBUG_INFO)
    with pytest.raises(UnsupportedFormatError, match="FASTLINK"):
        PdbFile(tmp_path / "fast.pdb", data=build_msf(streams, 4096))


def test_msfz_and_pdb20_are_refused_with_a_reason(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFormatError, match="MSFZ"):
        PdbFile(tmp_path / "z.pdb", data=MSFZ_MAGIC + bytes(64))
    with pytest.raises(UnsupportedFormatError, match=r"PDB 2\.0"):
        PdbFile(tmp_path / "old.pdb", data=b"Microsoft C/C++ program database 2.00\r\n\x1aJG\0\0" + bytes(64))


def test_without_ipi_names_and_lines_remain(tmp_path: Path) -> None:
    streams = _streams("winapp.pdb")
    streams[4] = None  # the IPI stream
    pdb = PdbFile(tmp_path / "noipi.pdb", image_base=IMAGE_BASE, data=build_msf(streams, 4096))
    original = PdbFile(BIN / "winapp.pdb", image_base=IMAGE_BASE)
    for vaddr in _addresses("winapp.exe"):
        ours, full = pdb.frames_at(vaddr), original.frames_at(vaddr)
        assert [(f.file, f.line) for f in ours] == [(f.file, f.line) for f in full]
        assert ours[-1] == full[-1]  # the outermost frame is named from the symbols, not the IPI
        assert all(frame.function is None for frame in ours[:-1])


def _module_stream_index(streams: list[bytes | None]) -> int:
    return _first_module(streams)[0]


def _first_module(streams: list[bytes | None]) -> tuple[int, int]:
    """(stream index, size of the symbols) of the first module."""
    module = PdbFile(Path("<x>"), data=build_msf(streams, 4096)).dbi.modules[0]
    return module.stream, module.symbols_size


def test_a_broken_module_leaves_the_others_named(tmp_path: Path) -> None:
    streams = _streams("winapp.pdb")
    index = _module_stream_index(streams)
    module = bytearray(streams[index] or b"")
    module[4:6] = b"\xff\xff"  # the first record now claims 65535 bytes
    streams[index] = bytes(module)
    pdb = PdbFile(tmp_path / "broken.pdb", image_base=IMAGE_BASE, data=build_msf(streams, 4096))
    # app::sort_values lives in module 0: only its public names it now, without lines.
    assert [(f.function, f.line) for f in pdb.frames_at(0x140001050)] == [("?sort_values@app@@YAIPEAIHH@Z", 0)]
    with pytest.raises(MalformedInputError, match="module 0"):
        pdb.answers(0)
    shapes = [a for a in _addresses("winapp.exe") if a >= 0x140001400]
    assert any(pdb.frames_at(a) for a in shapes)  # winshapes.obj (module 1) still answers


def test_backward_and_cyclic_end_offsets_do_not_hang(tmp_path: Path) -> None:
    streams = _streams("winapp.pdb")
    index, symbols_end = _first_module(streams)
    module = bytearray(streams[index] or b"")
    for record in list(iter_symbol_records(bytes(module), 4, symbols_end)):
        if record.kind in (S_GPROC32, 0x114D) and len(record.body) >= 8:
            struct.pack_into("<I", module, record.offset + 4 + 4, record.offset)  # End -> itself
    streams[index] = bytes(module)
    pdb = PdbFile(tmp_path / "cyclic.pdb", image_base=IMAGE_BASE, data=build_msf(streams, 4096))
    started = time.monotonic()
    for vaddr in _addresses("winapp.exe"):
        with contextlib.suppress(MalformedInputError):
            pdb.frames_at(vaddr)
    assert time.monotonic() - started < 10


def test_annotations_that_never_end_are_bounded(tmp_path: Path) -> None:
    """Inline sites whose annotations are all 'ChangeCodeOffset' with no length, or a bad compressed
    integer: the record's length bounds them; the site covers nothing or the module is reported broken."""
    streams = _streams("winapp.pdb")
    index, symbols_end = _first_module(streams)
    for filler in (b"\x03\x01", b"\x0b\xe0"):
        module = bytearray(streams[index] or b"")
        for record in list(iter_symbol_records(bytes(module), 4, symbols_end)):
            if record.kind == 0x114D:
                start = record.offset + 4 + 12
                end = record.offset + 2 + len(record.body) + 2
                module[start:end] = (filler * len(module))[: end - start]
        changed = list(streams)
        changed[index] = bytes(module)
        pdb = PdbFile(tmp_path / "loop.pdb", image_base=IMAGE_BASE, data=build_msf(changed, 4096))
        try:
            frames = pdb.frames_at(0x140001050)
            assert frames and len(frames) == 1  # no inline site covers anything now
        except MalformedInputError as err:
            assert "annotation" in str(err)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d[:100], "superblock|the file has|cut short"),
        (lambda d: d[:32] + struct.pack("<I", 3000) + d[36:], "block size"),
        (lambda d: d[: 32 + 20] + struct.pack("<I", 10**6) + d[56:], "past the end"),
        (lambda d: d[: 32 + 12] + struct.pack("<I", 10**7) + d[48:], "directory"),
        (lambda d: d[: len(d) // 3], "the file has|past the end|cut short|fewer blocks"),
    ],
    ids=["truncated-superblock", "bad-block-size", "block-map-past-file", "huge-directory", "truncated-streams"],
)
def test_broken_containers_raise_one_typed_error(change: object, message: str) -> None:
    data = (BIN / "winapp.pdb").read_bytes()
    assert callable(change)
    with pytest.raises(MalformedInputError, match=message):
        PdbFile(Path("broken.pdb"), data=change(data))


def test_stream_blocks_out_of_range_are_reported(tmp_path: Path) -> None:
    data = bytearray(_relaid("winapp.pdb", 512))
    block_size, _free, num_blocks, _directory_bytes, _zero, block_map = struct.unpack_from("<IIIIII", data, 32)
    first_directory_block = struct.unpack_from("<I", data, block_map * block_size)[0]
    directory_at = first_directory_block * block_size
    count = struct.unpack_from("<I", data, directory_at)[0]
    # The first block of the first non-empty stream now points far past the file.
    struct.pack_into("<I", data, directory_at + 4 + 4 * count, num_blocks + 1000)
    msf = MsfFile(bytes(data), tmp_path / "x.pdb")
    with pytest.raises(MalformedInputError, match="past the end"):
        for index in range(msf.stream_count):
            msf.stream(index)


def test_mutated_pdbs_give_answers_or_one_typed_error(tmp_path: Path) -> None:
    """A small mutation fuzz over the 512-byte layout of a fixture PDB (bounded: a few seconds)."""
    original = _relaid("win32demo.pdb", 512, seed=7)
    addresses = _addresses("win32demo.exe")[::16]
    rng = random.Random("pdb-mutations")
    started = time.monotonic()
    attempts = 0
    while time.monotonic() - started < 4 and attempts < 400:
        attempts += 1
        data = bytearray(original)
        for _ in range(rng.randrange(1, 6)):
            position = rng.randrange(len(data))
            data[position] = rng.randrange(256) if rng.random() < 0.7 else data[position] ^ 0xFF
        try:
            pdb = PdbFile(tmp_path / "m.pdb", image_base=0x400000, data=bytes(data))
            pdb.symbols()
            pdb.debug_info()
            for vaddr in addresses:
                with contextlib.suppress(MalformedInputError):
                    pdb.frames_at(vaddr)
        except SymbolizeError:
            pass
    assert attempts >= 20


def test_pdb_frames_agree_with_the_image_for_exports() -> None:
    """The DLL's exports and its PDB's publics name the same entry points."""
    image = PeFile(BIN / "winlib.dll")
    pdb = PdbFile(BIN / "winlib.pdb")
    pdb.bind_image(image)
    for export in image.exports():
        assert pdb.frames_at(export.vaddr)[-1].function == export.name


def stripped_pdb(name: str = "winapp.pdb") -> bytes:
    """What /PDBSTRIPPED leaves of a fixture PDB: publics, no module streams, the DBI's stripped flag
    (lld-link cannot write one, so it is made from the fixture: module streams dropped, flag set)."""
    streams = _streams(name)
    dbi = bytearray(streams[3] or b"")
    position = 64
    modules_end = 64 + struct.unpack_from("<i", dbi, 24)[0]
    while position + 64 <= modules_end:
        stream = struct.unpack_from("<H", dbi, position + 34)[0]
        if stream != 0xFFFF:
            streams[stream] = None
        struct.pack_into("<H", dbi, position + 34, 0xFFFF)
        names_end = dbi.index(b"\0", dbi.index(b"\0", position + 64) + 1) + 1
        position = (names_end + 3) & ~3
    struct.pack_into("<H", dbi, 56, struct.unpack_from("<H", dbi, 56)[0] | 0x2)  # DBI Flags: stripped
    streams[3] = bytes(dbi)
    return build_msf(streams, 4096)


def test_a_stripped_pdb_names_functions_and_says_why_lines_are_missing(tmp_path: Path) -> None:
    pdb = PdbFile(tmp_path / "stripped.pdb", image_base=IMAGE_BASE, data=stripped_pdb())
    full = PdbFile(BIN / "winapp.pdb", image_base=IMAGE_BASE)
    assert not pdb.debug_info().has_line_info and pdb.debug_info().has_symbols
    reason = pdb.lines_missing_reason()
    assert reason is not None and "stripped" in reason
    starts = [a for a in _addresses("winapp.exe") if full.frames_at(a) and full.frames_at(a)[-1].function
              and full.frames_at(a)[-1].function.startswith("?")]  # fmt: skip
    assert starts
    for vaddr in starts:
        assert [(f.function, f.line) for f in pdb.frames_at(vaddr)] == [(full.frames_at(vaddr)[-1].function, 0)]


def _reference_annotation_rows(data: bytes, first_line: int, file_id: int) -> list[InlineRow]:
    """annotation_rows as it read the annotations before it was made one loop: through iter_annotations."""
    rows: list[InlineRow] = []
    code, line, file = 0, first_line, file_id
    open_row: tuple[int, int, int] | None = None
    for annotation in iter_annotations(data):
        opcode, operand = annotation.opcode, annotation.first
        moves = (BA_CODE_OFFSET, BA_CHANGE_CODE_OFFSET_BASE, BA_CHANGE_CODE_OFFSET)
        if opcode in (*moves, BA_CHANGE_CODE_OFFSET_AND_LINE_OFFSET, BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET):
            if opcode == BA_CHANGE_CODE_OFFSET_AND_LINE_OFFSET:
                packed = operand >> 4
                line += -(packed >> 1) if packed & 1 else packed >> 1
                code += operand & 0xF
            else:
                code += annotation.second if opcode == BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET else operand
            if open_row is not None and code > open_row[0]:
                rows.append(InlineRow(open_row[0], code, open_row[1], open_row[2]))
            open_row = (code, line, file)
        if opcode in (BA_CHANGE_CODE_LENGTH, BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET):
            if open_row is not None and code + operand > open_row[0]:
                rows.append(InlineRow(open_row[0], code + operand, open_row[1], open_row[2]))
            open_row = None
            if opcode == BA_CHANGE_CODE_LENGTH:  # ChangeCodeLengthAndCodeOffset stays at its row's start
                code += operand
        elif opcode == BA_CHANGE_LINE_OFFSET:
            line += operand
        elif opcode == BA_CHANGE_FILE:
            file = operand
    return rows


def _rows_or_error(read: Callable[[bytes, int, int], list[InlineRow]], data: bytes) -> object:
    try:
        return read(data, 10, 4)
    except CodeViewError as err:
        return ("error", str(err), err.offset)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 13), st.integers(0, 255)), max_size=40).map(bytes))
def test_annotation_rows_read_what_iter_annotations_reads(data: bytes) -> None:
    assert _rows_or_error(annotation_rows, data) == _rows_or_error(_reference_annotation_rows, data)


def test_annotation_rows_of_every_fixture_site_match_the_reference() -> None:
    checked = 0
    for name in ("winapp.pdb", "winlib.pdb", "win32demo.pdb"):
        streams = _streams(name)
        for module in PdbFile(BIN / name).dbi.modules:
            if module.stream == 0xFFFF:
                continue
            for record in iter_symbol_records(streams[module.stream] or b"", 4, module.symbols_size):
                if record.kind in INLINE_SITE_KINDS:
                    annotations = parse_inline_site(record).annotations
                    assert annotation_rows(annotations, 7, 0) == _reference_annotation_rows(annotations, 7, 0)
                    checked += 1
    assert checked >= 40  # every inline site of the three fixtures


def _flattened_frames(blocks: list[Block], vaddr: int) -> list[Frame] | str:
    """What the index answers at ``vaddr`` from flattened blocks: frames, or "error"."""
    for block in blocks:
        if block.low <= vaddr < block.high:
            if block.table is None:
                return "error"
            position = bisect_right(block.table.lows, vaddr, block.first, block.end) - 1
            if position >= block.first and vaddr < block.table.highs[position]:
                return list(block.table.frames(position))
            return []
    return []


def _lazy_frames(pdb: PdbFile, vaddr: int) -> list[Frame] | str:
    try:
        return pdb.frames_at(vaddr)
    except MalformedInputError:
        return "error"


def _damaged(kind: str) -> bytes:
    streams = _streams("winapp.pdb")
    index, symbols_end = _first_module(streams)
    module = bytearray(streams[index] or b"")
    for record in list(iter_symbol_records(bytes(module), 4, symbols_end)):
        if kind == "cyclic-ends" and record.kind in (S_GPROC32, 0x114D) and len(record.body) >= 8:
            struct.pack_into("<I", module, record.offset + 4 + 4, record.offset)
        if kind == "bad-annotations" and record.kind == 0x114D:
            start, end = record.offset + 4 + 12, record.offset + 4 + len(record.body)
            module[start:end] = (b"\x0b\xe0" * len(module))[: end - start]
    if kind == "broken-module":
        module[4:6] = b"\xff\xff"
    streams[index] = bytes(module)
    return build_msf(streams, 4096)


@pytest.mark.parametrize("case", ["winapp", "winlib", "win32demo", "winarm64", "cyclic-ends", "bad-annotations",
                                  "broken-module"])  # fmt: skip
def test_the_index_answers_what_lookups_answer(case: str) -> None:
    """Lookups decode a procedure at a time (its inline sites lazily), the index all of a module at once
    (answers() runs, flattened): both must give the same frames at every address, damaged files included."""
    name = case if case.startswith("win") else "winapp"
    image = PeFile(BIN / f"{name}.{'dll' if name == 'winlib' else 'exe'}")
    data = (BIN / f"{name}.pdb").read_bytes() if case == name else _damaged(case)
    lazy = PdbFile(Path(f"{case}.pdb"), data=data)
    lazy.bind_image(image)
    eager = PdbFile(Path(f"{case}.pdb"), data=data)
    eager.bind_image(image)
    blocks = flatten_answers(eager.answer_regions(), eager.answers)
    addresses = _addresses(f"{name}.{'dll' if name == 'winlib' else 'exe'}")
    assert [_lazy_frames(lazy, a) for a in addresses] == [_flattened_frames(blocks, a) for a in addresses]


@cache
def _publics_of(name: str) -> tuple[PdbFile, list[int]]:
    pdb = PdbFile(BIN / name, image_base=IMAGE_BASE)
    edges = sorted({edge for s in pdb.symbols() for edge in (s.vaddr, s.vaddr + s.size)})
    return pdb, edges


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(path.name for path in BIN.glob("*.pdb"))),
    st.integers(min_value=0, max_value=1 << 20),
    st.integers(min_value=-2, max_value=2),
)
def test_publics_fallback_per_address_equals_the_runs_of_every_public(name: str, draw: int, nudge: int) -> None:
    """The cold path's publics fallback (one address at a time, no symbol per public) answers as
    PublicFrames over every public's symbol does, at the publics' edges and between them."""
    from symbolize.formats.pdb.publics import PublicFrames

    pdb, edges = _publics_of(name)
    assert pdb._sections_in_order
    every = PublicFrames([symbol for symbol in pdb.symbols() if symbol.size > 0])
    vaddr = edges[draw % len(edges)] + nudge if draw % 2 else IMAGE_BASE + draw
    assert pdb._public_run_at(vaddr) == every.run_at(vaddr)


def _runs_block_by_block(msf: MsfFile, blocks: list[int], size: int) -> list[tuple[int, int]] | str:
    """The file ranges of a stream read one block at a time, every block checked: the reference
    for MsfFile._runs, whose consecutive-blocks shortcut checks the first and last only."""
    data_size, block_size = len(msf._data), msf.block_size
    ranges: list[tuple[int, int]] = []
    remaining = size
    for block in blocks:
        if block == 0 or block >= msf.num_blocks or block * block_size >= data_size:
            return "bad block"
        take = min(remaining, block_size)
        if take <= 0:
            continue
        if block * block_size + take > data_size:
            return "cut short"
        if ranges and ranges[-1][1] == block * block_size:
            ranges[-1] = (ranges[-1][0], block * block_size + take)
        else:
            ranges.append((block * block_size, block * block_size + take))
        remaining -= take
    return "too few" if remaining > 0 else ranges


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_stream_ranges_equal_a_block_by_block_read(data: st.DataObject) -> None:
    """Consecutive blocks read as one range give what reading (and checking) each block gives,
    errors included, at the file's first and last blocks and past them."""
    msf = MsfFile((BIN / "winapp.pdb").read_bytes(), BIN / "winapp.pdb")
    first = data.draw(st.sampled_from([0, 1, 2, msf.num_blocks - 2, msf.num_blocks - 1, msf.num_blocks]))
    blocks = list(range(first, first + data.draw(st.integers(0, 4))))
    if blocks and data.draw(st.booleans()):
        blocks[data.draw(st.integers(0, len(blocks) - 1))] += data.draw(st.sampled_from([-1, 1, 3]))
    size = data.draw(st.integers(0, (len(blocks) + 1) * msf.block_size))
    expected = _runs_block_by_block(msf, blocks, size)
    if isinstance(expected, str):
        with pytest.raises(MalformedInputError):
            msf._runs(blocks, size, "stream")
    else:
        assert msf._runs(blocks, size, "stream") == expected

"""formats/cab: the ``_`` files of a symbol store, decoded three ways that must agree.

The Python reference (formats/cab/folder.py, lzx.py), the compiled path (the Rust ``cab`` crate)
and cabextract (libmspack) decode real cabinets (tests/data/cab/README.md: makecab's, libmspack's
and libarchive's test cabinets) and the ones tests/cab_builder.py writes; hostile cabinets raise
one MalformedInputError naming the file, on both paths.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symbolize.formats.cab as cab
from symbolize.formats.cab import decode_file_compiled, extract_single
from symbolize.formats.cab.folder import decode_file
from symbolize.formats.cab.structure import DATA, FILE, FOLDER, HEADER, parse
from symbolize.formats.errors import InputLimitError, MalformedInputError, UnsupportedFormatError
from symbolize.formats.native import kernels
from tests.cab_builder import (
    ALIGNED,
    COMPRESS_LZX,
    COMPRESS_MSZIP,
    UNCOMPRESSED,
    VERBATIM,
    LzxEncoder,
    cabinet,
    lzx_cabinet,
    mszip_cabinet,
    stored_cabinet,
)
from tests.kernel_twins import kernels_in

DATA_DIR = Path(__file__).parent / "data" / "cab"
REPO = Path(__file__).parent.parent
PDBS = sorted((REPO / "fixtures" / "bin" / "windows").glob("*.pdb"))
CAP = 1 << 26
CABEXTRACT = shutil.which("cabextract")
needs_kernels = pytest.mark.skipif(kernels is None, reason="compiled kernels not built or SYMBOLIZE_PURE_PYTHON set")
needs_cabextract = pytest.mark.skipif(CABEXTRACT is None, reason="cabextract (Debian package cabextract) not installed")


PATHS = [kernels, None] if kernels is not None else [None]


def reference(data: bytes, path: str = "test.cab") -> bytes:
    return decode_file(parse(data, path=path, max_bytes=CAP), path)


def compiled(data: bytes, path: str = "test.cab") -> bytes:
    return decode_file_compiled(data, parse(data, path=path, max_bytes=CAP).size, path)


def cabextract(data: bytes, tmp_path: Path) -> bytes:
    """The one file cabextract extracts from `data` (libmspack checks each block's checksum too)."""
    assert CABEXTRACT is not None
    source = tmp_path / "in.cab"
    source.write_bytes(data)
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([CABEXTRACT, "-q", "-d", str(out), str(source)], check=True, capture_output=True, timeout=60)
    (extracted,) = [path for path in out.rglob("*") if path.is_file()]
    return extracted.read_bytes()


def folders_as_single_files(data: bytes) -> list[tuple[int, bytes]]:
    """Each folder of a real multi-file cabinet re-wrapped, its data blocks byte for byte, as a
    one-file cabinet holding the whole folder: (typeCompress, cabinet)."""
    (*_, folder_count, _files, flags, _set, _index) = \
        HEADER.unpack_from(data, 0)
    assert flags == 0
    wrapped = []
    for index in range(folder_count):
        first, block_count, compress = FOLDER.unpack_from(data, HEADER.size + index * FOLDER.size)
        blocks, position = [], first
        for _ in range(block_count):
            _sum, input_size, output_size = DATA.unpack_from(data, position)
            start = position + DATA.size
            blocks.append((data[start:start + input_size], output_size))
            position = start + input_size
        wrapped.append((compress, cabinet(f"folder{index}", blocks, compress)))
    return wrapped


# --- real cabinets ------------------------------------------------------------------------------

def test_real_lzx_cabinet_of_a_large_file() -> None:
    """libmspack's large-files-cab.cab: LZX with a 2 MiB window, 449 frames, 14 MB out."""
    data = (DATA_DIR / "large-files-cab.cab").read_bytes()
    name, contents = extract_single(data, path="large-files-cab.cab", max_bytes=CAP)
    assert name == "large-files.cab" and len(contents) == 14689228
    assert contents[:4] == b"MSCF"  # it holds a cabinet in turn
    assert reference(data) == contents
    if kernels is not None:
        assert compiled(data) == contents


@needs_cabextract
def test_real_lzx_cabinet_agrees_with_cabextract(tmp_path: Path) -> None:
    data = (DATA_DIR / "large-files-cab.cab").read_bytes()
    expected = hashlib.sha256(cabextract(data, tmp_path)).digest()
    assert hashlib.sha256(reference(data)).digest() == expected


@pytest.mark.parametrize("source", ["test_read_format_cab_3.cab", "test_read_format_cab_2.cab", "mszip_lzx_qtm.cab"])
def test_real_makecab_folders(source: str, tmp_path: Path) -> None:
    """makecab.exe's LZX and MSZIP folders (libarchive's, libmspack's), re-wrapped block for block
    as one-file cabinets: the reference, the compiled path and cabextract agree; Quantum is refused."""
    seen = set()
    for compress, wrapped in folders_as_single_files((DATA_DIR / source).read_bytes()):
        seen.add(compress & 0xF)
        if compress & 0xF == 2:
            with pytest.raises(UnsupportedFormatError, match="Quantum"):
                extract_single(wrapped, path=source, max_bytes=CAP)
            continue
        contents = reference(wrapped)
        if kernels is not None:
            assert compiled(wrapped) == contents
        if CABEXTRACT is not None:
            assert cabextract(wrapped, tmp_path) == contents
        if source == "test_read_format_cab_3.cab":  # libarchive's script: empty, 33000 zeros, file1, file2
            assert contents.startswith(b"\0" * 33000 + b"                          file 1 contents\nhello\n")
    assert seen & {COMPRESS_MSZIP, COMPRESS_LZX}


def test_e8_translation_of_a_zero_target() -> None:
    """libarchive's E8 cabinet holds `E8 00000000` at offset 0, whose target lzxd 0.2.7 undoes
    wrongly: extract_single gives the reference's bytes (libmspack's) on both paths."""
    data = (DATA_DIR / "test_read_format_cab_lzx_e8.cab").read_bytes()
    expected = reference(data)
    assert expected[:5] == b"\xe8\0\0\0\0"
    assert extract_single(data, path="e8", max_bytes=CAP) == ("e8.bin", expected)


@pytest.mark.parametrize("source", ["lzx-premature-matches.cab", "lzx-main-tree-no-lengths.cab"])
def test_libmspack_hostile_lzx(source: str) -> None:
    data = (DATA_DIR / source).read_bytes()
    for module in PATHS:
        with kernels_in(module, cab), pytest.raises(MalformedInputError, match=source):
            extract_single(data, path=source, max_bytes=CAP)


# --- what the encoder writes, checked by all three ---------------------------------------------

@needs_cabextract
@pytest.mark.parametrize("pdb", PDBS[:2], ids=lambda path: path.name)
@pytest.mark.parametrize("form", ["lzx-verbatim", "lzx-mixed-e8", "lzx-spanning-blocks", "mszip", "gcab", "stored"])
def test_fixture_pdbs(pdb: Path, form: str, tmp_path: Path) -> None:
    original = pdb.read_bytes()
    if form == "gcab":
        gcab = shutil.which("gcab")
        if gcab is None:
            pytest.skip("gcab (Debian package gcab) not installed")
        source = tmp_path / pdb.name
        source.write_bytes(original)
        subprocess.run([gcab, "-c", "-z", "-n", str(tmp_path / "out.cab"), str(source)], check=True, timeout=60)
        data = (tmp_path / "out.cab").read_bytes()
    elif form == "lzx-verbatim":
        data = lzx_cabinet(pdb.name, original, window_bits=17)
    elif form == "lzx-mixed-e8":
        data = lzx_cabinet(pdb.name, original, window_bits=21, kinds=(ALIGNED, UNCOMPRESSED, VERBATIM), e8=True)
    elif form == "lzx-spanning-blocks":
        data = lzx_cabinet(pdb.name, original, window_bits=18, kinds=(UNCOMPRESSED, ALIGNED, VERBATIM), e8=True,
                           block_size=20001)
    elif form == "mszip":
        data = mszip_cabinet(pdb.name, original)
    else:
        data = stored_cabinet(pdb.name, original)
    assert extract_single(data, path="x", max_bytes=CAP) == (pdb.name, original)
    assert reference(data) == original
    if kernels is not None:
        assert compiled(data) == original
    assert cabextract(data, tmp_path) == original


# Data with structure an LZ coder finds: runs, repeats near and far, E8 bytes, noise.
pieces = st.one_of(
    st.binary(max_size=40),
    st.tuples(st.integers(0, 255), st.integers(1, 600)).map(lambda run: bytes([run[0]]) * run[1]),
    st.tuples(st.sampled_from([b"\xe8", b"\xe8\0\0\0\0", b"\xe8\xff\xff\xff\xff"]), st.binary(min_size=4, max_size=4))
    .map(lambda call: call[0] + call[1]),
)
payloads = st.lists(pieces, max_size=60).flatmap(
    lambda parts: st.integers(0, 6).map(lambda copies: b"".join(parts) * copies))


# Blocks of any size: they start mid-frame, span frames, end odd (an uncompressed one's pad byte).
block_sizes = st.one_of(st.just(32768), st.integers(300, 70000))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=payloads, window_bits=st.sampled_from([15, 16, 17, 21]),
       kinds=st.lists(st.sampled_from([VERBATIM, ALIGNED, UNCOMPRESSED]), min_size=1, max_size=3), e8=st.booleans(),
       block_size=block_sizes)
def test_lzx_round_trip(data: bytes, window_bits: int, kinds: list[int], e8: bool, block_size: int) -> None:
    written = lzx_cabinet("a.pdb", data, window_bits=window_bits, kinds=kinds, e8=e8, block_size=block_size)
    assert reference(written) == data
    if kernels is not None:
        assert extract_single(written, path="x", max_bytes=CAP) == ("a.pdb", data)


@needs_cabextract
# tmp_path is shared by the examples: cabextract() empties its output directory each time.
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=payloads.filter(bool), window_bits=st.sampled_from([15, 21]),
       kinds=st.lists(st.sampled_from([VERBATIM, ALIGNED, UNCOMPRESSED]), min_size=1, max_size=3), e8=st.booleans(),
       block_size=block_sizes)
def test_lzx_round_trip_cabextract(data: bytes, window_bits: int, kinds: list[int], e8: bool, block_size: int,
                                   tmp_path: Path) -> None:
    """The encoder is checked by libmspack, not only by the decoder it was written beside."""
    written = lzx_cabinet("a.pdb", data, window_bits=window_bits, kinds=kinds, e8=e8, block_size=block_size)
    assert cabextract(written, tmp_path) == data


# --- hostile cabinets ----------------------------------------------------------------------------

@functools.cache
def mutation_seeds() -> dict[str, bytes]:
    """Cabinets to mutate: checksummed LZX and MSZIP, LZX without checksums (mutations then reach
    the decoders), and libarchive's real E8 one."""
    unsummed = LzxEncoder(16).encode(bytes(range(256)) * 40 + b"\xe8\0\0\0\0" * 50, [ALIGNED, UNCOMPRESSED])
    return {"lzx": lzx_cabinet("x.pdb", bytes(range(256)) * 40, kinds=(VERBATIM, ALIGNED)),
            "lzx-unsummed": cabinet("x.pdb", unsummed, COMPRESS_LZX | 16 << 8, checksums=False),
            "mszip": mszip_cabinet("x.pdb", bytes(range(256)) * 40),
            "real": (DATA_DIR / "test_read_format_cab_lzx_e8.cab").read_bytes()}


@settings(max_examples=150, deadline=None)
@given(seed=st.sampled_from(["lzx", "lzx-unsummed", "mszip", "real"]), flips=st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=4), cut=st.integers(0, 10**6))
def test_mutated_cabinets_fail_typed(seed: str, flips: list[tuple[int, int]], cut: int) -> None:
    """Flipped or truncated cabinets give bytes of the declared size or MalformedInputError, on
    both paths; where both decode, they agree (blocks without checksums included: the decoders
    then meet the corrupt streams themselves)."""
    data = bytearray(mutation_seeds()[seed])
    for position, mask in flips:
        data[position % len(data)] ^= mask
    mutated = bytes(data[:max(1, len(data) - cut % 64)] if cut % 3 == 0 else data)
    outcomes = []
    for module in PATHS:
        try:
            with kernels_in(module, cab):
                _name, contents = extract_single(mutated, path="mutated.pd_", max_bytes=1 << 20)
        except (MalformedInputError, UnsupportedFormatError) as error:
            assert "mutated.pd_" in str(error)
            outcomes.append(None)
        else:
            assert len(contents) == parse(mutated, path="m", max_bytes=1 << 20).size
            outcomes.append(contents)
    decoded = [outcome for outcome in outcomes if outcome is not None]
    assert len(set(decoded)) <= 1


def test_caps_and_shapes() -> None:
    pdb = bytes(range(256)) * 300
    good = lzx_cabinet("a.pdb", pdb)
    with pytest.raises(InputLimitError, match=r"a\.pd_.*declares 76800 bytes.*limit 1000"):
        extract_single(good, path="a.pd_", max_bytes=1000)
    # The file entry under-declares: the blocks' total is capped too.
    with pytest.raises(InputLimitError, match="data blocks declare more"):
        extract_single(cabinet("a.pdb", [(b"x" * 30000, 30000)] * 3, 0, file_size=10), path="a.pd_",
                       max_bytes=50000)
    two_files = bytearray(good)
    struct.pack_into("<H", two_files, 28, 2)
    with pytest.raises(MalformedInputError, match="1 folders and 2 files"):
        extract_single(bytes(two_files), path="a.pd_", max_bytes=CAP)
    spanning = bytearray(good)
    struct.pack_into("<H", spanning, 30, 2)
    with pytest.raises(MalformedInputError, match="spans several cabinets"):
        extract_single(bytes(spanning), path="a.pd_", max_bytes=CAP)
    with pytest.raises(MalformedInputError, match="no MSCF signature"):
        extract_single(b"MSCX" + good[4:], path="a.pd_", max_bytes=CAP)
    with pytest.raises(MalformedInputError, match="shorter than a cabinet header"):
        extract_single(good[:20], path="a.pd_", max_bytes=CAP)
    bad_sum = bytearray(good)
    bad_sum[-1] ^= 1
    with pytest.raises(MalformedInputError, match="fails its checksum"):
        extract_single(bytes(bad_sum), path="a.pd_", max_bytes=CAP)
    window = bytearray(good)
    struct.pack_into("<H", window, HEADER.size + 6, COMPRESS_LZX | (22 << 8))
    with pytest.raises(MalformedInputError, match="LZX window"):
        extract_single(bytes(window), path="a.pd_", max_bytes=CAP)
    short = bytearray(good)
    struct.pack_into("<I", short, 8, len(short) + 1)
    with pytest.raises(MalformedInputError, match="declares"):
        extract_single(bytes(short), path="a.pd_", max_bytes=CAP)


def test_name_is_the_entry_s() -> None:
    assert extract_single(stored_cabinet("ünï.pdb", b"abc"), path="x", max_bytes=10) == ("ünï.pdb", b"abc")
    entry = HEADER.size + FOLDER.size + FILE.size
    unterminated = bytearray(stored_cabinet("a.pdb", b""))
    unterminated[entry:] = b"n" * 300
    with pytest.raises(MalformedInputError, match="unterminated"):
        extract_single(bytes(unterminated), path="x", max_bytes=10)


@needs_kernels
def test_compiled_and_reference_agree_on_every_fixture_pdb() -> None:
    for pdb in PDBS:
        data = lzx_cabinet(pdb.name, pdb.read_bytes(), window_bits=21, kinds=(VERBATIM, ALIGNED), e8=True)
        assert compiled(data) == reference(data) == pdb.read_bytes()


@pytest.mark.parametrize("form", ["mszip", "lzx"])
def test_committed_compressed_files_are_the_fixtures(form: str) -> None:
    """fixtures/make_compressed_symbols.py's outputs (symsrv24's store serves them) are the
    fixture PDBs, EXEs and DLLs, on both paths."""
    windows = REPO / "fixtures" / "bin" / "windows"
    originals = sorted(path for path in windows.iterdir() if path.suffix in (".pdb", ".exe", ".dll"))
    written = sorted((windows / "compressed" / form).iterdir())
    assert [path.name for path in written] == [path.name[:-1] + "_" for path in originals]
    for path, original in zip(written, originals, strict=True):
        for module in PATHS:
            with kernels_in(module, cab):
                assert extract_single(path.read_bytes(), path=str(path), max_bytes=CAP) == \
                    (original.name, original.read_bytes())

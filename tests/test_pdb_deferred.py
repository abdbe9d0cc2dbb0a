"""A warm lookup reads a PDB's identity only (formats/pdb/deferred.py), and answers as a cold one.

The identity read from a few blocks is the reader's own (GUID, DBI age, machine) on every fixture
PDB and its re-laid MSF layouts; anything else (another container, damage) reads as None, and the
PDB is then opened whole, so a damaged or mismatched PDB is refused with the reason the reader
gives, index or not.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.api import build_indexes, lookup, open_module
from symbolize.formats.errors import SymbolizeError
from symbolize.formats.pdb import PdbFile
from symbolize.formats.pdb.deferred import DeferredPdb, read_pdb_identity
from symbolize.formats.pdb.msf import MSFZ_MAGIC
from symbolize.formats.pe.file import PeFile
from symbolize.index.indexed import IndexedObject
from symbolize.loader import SuppliedSource
from tests.fixtures_data import WINDOWS_BIN
from tests.msf_builder import build_msf, streams_of

BIN = WINDOWS_BIN
PDBS = sorted(BIN.glob("*.pdb"))
IMAGES = ["winapp.exe", "winlib.dll", "win32demo.exe", "winarm64.exe"]


@pytest.mark.parametrize("path", PDBS, ids=lambda path: path.name)
@pytest.mark.parametrize("block_size", [None, 512, 1024])
def test_the_identity_is_the_readers(path: Path, block_size: int | None, tmp_path: Path) -> None:
    if block_size is not None:  # the same streams in another layout (shuffled blocks, a long directory)
        relaid = tmp_path / path.name
        relaid.write_bytes(build_msf(list(streams_of(path.read_bytes())), block_size, seed=7))
        path = relaid
    identity = read_pdb_identity(path)
    reader = PdbFile(path)
    assert identity is not None
    assert (identity.debug_id, identity.arch) == (reader.debug_id, reader.arch)


def test_what_is_not_a_readable_pdb_has_no_identity(tmp_path: Path) -> None:
    data = (BIN / "winapp.pdb").read_bytes()
    cases = {
        "image.exe": (BIN / "winapp.exe").read_bytes(),
        "msfz.pdb": MSFZ_MAGIC + data[len(MSFZ_MAGIC) :],
        "superblock.pdb": data[:40],
        "directory.pdb": data[:4096],
        "empty.pdb": b"",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        assert read_pdb_identity(tmp_path / name) is None, name
    assert read_pdb_identity(tmp_path / "missing.pdb") is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_headers_read_as_an_identity_or_none(data: st.DataObject, tmp_path: Path) -> None:
    """Mutated superblocks, directories and stream heads: an identity or None, never an exception,
    and an identity only where the reader, when it opens the file, finds the same."""
    original = (BIN / "winapp.pdb").read_bytes()
    mutated = bytearray(original)
    for _ in range(data.draw(st.integers(1, 6))):
        position = data.draw(st.integers(0, 24 * 1024))
        mutated[position] = data.draw(st.integers(0, 255))
    path = tmp_path / "mutated.pdb"
    path.write_bytes(bytes(mutated))
    identity = read_pdb_identity(path)
    try:
        reader = PdbFile(path)
    except SymbolizeError:  # the reader's refusals are tested in test_pdb.py
        return
    if identity is not None:
        assert (identity.debug_id, identity.arch) == (reader.debug_id, reader.arch)


@pytest.mark.parametrize("name", IMAGES)
def test_a_warm_lookup_never_opens_the_pdb(name: str, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    build_indexes([BIN / name], cache_dir=cache_dir)
    module = open_module(BIN / name, cache_dir=cache_dir)
    source = module.debug_files[0]
    # The index answers for the loader's source (symbolize/loader.py), whose reader is the stand-in.
    assert isinstance(source, IndexedObject) and isinstance(source.file, SuppliedSource)
    stand_in = source.file.reader
    assert isinstance(stand_in, DeferredPdb)
    reader = PdbFile((BIN / name).with_suffix(".pdb"), image_base=PeFile(BIN / name).image_base)
    addresses = [symbol.vaddr + offset for symbol in reader.symbols()[:200] for offset in (0, 1, 7)]
    warm = module.lookup(addresses)
    assert stand_in._file is None  # answered from the index, the PDB never read
    assert warm == open_module(BIN / name, use_cache=False).lookup(addresses)
    assert warm == lookup(BIN / name, addresses, demangle="none", cache_dir=cache_dir)


def test_a_warm_cli_run_does_not_import_the_pdb_reader(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    build_indexes([BIN / "winapp.exe"], cache_dir=cache_dir)
    script = (
        "import sys; from symbolize.cli.app import main; sys.argv[1:] = ['lookup', '--obj', sys.argv[1], '--json', "
        "'--cache-dir', sys.argv[2], '--no-background-index', '0x140001000'];\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(name for name in sys.modules if name.startswith('symbolize.formats.pdb.')), file=sys.stderr)"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(BIN / "winapp.exe"), str(cache_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.strip()
    assert run.stderr.strip().splitlines()[-1] == "['symbolize.formats.pdb.deferred', 'symbolize.formats.pdb.msf']"


def _with_pdb(tmp_path: Path, data: bytes) -> Path:
    image = tmp_path / "image" / "winapp.exe"
    image.parent.mkdir(exist_ok=True)
    shutil.copy(BIN / "winapp.exe", image)
    (image.parent / "winapp.pdb").write_bytes(data)
    return image


def test_another_builds_pdb_is_refused_alike_with_an_index(tmp_path: Path) -> None:
    """A PDB of another build beside the image: the same refusal, with both IDs, warm or cold."""
    streams = list(streams_of((BIN / "winapp.pdb").read_bytes()))
    info = bytearray(streams[1] or b"")
    info[12:28] = bytes(range(16))
    streams[1] = bytes(info)
    image = _with_pdb(tmp_path, build_msf(streams, 4096))
    cache_dir = tmp_path / "cache"
    build_indexes([BIN / "winapp.exe"], cache_dir=cache_dir)  # the right build's index is there
    cold = open_module(image, use_cache=False)
    warm = open_module(image, cache_dir=cache_dir)
    assert cold.refused and warm.refused == cold.refused
    assert all(source.path != image.parent / "winapp.pdb" for source in warm.debug_files)


def test_a_damaged_pdb_without_an_index_is_refused_as_the_reader_refuses_it(tmp_path: Path) -> None:
    """The identity reads, the rest is broken (the DBI's module list runs past it): no index answers
    for it, so it is opened whole and refused with the reader's error, as without a cache."""
    streams = list(streams_of((BIN / "winapp.pdb").read_bytes()))
    dbi = bytearray(streams[3] or b"")
    struct.pack_into("<i", dbi, 24, len(dbi))  # ModInfoSize past the stream
    streams[3] = bytes(dbi)
    image = _with_pdb(tmp_path, build_msf(streams, 4096))
    assert read_pdb_identity(image.parent / "winapp.pdb") is not None
    cold = open_module(image, use_cache=False)
    warm = open_module(image, cache_dir=tmp_path / "cache")
    assert cold.refused and warm.refused == cold.refused

"""The PE reader on the Windows fixtures, checked against llvm-readobj and the PDBs, and on hostile bytes."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from symbolize.formats.errors import MalformedInputError, SymbolizeError
from symbolize.formats.open import open_object
from symbolize.formats.pdb import PdbFile
from symbolize.formats.pe.file import PeFile
from symbolize.formats.types import DebugId, DebugIdKind, HintKind
from tests.fixtures_data import WINDOWS_BIN

BIN = WINDOWS_BIN
IMAGES = ["winapp.exe", "winlib.dll", "win32demo.exe", "winarm64.exe", "mingwapp.exe", "rustwin.exe"]
READOBJ = shutil.which("llvm-readobj")


def _readobj(*args: str) -> str:
    assert READOBJ is not None
    return subprocess.run([READOBJ, *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(READOBJ is None, reason="llvm-readobj not installed")
@pytest.mark.parametrize("name", IMAGES)
def test_headers_and_sections_agree_with_llvm_readobj(name: str) -> None:
    image = PeFile(BIN / name)
    dump = _readobj("--file-headers", "--sections", str(BIN / name))
    machine = re.search(r"Machine: IMAGE_FILE_MACHINE_(\w+)", dump)
    assert machine is not None
    assert {"AMD64": "x86_64", "I386": "i386", "ARM64": "aarch64"}[machine.group(1)] == image.arch
    assert f"ImageBase: 0x{image.image_base:X}" in dump
    assert f"SizeOfImage: {image.size_of_image}" in dump
    sections = re.findall(r"Name: (\S+) \(.*\n\s+VirtualSize: 0x([0-9A-F]+)\n\s+VirtualAddress: 0x([0-9A-F]+)", dump)
    assert len(sections) >= 2
    assert [(s.name, s.memsz, s.vaddr - image.image_base) for s in image.segments()] == [
        (name, int(size, 16), int(rva, 16)) for name, size, rva in sections
    ]
    assert image.load_base == image.image_base and not image.position_dependent


@pytest.mark.skipif(READOBJ is None, reason="llvm-readobj not installed")
@pytest.mark.parametrize("name", IMAGES)
def test_codeview_record_agrees_with_llvm_readobj(name: str) -> None:
    image = PeFile(BIN / name)
    dump = _readobj("--coff-debug-directory", str(BIN / name))
    guid = re.search(r"PDBGUID: \(([0-9A-F ]+)\)", dump)
    age = re.search(r"PDBAge: (\d+)", dump)
    path = re.search(r"PDBFileName: ?(.*)", dump)
    assert guid and age and path and image.codeview is not None
    assert image.codeview.guid == bytes.fromhex(guid.group(1).replace(" ", ""))
    assert image.debug_id == DebugId(DebugIdKind.PDB, image.codeview.guid, int(age.group(1)))
    assert image.codeview.pdb_path == path.group(1).strip()


@pytest.mark.parametrize("name", ["winapp.exe", "winlib.dll", "win32demo.exe", "winarm64.exe"])
def test_image_and_its_pdb_share_guid_and_age(name: str) -> None:
    image = PeFile(BIN / name)
    pdb = PdbFile(BIN / name.replace(".exe", ".pdb").replace(".dll", ".pdb"))
    assert image.debug_id is not None and image.debug_id == pdb.debug_id
    (hint,) = image.debug_hints()
    assert hint.kind is HintKind.PDB and hint.debug_id == pdb.debug_id
    assert hint.name == f"C:\\build\\{Path(pdb.path).name}"


@pytest.mark.skipif(READOBJ is None, reason="llvm-readobj not installed")
def test_exports_agree_with_llvm_readobj() -> None:
    image = PeFile(BIN / "winlib.dll")
    dump = _readobj("--coff-exports", str(BIN / "winlib.dll"))
    listed = dict(re.findall(r"Name: (\w+)\n\s+RVA: 0x([0-9A-F]+)", dump))
    assert {s.name: s.vaddr - image.image_base for s in image.exports()} == {k: int(v, 16) for k, v in listed.items()}
    assert len(listed) == 3


@pytest.mark.skipif(shutil.which("llvm-nm") is None, reason="llvm-nm not installed")
def test_mingw_coff_symbols_agree_with_llvm_nm() -> None:
    image = PeFile(BIN / "mingwapp.exe")
    out = subprocess.run(["llvm-nm", "--defined-only", str(BIN / "mingwapp.exe")], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    rows = (line.split() for line in out.splitlines())
    text_symbols = {name: int(value, 16) for value, kind, name in rows if kind in "tT"}
    ours = {symbol.name: symbol.vaddr for symbol in image.coff_symbols()}
    assert ours and all(text_symbols.get(name) == vaddr for name, vaddr in ours.items())
    assert "_ZN3app11sort_valuesEPjii" in ours


def test_mingw_long_section_names_serve_dwarf() -> None:
    image = PeFile(BIN / "mingwapp.exe")
    assert {".debug_info", ".debug_line", ".debug_abbrev"} <= {segment.name for segment in image.segments()}
    info = image.section_data("debug_info")
    assert info is not None and len(info) > 100
    assert image.debug_info().has_dwarf and image.has_pdata


def test_open_object_reads_pe_and_pdb() -> None:
    assert isinstance(open_object(BIN / "winapp.exe"), PeFile)
    assert isinstance(open_object(BIN / "winapp.pdb"), PdbFile)


def _with_codeview(data: bytes, record: bytes) -> bytes:
    """``data`` (a fixture image) with its CodeView record's bytes replaced by ``record`` (same size)."""
    start = data.index(b"RSDS")
    out = bytearray(data)
    out[start : start + len(record)] = record
    return bytes(out)


def test_nb10_record_is_recognised_and_refused(tmp_path: Path) -> None:
    data = (BIN / "winapp.exe").read_bytes()
    nb10 = b"NB10" + struct.pack("<III", 0, 0x12345678, 3) + b"C:\\old\\app.pdb\0"
    path = tmp_path / "old.exe"
    path.write_bytes(_with_codeview(data, nb10))
    image = PeFile(path)
    assert image.codeview is not None and image.codeview.signature == "NB10"
    assert image.codeview.pdb_path == "C:\\old\\app.pdb" and image.codeview.age == 3
    assert image.debug_id is None and image.debug_hints() == []
    assert "NB10" in image.unsupported_debug_reason and "not supported" in image.unsupported_debug_reason


@pytest.mark.parametrize("cut", [2, 64, 0x80, 0x190, 0x300])
def test_truncated_images_raise_one_typed_error(cut: int, tmp_path: Path) -> None:
    path = tmp_path / "cut.exe"
    path.write_bytes((BIN / "winapp.exe").read_bytes()[:cut])
    with pytest.raises(MalformedInputError) as info:
        PeFile(path)
    assert info.value.path == path


def test_mutated_images_raise_only_typed_errors(tmp_path: Path) -> None:
    import random

    original = (BIN / "mingwapp.exe").read_bytes()
    rng = random.Random("pe-mutations")
    for attempt in range(30):
        data = bytearray(original)
        for _ in range(rng.randrange(1, 8)):
            position = rng.randrange(0, 0x400) if rng.random() < 0.7 else rng.randrange(len(data))
            data[position] = rng.randrange(256)
        path = tmp_path / f"m{attempt}.exe"
        path.write_bytes(bytes(data))
        try:
            image = PeFile(path)
            image.segments()
            image.symbols()
            image.debug_hints()
            image.frames_at(0x140001050)
        except SymbolizeError:
            pass

"""Local symbol stores the symbol path names: plain directories by name, ``file.ptr`` pointers, and
what is refused (a pointer out of the named directories, another build's PDB)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from symbolize.api import lookup, open_module, remote_options
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.pdb import PdbFile
from symbolize.module import Unknown
from symbolize.remote.symsrv_layout import macho_dwarf_key, pdb_key
from tests.fixtures_data import EXPECTED, MACOS_BIN, WINDOWS_BIN


def _copy_image(tmp_path: Path, name: str = "winapp.exe") -> Path:
    image = tmp_path / "image" / name
    image.parent.mkdir()
    shutil.copy(WINDOWS_BIN / name, image)
    return image


def _named(image: Path) -> tuple[int, int]:
    """(how many of the fixture's addresses are named as llvm-symbolizer names them from the PDB, of how many)."""
    entries = json.loads((EXPECTED / "windows" / "winapp.exe.json").read_text())["addresses"]
    addresses = [int(entry["address"], 16) for entry in entries]
    theirs = [entry["frames"][-1]["function"] for entry in entries]
    results = lookup(image, addresses, demangle="none", use_cache=False)
    ours = [None if isinstance(r, Unknown) else r[-1].function for r in results]
    return sum(1 for a, b in zip(ours, theirs, strict=True) if a == b), len(theirs)


def _store_dir(root: Path) -> Path:
    key = pdb_key("winapp.pdb", PdbFile(WINDOWS_BIN / "winapp.pdb").debug_id)
    assert key is not None
    directory = root / key.relative().parent
    directory.mkdir(parents=True)
    return directory


def test_plain_symbol_path_directory_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _copy_image(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    before, total = _named(image)
    shutil.copy(WINDOWS_BIN / "winapp.pdb", plain / "winapp.pdb")
    monkeypatch.setenv("_NT_SYMBOL_PATH", f"srv*{tmp_path / 'cache'}*https://127.0.0.1:9/none;{plain}")
    assert before < total
    assert _named(image) == (total, total)


@pytest.mark.parametrize("under", ["symbols/exe", "exe", ""])
def test_plain_symbol_path_directory_as_dbghelp_looks(
    under: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DIR/symbols/<ext>/x.pdb, DIR/<ext>/x.pdb, DIR/x.pdb ("Symbol path for Windows debuggers")."""
    image = _copy_image(tmp_path)
    plain = tmp_path / "plain"
    (plain / under).mkdir(parents=True, exist_ok=True)
    shutil.copy(WINDOWS_BIN / "winapp.pdb", plain / under / "winapp.pdb")
    monkeypatch.setenv("_NT_SYMBOL_PATH", str(plain))
    named, total = _named(image)
    assert named == total


def test_alt_symbol_path_is_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _copy_image(tmp_path)
    store = tmp_path / "store"
    shutil.copy(WINDOWS_BIN / "winapp.pdb", _store_dir(store) / "winapp.pdb")
    monkeypatch.delenv("_NT_SYMBOL_PATH", raising=False)
    monkeypatch.setenv("_NT_ALT_SYMBOL_PATH", f"cache*{store}")
    named, total = _named(image)
    assert named == total


def test_file_ptr_into_a_named_directory_is_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _copy_image(tmp_path)
    drops = tmp_path / "drops" / "build7"
    drops.mkdir(parents=True)
    shutil.copy(WINDOWS_BIN / "winapp.pdb", drops / "winapp.pdb")
    store = tmp_path / "store"
    (_store_dir(store) / "file.ptr").write_text(f"PATH:{drops / 'winapp.pdb'}\r\n")
    monkeypatch.setenv("_NT_SYMBOL_PATH", f"srv*{store};cache*{tmp_path / 'drops'}")
    named, total = _named(image)
    assert named == total


def test_file_ptr_out_of_the_named_directories_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _copy_image(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(WINDOWS_BIN / "winapp.pdb", elsewhere / "winapp.pdb")
    store = tmp_path / "store"
    (_store_dir(store) / "file.ptr").write_text(f"{elsewhere / 'winapp.pdb'}\n")
    monkeypatch.setenv("_NT_SYMBOL_PATH", f"srv*{store}")
    module = open_module(image, use_cache=False)
    assert not module.debug_files
    assert any(f"{elsewhere / 'winapp.pdb'}: outside {store}" in reason for reason in module.refused)


def test_file_ptr_saying_why_points_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _copy_image(tmp_path)
    store = tmp_path / "store"
    (_store_dir(store) / "file.ptr").write_text("MSG: removed by the publisher\n")
    monkeypatch.setenv("_NT_SYMBOL_PATH", f"srv*{store}")
    module = open_module(image, use_cache=False)
    assert not module.debug_files


def test_another_builds_pdb_in_a_store_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _copy_image(tmp_path)
    store = tmp_path / "store"
    # winlib's PDB where winapp's key says: found by its key, refused by its GUID and age.
    shutil.copy(WINDOWS_BIN / "winlib.pdb", _store_dir(store) / "winapp.pdb")
    monkeypatch.setenv("_NT_SYMBOL_PATH", f"srv*{store}")
    module = open_module(image, use_cache=False)
    assert not module.debug_files
    assert any("does not match the image's RSDS record" in reason for reason in module.refused)


def test_dsym_dwarf_in_an_ssqp_store_under_a_search_path(tmp_path: Path) -> None:
    """``_.dwarf/mach-uuid-sym-<UUID>/_.dwarf``: a dSYM's DWARF file as SSQP stores it."""
    binary = tmp_path / "app" / "cppdemo-arm64"
    binary.parent.mkdir()
    shutil.copy(MACOS_BIN / "cppdemo-arm64", binary)
    dwarf = MACOS_BIN / "cppdemo-arm64.dSYM" / "Contents" / "Resources" / "DWARF" / "cppdemo-arm64"
    key = macho_dwarf_key(MachOFile(dwarf).debug_id)
    assert key is not None
    stored = tmp_path / "store" / key.relative()
    stored.parent.mkdir(parents=True)
    shutil.copy(dwarf, stored)
    answers = json.loads((EXPECTED / "macos" / "cppdemo-macho-arm64.json").read_text())["addresses"][:40]
    vaddrs = [int(entry["address"], 16) for entry in answers]
    lines = [[(f["function"], f["line"]) for f in entry["frames"]] for entry in answers]

    def found(**options: object) -> list[list[tuple[str | None, int]]]:
        results = lookup(binary, vaddrs, demangle="none", use_cache=False, **options)  # type: ignore[arg-type]
        return [[] if isinstance(r, Unknown) else [(f.function, f.line) for f in r] for r in results]

    assert found() != lines  # the symbol table alone: no lines
    assert found(search_paths=[tmp_path / "store"]) == lines


@pytest.mark.parametrize("form", ["mszip", "lzx"])
def test_compressed_pdb_in_a_local_store_is_decoded_into_the_download_store(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``symstore /compress``'s ``winapp.pd_`` in a store mounted here: decoded, verified and kept in
    the download store when the run asks symbol stores; not decoded with ``--offline``."""
    image = _copy_image(tmp_path)
    store = tmp_path / "share"
    shutil.copy(WINDOWS_BIN / "compressed" / form / "winapp.pd_", _store_dir(store) / "winapp.pd_")
    key = pdb_key("winapp.pdb", PdbFile(WINDOWS_BIN / "winapp.pdb").debug_id)
    assert key is not None
    monkeypatch.delenv("_NT_SYMBOL_PATH", raising=False)
    offline = remote_options(offline=True, cache_dir=tmp_path / "cache")
    assert not open_module(image, use_cache=False, search_paths=[store], remote=offline).debug_files
    remote = remote_options(symbol_servers=[f"srv*{store}"], cache_dir=tmp_path / "cache")
    module = open_module(image, use_cache=False, remote=remote)
    decoded = tmp_path / "cache" / "downloads" / "symsrv" / key.relative()
    assert [source.path for source in module.debug_files] == [decoded]
    assert decoded.read_bytes() == (WINDOWS_BIN / "winapp.pdb").read_bytes()
    # Now in the download store, --offline finds it there.
    assert open_module(image, use_cache=False, search_paths=[store], remote=offline).debug_files

"""Finding a PE image's PDB: beside it, in search paths, in symbol stores; refusing another build's."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest

from symbolize.api import lookup, open_module
from symbolize.discovery.pdb_locator import symbol_path_directories
from symbolize.formats.pdb import PdbFile
from symbolize.module import Unknown
from tests.fixtures_data import FIXTURES
from tests.msf_builder import build_msf, streams_of

BIN = FIXTURES / "bin" / "windows"


def _expected(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((FIXTURES / "expected" / "windows" / f"{name}.json").read_text())  # type: ignore[no-any-return]


def _outer_names(path: Path, addresses: list[int], **options: object) -> list[str | None]:
    results = lookup(path, addresses, demangle="none", use_cache=False, **options)  # type: ignore[arg-type]
    return [None if isinstance(r, Unknown) else r[-1].function for r in results]


def _theirs(name: str) -> tuple[list[int], list[str | None]]:
    entries = _expected(name)["addresses"]
    return [int(e["address"], 16) for e in entries], [e["frames"][-1]["function"] for e in entries]


def test_lookup_finds_the_pdb_beside_the_image() -> None:
    addresses, names = _theirs("winapp.exe")
    assert _outer_names(BIN / "winapp.exe", addresses) == names


def test_demangled_names_are_llvm_symbolizers() -> None:
    for variant in ("winapp.exe", "winlib.dll", "win32demo.exe", "winarm64.exe"):
        entries = _expected(variant)["addresses"]
        addresses = [int(e["address"], 16) for e in entries]
        results = lookup(BIN / variant, addresses, demangle="full", use_cache=False)
        for entry, result in zip(entries, results, strict=True):
            assert not isinstance(result, Unknown)
            theirs = [f.get("function_demangled", f["function"]) for f in entry["frames"]]
            assert [frame.function for frame in result] == theirs


def _copy_image(tmp_path: Path, name: str = "winapp.exe") -> Path:
    image = tmp_path / "image" / name
    image.parent.mkdir()
    shutil.copy(BIN / name, image)
    return image


@pytest.mark.parametrize("spelling", ["upper", "lower"])
def test_symbol_store_layout_in_a_search_path(spelling: str, tmp_path: Path) -> None:
    image = _copy_image(tmp_path)
    pdb = PdbFile(BIN / "winapp.pdb")
    assert pdb.debug_id is not None
    key = str(pdb.debug_id) if spelling == "upper" else str(pdb.debug_id).lower()
    store = tmp_path / "store"
    (store / "winapp.pdb" / key).mkdir(parents=True)
    shutil.copy(BIN / "winapp.pdb", store / "winapp.pdb" / key / "winapp.pdb")
    addresses, names = _theirs("winapp.exe")
    assert _outer_names(image, addresses[:20]) != names[:20]  # without the store: exports only
    assert _outer_names(image, addresses, search_paths=[store]) == names


@pytest.mark.parametrize("via", ["search-path", "nt-symbol-path"])
def test_two_tier_symbol_store_with_index2_txt(via: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """symsrv's two-tier layout, <root>/wi/winapp.pdb/<GUID><age>/winapp.pdb, used when the store's
    root holds an index2.txt (its content does not matter)."""
    image = _copy_image(tmp_path)
    pdb = PdbFile(BIN / "winapp.pdb")
    store = tmp_path / "store"
    (store / "wi" / "winapp.pdb" / str(pdb.debug_id)).mkdir(parents=True)
    shutil.copy(BIN / "winapp.pdb", store / "wi" / "winapp.pdb" / str(pdb.debug_id) / "winapp.pdb")
    options: dict[str, object] = {"search_paths": [store]} if via == "search-path" else {}
    if via == "nt-symbol-path":
        monkeypatch.setenv("_NT_SYMBOL_PATH", f"srv*{store}*https://msdl.microsoft.com/download/symbols")
    addresses, names = _theirs("winapp.exe")
    assert _outer_names(image, addresses[:20], **options) != names[:20]  # no index2.txt: not a two-tier store
    (store / "index2.txt").write_text("")
    assert _outer_names(image, addresses, **options) == names


def test_nt_symbol_path_local_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _copy_image(tmp_path)
    pdb = PdbFile(BIN / "winapp.pdb")
    cache = tmp_path / "symcache"
    (cache / "winapp.pdb" / str(pdb.debug_id)).mkdir(parents=True)
    shutil.copy(BIN / "winapp.pdb", cache / "winapp.pdb" / str(pdb.debug_id) / "winapp.pdb")
    monkeypatch.setenv("_NT_SYMBOL_PATH", f"srv*{cache}*https://msdl.microsoft.com/download/symbols")
    addresses, names = _theirs("winapp.exe")
    assert _outer_names(image, addresses) == names


def test_symbol_path_parsing() -> None:
    value = r"srv*C:\cache*https://server/symbols;cache*D:\c2;E:\plain;;symsrv*symsrv.dll*F:\s*http://x"
    windows = ["C:\\cache", "D:\\c2", "E:\\plain", "F:\\s"]
    # Windows paths name directories on Windows only (elsewhere they would be relative file names).
    assert [str(p) for p in symbol_path_directories(value)] == (windows if os.name == "nt" else [])
    posix = "srv*/cache*https://server/symbols;cache*/c2;/plain;;symsrv*symsrv.dll*/s*http://x"
    assert [str(p) for p in symbol_path_directories(posix)] == ["/cache", "/c2", "/plain", "/s"]


def test_base_name_in_a_search_path_ignoring_case(tmp_path: Path) -> None:
    image = _copy_image(tmp_path)
    found = tmp_path / "pdbs"
    found.mkdir()
    shutil.copy(BIN / "winapp.pdb", found / "WinApp.PDB")
    addresses, names = _theirs("winapp.exe")
    assert _outer_names(image, addresses, search_paths=[found]) == names


def test_a_pdb_of_another_build_is_refused_with_both_ids(tmp_path: Path) -> None:
    image = _copy_image(tmp_path)
    streams = list(streams_of((BIN / "winapp.pdb").read_bytes()))
    info = bytearray(streams[1] or b"")
    info[12:28] = bytes(range(16))  # another GUID
    streams[1] = bytes(info)
    (image.parent / "winapp.pdb").write_bytes(build_msf(list(streams), 4096))
    module = open_module(image, use_cache=False)
    expected = PdbFile(BIN / "winapp.pdb").debug_id
    other = PdbFile(image.parent / "winapp.pdb").debug_id
    assert module.refused and str(expected) in module.refused[0] and str(other) in module.refused[0]
    assert all(source.path != image.parent / "winapp.pdb" for source in module.debug_files)


def test_an_older_age_is_refused(tmp_path: Path) -> None:
    image = _copy_image(tmp_path)
    streams = list(streams_of((BIN / "winapp.pdb").read_bytes()))
    dbi = bytearray(streams[3] or b"")
    struct.pack_into("<I", dbi, 8, 7)  # the DBI age, the one that must match
    streams[3] = bytes(dbi)
    (image.parent / "winapp.pdb").write_bytes(build_msf(list(streams), 4096))
    module = open_module(image, use_cache=False)
    assert module.refused and "7" in module.refused[0]


def test_without_its_pdb_a_dll_is_named_from_exports(tmp_path: Path) -> None:
    image = _copy_image(tmp_path, "winlib.dll")
    addresses, names = _theirs("winlib.dll")
    ours = _outer_names(image, addresses)
    exports = {"winlib_checksum", "winlib_scramble", "winlib_histogram"}
    named = [(o, t) for o, t in zip(ours, names, strict=True) if t in exports]
    assert named and all(o == t for o, t in named)


def test_cli_lookup_finds_the_pdb_by_itself() -> None:
    """``symbolize lookup --obj app.exe`` in a real process: the PDB beside it, llvm-symbolizer's names."""
    import subprocess
    import sys

    entry = next(e for e in _expected("winapp.exe")["addresses"] if len(e["frames"]) > 2)
    out = subprocess.run([sys.executable, "-m", "symbolize", "lookup", "--json", "--no-cache", "--demangle", "none",
                          "--obj", str(BIN / "winapp.exe"), entry["address"]],
                         capture_output=True, text=True, check=True, cwd="/").stdout  # fmt: skip
    frames = json.loads(out)["frames"]
    assert [f["function"] for f in frames] == [f["function"] for f in entry["frames"]]
    assert frames[-1]["line"] == entry["frames"][-1]["line"]

"""End to end: the Windows fixture profiles named by ``symbolize profile`` (a real subprocess) whose
PDBs, and binaries, are only on a symbol store served over loopback HTTP (tests/servers/http_store.py):
fully named with ``--symbol-server``; the second run asks the server nothing (its request log);
``--offline`` names what the cache holds; a server that sends another build's PDB is refused.

The store keeps winapp.pdb as an LZX cabinet (``symstore /compress``'s form) and winlib.pdb as an
MSZIP one (fixtures/make_compressed_pdbs.py), and the images plain under their code IDs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from symbolize.formats.pdb import PdbFile
from symbolize.formats.pe import PeFile
from symbolize.formats.types import DebugIdKind
from symbolize.pprof import read_profile
from symbolize.proto.profile_pb2 import Profile
from symbolize.remote.symsrv_layout import pdb_key, pe_key
from tests.fixtures_data import PROFILES, WINDOWS_BIN
from tests.servers.http_store import Fault, HttpStore

PROFILE = PROFILES / "windows" / "winapp.heap.pb.gz"
CODE_ID_PROFILE = PROFILES / "windows" / "winapp.codeid.heap.pb.gz"
TRUTH = PROFILES / "windows" / "winapp.heap.truth.json"
IMAGES = ("winapp.exe", "winlib.dll")


def _pdb_path(name: str) -> str:
    key = pdb_key(name, PdbFile(WINDOWS_BIN / name).debug_id)
    assert key is not None
    return str(key.relative())


def _store(root: Path) -> Path:
    """The symbol store: the PDBs compressed (winapp LZX, winlib MSZIP), the images plain."""
    for name, form in (("winapp.pdb", "lzx"), ("winlib.pdb", "mszip")):
        target = root / _pdb_path(name)
        target = target.with_name(target.name[:-1] + "_")
        target.parent.mkdir(parents=True)
        shutil.copyfile(WINDOWS_BIN / "compressed" / form / f"{name[:-1]}_", target)
    for name in IMAGES:
        code_id = next(i for i in PeFile(WINDOWS_BIN / name).identities() if i.kind is DebugIdKind.PE_CODE_ID)
        key = pe_key(name, code_id)
        assert key is not None
        (root / key.relative()).parent.mkdir(parents=True)
        shutil.copyfile(WINDOWS_BIN / name, root / key.relative())
    return root


def _images_alone(directory: Path) -> Path:
    directory.mkdir()
    for name in IMAGES:
        shutil.copyfile(WINDOWS_BIN / name, directory / name)
    return directory


def _profile(home: Path, profile: Path, out: Path, *options: str | Path) -> dict[str, Any]:
    """``symbolize profile`` in a subprocess, its caches under ``home``; its JSON summary."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DEBUGINFOD_", "_NT_"))}
    env.update(XDG_CACHE_HOME=str(home / "xdg"), SYMBOLIZE_CACHE_DIR=str(home / "cache"),
               SYMBOLIZE_BACKGROUND_INDEX="0")  # fmt: skip
    argv = [sys.executable, "-m", "symbolize", "profile", str(profile), "-o", str(out), "--json-summary",
            *map(str, options)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _assert_named_as_llvm_names_them(original: Path, named: Path) -> None:
    """Every location's frames are llvm-symbolizer's (tests/test_windows_profiles.py's truth)."""
    before, _ = read_profile(original)
    after, _ = read_profile(named)
    truth = {int(k): v for k, v in json.loads(TRUTH.read_text())["locations"].items()}
    by_address = {location.address: truth[location.id] for location in before.location}
    chains = _chains(after)
    assert len(chains) == len(truth) > 20
    for location in after.location:
        theirs = by_address[location.address]
        assert [name for name, _ in chains[location.id]] == [frame["function"] for frame in theirs]
        assert chains[location.id][-1][1] == theirs[-1]["line"]


def _chains(profile: Profile) -> dict[int, list[tuple[str, int]]]:
    functions = {f.id: profile.string_table[f.name] for f in profile.function}
    return {loc.id: [(functions[line.function_id], line.line) for line in loc.line] for loc in profile.location}


def test_pdbs_only_on_the_symbol_server_then_from_the_cache_then_offline(tmp_path: Path) -> None:
    images = _images_alone(tmp_path / "images")
    home = tmp_path / "home"
    with HttpStore(_store(tmp_path / "served")) as server:
        first = _profile(home, PROFILE, tmp_path / "first.pb.gz", "--search-path", images,
                         "--symbol-server", server.url)  # fmt: skip
        asked = {(request.path, request.status) for request in server.requests}
        cabinets = {("/" + _pdb_path(name)[:-1] + "_", 200) for name in ("winapp.pdb", "winlib.pdb")}
        assert cabinets <= asked
        _assert_named_as_llvm_names_them(PROFILE, tmp_path / "first.pb.gz")
        assert first["downloads"] and "fetched 2 debug files" in first["downloads"][0], first["downloads"]
        assert all(mapping["debug_file"].endswith(".pdb") for mapping in first["mappings"])

        server.clear_log()
        second = _profile(home, PROFILE, tmp_path / "second.pb.gz", "--search-path", images,
                          "--symbol-server", server.url)  # fmt: skip
        assert server.requests == [], "the second run asks the server nothing"
        assert (tmp_path / "second.pb.gz").read_bytes() == (tmp_path / "first.pb.gz").read_bytes()
        assert "from the download cache" in second["downloads"][0]

        offline = _profile(home, PROFILE, tmp_path / "offline.pb.gz", "--search-path", images, "--offline")
        assert server.requests == []
        assert (tmp_path / "offline.pb.gz").read_bytes() == (tmp_path / "first.pb.gz").read_bytes()
        assert offline["named"] == first["named"]


def test_a_profiles_pdbs_are_asked_for_together(tmp_path: Path) -> None:
    """Each PDB's answer waits, at a barrier, until the other's is asked for too (503 when it is not
    within 20 s): named only if the run asks for both at once (RemoteRun.gathering), not the
    second after the first has come."""
    images = _images_alone(tmp_path / "images")
    with HttpStore(_store(tmp_path / "served")) as server:
        gate = threading.Barrier(2)
        for name in ("winapp.pdb", "winlib.pdb"):
            server.fault("/" + _pdb_path(name)[:-1] + "_", Fault(gate=gate, stall_seconds=20))
        _profile(tmp_path / "home", PROFILE, tmp_path / "named.pb.gz", "--search-path", images,
                 "--symbol-server", server.url)  # fmt: skip
        assert not gate.broken
    _assert_named_as_llvm_names_them(PROFILE, tmp_path / "named.pb.gz")


def test_images_and_pdbs_only_on_the_symbol_server_by_code_id(tmp_path: Path) -> None:
    """A profile recording each image's code ID needs nothing on disk: the images come by code
    ID (``winapp.exe/<TIMESTAMP><SIZE>/winapp.exe``), then their PDBs by GUID and age."""
    with HttpStore(_store(tmp_path / "served")) as server:
        summary = _profile(tmp_path / "home", CODE_ID_PROFILE, tmp_path / "named.pb.gz", "--symbol-server", server.url)
    _assert_named_as_llvm_names_them(CODE_ID_PROFILE, tmp_path / "named.pb.gz")
    assert "fetched 4 debug files" in summary["downloads"][0], summary["downloads"]


def test_images_then_their_pdbs_are_asked_for_together(tmp_path: Path) -> None:
    """The chain image -> PDB, fetched a link at a time for every mapping at once: both images wait
    at one barrier and both PDBs at another (503 when the other is not asked within 20 s), so the
    profile is named only if the PDBs, asked for by the IDs the downloaded images record, are
    also asked for together rather than one module after the other."""
    with HttpStore(_store(tmp_path / "served")) as server:
        images, pdbs = threading.Barrier(2), threading.Barrier(2)
        for name in IMAGES:
            code_id = next(i for i in PeFile(WINDOWS_BIN / name).identities() if i.kind is DebugIdKind.PE_CODE_ID)
            key = pe_key(name, code_id)
            assert key is not None
            server.fault("/" + str(key.relative()), Fault(gate=images, stall_seconds=20))
        for name in ("winapp.pdb", "winlib.pdb"):
            server.fault("/" + _pdb_path(name)[:-1] + "_", Fault(gate=pdbs, stall_seconds=20))
        _profile(tmp_path / "home", CODE_ID_PROFILE, tmp_path / "named.pb.gz", "--symbol-server", server.url)
        assert not images.broken and not pdbs.broken
    _assert_named_as_llvm_names_them(CODE_ID_PROFILE, tmp_path / "named.pb.gz")


def test_a_server_sending_another_builds_pdb_is_refused(tmp_path: Path) -> None:
    images = _images_alone(tmp_path / "images")
    with HttpStore(_store(tmp_path / "served")) as server:
        winapp = "/" + _pdb_path("winapp.pdb")
        server.fault(winapp, Fault(serve=WINDOWS_BIN / "winlib.pdb"))
        summary = _profile(tmp_path / "home", PROFILE, tmp_path / "named.pb.gz", "--search-path", images,
                           "--symbol-server", server.url)  # fmt: skip
    mapping = next(m for m in summary["mappings"] if m["filename"].endswith("winapp.exe"))
    # winapp.exe exports nothing: without its PDB no address is named, each counted under the miss.
    assert mapping["debug_file"] is None and mapping["named"] == 0
    assert mapping["reasons"] == {"not-on-server": mapping["locations"]}
    wanted, found = PdbFile(WINDOWS_BIN / "winapp.pdb").debug_id, PdbFile(WINDOWS_BIN / "winlib.pdb").debug_id
    reason = f"{server.url}{winapp}: PDB {found} is not the one asked for, {wanted}"
    assert reason in mapping["refused"], mapping["refused"]
    assert not list((tmp_path / "home").rglob("winapp.pdb")), "a refused file is never stored"

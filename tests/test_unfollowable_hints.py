"""A debug hint that cannot be followed is a refused candidate; the rest of the file still answers.

Each case is a real fixture with one hint made impossible to follow: a malformed
``.gnu_debuglink``, ``.gnu_debugaltlink`` or CodeView record (GDB manual, "Separate Debug
Files"; the PE/COFF specification, "Debug Directory"), a name past the system's limit (a
debuglink, a PDB path, an ``N_OSO`` path, an ``_NT_SYMBOL_PATH`` entry), a ``.build-id`` or
symbol-store directory that cannot be searched. Each made ``lookup`` exit 1 before; now the
CLI answers every address as llvm-symbolizer does on the same patched file (or, where
llvm-symbolizer cannot follow the hint at all, as the intact fixture answers), and ``profile``
lists the hint with its reason among the mapping's ``refused`` candidates.

Permissions do not hold for root: the unreadable-directory cases drop root's
``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` with ``setpriv`` for the commands they run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from symbolize.formats.elf import ElfFile
from symbolize.formats.open import open_object
from symbolize.formats.pe.file import PeFile
from symbolize.proto.profile_pb2 import Profile
from tests.elf_patch import with_section_contents
from tests.fixtures_data import ROOT
from tests.macho_patch import with_oso_name
from tests.pe_patch import rsds_head, with_codeview
from tests.posix import require

BIN = ROOT / "fixtures" / "bin"
EXPECTED = ROOT / "fixtures" / "expected"
LLVM_22 = Path("/usr/lib/llvm-22/bin/llvm-symbolizer")
LLVM_SYMBOLIZER = str(LLVM_22) if LLVM_22.is_file() else shutil.which("llvm-symbolizer")
# Longer than NAME_MAX (255) as one component, or than PATH_MAX (4096) as a path.
LONG_NAME = "n" * 300
LONG_PATH = "/".join(["d" * 250] * 20)

Frames = list[tuple[str | None, str | None, int]]


def _addresses(expected: str) -> list[str]:
    return [entry["address"] for entry in json.loads((EXPECTED / f"{expected}.json").read_text())["addresses"]]


def _unprivileged() -> tuple[str, ...]:
    """A command prefix under which file permissions hold (root passes them unless it drops its
    DAC capabilities); [] when not root."""
    require("geteuid")  # a directory that cannot be searched is POSIX's
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv: no way to make a directory unreadable")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search")


class Case(NamedTuple):
    """A patched fixture, how to look it up, and what must show."""

    binary: Path
    addresses: list[str]
    # --search-path / --debug-dir arguments, and llvm-symbolizer's for the same places.
    args: list[str]
    llvm_args: list[str]
    # In the mapping's refused list: a candidate starting with ``refused_path``, saying ``reason``.
    refused_path: str
    reason: str
    # None: compare with llvm-symbolizer on the patched file; else the file answering as this one.
    intact: Path | None = None
    # Environment for the commands run, and the prefix they run under (see _unprivileged).
    env: tuple[tuple[str, str], ...] = ()
    prefix: tuple[str, ...] = ()


# ELF ---------------------------------------------------------------------------------------


def _elf(tmp_path: Path, fixture: str, section: str, contents: bytes) -> Path:
    binary = tmp_path / fixture
    binary.write_bytes(with_section_contents((BIN / fixture).read_bytes(), section, contents))
    return binary


def _debuglink_malformed(tmp_path: Path) -> Case:
    binary = _elf(tmp_path, "cdemo-gcc-debuglink", ".gnu_debuglink", b"\xff" * 32)  # no NUL: no name
    return Case(binary, _addresses("cdemo-gcc-debuglink"), [], [], str(binary), "malformed .gnu_debuglink")


def _debuglink_too_long(tmp_path: Path) -> Case:
    binary = _elf(tmp_path, "cdemo-gcc-debuglink", ".gnu_debuglink", LONG_NAME.encode() + bytes(4) + b"\1\2\3\4")
    return Case(binary, _addresses("cdemo-gcc-debuglink"), [], [], str(tmp_path / LONG_NAME), "File name too long")


def _altlink_malformed(tmp_path: Path) -> Case:
    binary = _elf(tmp_path, "cppdemo-gcc-dwz", ".gnu_debugaltlink", bytes(49))  # an empty name
    return Case(binary, _addresses("cppdemo-gcc-dwz"), [], [], str(binary), "malformed .gnu_debugaltlink")


def _altlink_too_long(tmp_path: Path) -> Case:
    binary = _elf(tmp_path, "cppdemo-gcc-dwz", ".gnu_debugaltlink", f"{LONG_NAME}.debug\0".encode() + bytes(20))
    return Case(binary, _addresses("cppdemo-gcc-dwz"), [], [], str(tmp_path / LONG_NAME), "File name too long")


def _build_id_directory_unreadable(tmp_path: Path) -> Case:
    # The first debug directory's .build-id cannot be searched; the second holds the debug file.
    binary = tmp_path / "cppdemo-gcc-buildid"
    shutil.copy(BIN / binary.name, binary)
    (tmp_path / "dbg" / ".build-id").mkdir(parents=True)
    (tmp_path / "dbg" / ".build-id").chmod(0)
    places = [tmp_path / "dbg", BIN / "debug"]
    args = [arg for place in places for arg in ("--debug-dir", str(place))]
    llvm_args = [f"--debug-file-directory={place}" for place in places]
    return Case(binary, _addresses("cppdemo-gcc-buildid"), args, llvm_args, str(tmp_path / "dbg" / ".build-id"),
                "Permission denied", prefix=_unprivileged())  # fmt: skip


# PE ----------------------------------------------------------------------------------------


def _mingw(tmp_path: Path, patch: Callable[[bytes], bytes], reason: str, refused_path: str = "") -> Case:
    binary = tmp_path / "mingwapp.exe"
    binary.write_bytes(patch((BIN / "windows" / binary.name).read_bytes()))
    return Case(binary, _addresses("windows/mingwapp.exe"), [], [], refused_path or str(binary), reason,
                intact=BIN / "windows" / binary.name)  # fmt: skip


def _codeview_without_signature(tmp_path: Path) -> Case:
    return _mingw(tmp_path, lambda data: with_codeview(data, 2), "CodeView record of 2 bytes holds no signature")


def _codeview_rsds_truncated(tmp_path: Path) -> Case:
    return _mingw(tmp_path, lambda data: with_codeview(data, 20), "RSDS record shorter than 24 bytes")


def _codeview_nb10_truncated(tmp_path: Path) -> Case:
    record = b"NB10" + bytes(8)  # no signature stamp, no age
    return _mingw(tmp_path, lambda data: with_codeview(data, len(record), record), "NB10 record shorter than 16 bytes")


def _codeview_unknown_signature(tmp_path: Path) -> Case:
    record = b"XXXX" + bytes(40)
    return _mingw(tmp_path, lambda data: with_codeview(data, len(record), record), "unknown CodeView signature")


def _pdb_path_too_long(tmp_path: Path) -> Case:
    def patch(data: bytes) -> bytes:
        record = rsds_head(data) + f"C:\\build\\{LONG_NAME}.pdb\0".encode()
        return with_codeview(data, len(record), record)

    return _mingw(tmp_path, patch, "File name too long", str(tmp_path / f"{LONG_NAME}.pdb"))


def _symbol_store(root: Path) -> Path:
    """``root`` as a symsrv store holding winapp.pdb: ``winapp.pdb/<GUID><age>/winapp.pdb``."""
    with PeFile(BIN / "windows" / "winapp.exe") as image:
        key = str(image.debug_id)
    (root / "winapp.pdb" / key).mkdir(parents=True)
    shutil.copy(BIN / "windows" / "winapp.pdb", root / "winapp.pdb" / key / "winapp.pdb")
    return root


def _winapp(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    shutil.copy(BIN / "windows" / "winapp.exe", tmp_path / "app" / "winapp.exe")
    return tmp_path / "app" / "winapp.exe"


def _symbol_path_entry_too_long(tmp_path: Path) -> Case:
    # llvm-symbolizer reads no _NT_SYMBOL_PATH: the answers are those of the PDB beside the image.
    store = _symbol_store(tmp_path / "store")
    long_entry = tmp_path / LONG_NAME
    symbol_path = f"srv*{long_entry}*https://msdl.microsoft.com/download/symbols;{store}"
    return Case(_winapp(tmp_path), _addresses("windows/winapp.exe"), [], [], str(long_entry), "File name too long",
                intact=BIN / "windows" / "winapp.exe", env=(("_NT_SYMBOL_PATH", symbol_path),))  # fmt: skip


def _symbol_store_unreadable(tmp_path: Path) -> Case:
    # The first search path's winapp.pdb/ store directory cannot be searched; the second holds the PDB.
    (tmp_path / "locked" / "winapp.pdb").mkdir(parents=True)
    (tmp_path / "locked" / "winapp.pdb").chmod(0)
    places = [tmp_path / "locked", _symbol_store(tmp_path / "store")]
    return Case(_winapp(tmp_path), _addresses("windows/winapp.exe"),
                [arg for place in places for arg in ("--search-path", str(place))], [],
                str(tmp_path / "locked" / "winapp.pdb"), "Permission denied", intact=BIN / "windows" / "winapp.exe",
                prefix=_unprivileged())  # fmt: skip


# Mach-O ------------------------------------------------------------------------------------


def _oso(tmp_path: Path, name: str, refused_path: str) -> Case:
    (tmp_path / "obj").mkdir()
    shutil.copy(BIN / "macos" / "obj" / "cdemo-x86_64.o", tmp_path / "obj")
    binary = tmp_path / "cdemo-x86_64"
    binary.write_bytes(with_oso_name((BIN / "macos" / binary.name).read_bytes(), BIN / "macos" / binary.name, name))
    return Case(binary, _addresses("macos/cdemo-macho-x86_64-debugmap"), [], [], refused_path, "File name too long")


def _oso_name_too_long(tmp_path: Path) -> Case:
    return _oso(tmp_path, f"obj/{LONG_NAME}.o", str(tmp_path / "obj" / f"{LONG_NAME}.o"))


def _oso_path_too_long(tmp_path: Path) -> Case:
    return _oso(tmp_path, f"{LONG_PATH}/x.o", str(tmp_path / LONG_PATH))


CASES: dict[str, Callable[[Path], Case]] = {
    "debuglink-malformed": _debuglink_malformed,
    "debuglink-too-long": _debuglink_too_long,
    "altlink-malformed": _altlink_malformed,
    "altlink-too-long": _altlink_too_long,
    "build-id-directory-unreadable": _build_id_directory_unreadable,
    "codeview-without-signature": _codeview_without_signature,
    "codeview-rsds-truncated": _codeview_rsds_truncated,
    "codeview-unknown-signature": _codeview_unknown_signature,
    "codeview-nb10-truncated": _codeview_nb10_truncated,
    "pdb-path-too-long": _pdb_path_too_long,
    "symbol-path-entry-too-long": _symbol_path_entry_too_long,
    "symbol-store-unreadable": _symbol_store_unreadable,
    "oso-name-too-long": _oso_name_too_long,
    "oso-path-too-long": _oso_path_too_long,
}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Case]:
    made = CASES[request.param](tmp_path)
    yield made
    for locked in tmp_path.rglob("*"):  # let pytest remove what the case locked
        if locked.is_dir() and not locked.is_symlink():
            locked.chmod(0o755)


def _run(case: Case, command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **dict(case.env)}
    return subprocess.run([*case.prefix, *command], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def _lookup(case: Case, binary: Path) -> list[Frames]:
    done = _run(case, [sys.executable, "-m", "symbolize", "lookup", "--json", "--no-cache", "--no-background-index",
                       "--demangle", "none", "-e", str(binary), *case.args, *case.addresses])  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return [[(frame["function"], frame["file"], frame["line"]) for frame in row["frames"]] for row in rows]


def _llvm(case: Case, binary: Path) -> list[Frames]:
    assert LLVM_SYMBOLIZER is not None
    done = _run(case, [LLVM_SYMBOLIZER, "--output-style=JSON", "--no-demangle", f"--obj={binary}", *case.llvm_args,
                       *case.addresses])  # fmt: skip
    assert done.returncode == 0, done.stderr
    # llvm-symbolizer spells an unnamed frame "" (an inlined call whose name is in a dwz file it
    # cannot read) or "??"; lookup --json spells it null.
    return [
        [(s["FunctionName"] if s["FunctionName"] not in ("", "??") else None, s["FileName"] or None, s["Line"])
         for s in entry["Symbol"]]
        for entry in json.loads(done.stdout)
    ]  # fmt: skip


def test_lookup_answers_as_if_the_hint_were_not_there(case: Case) -> None:
    answers = _lookup(case, case.binary)
    if case.intact is None:
        if LLVM_SYMBOLIZER is None:
            pytest.skip("llvm-symbolizer not installed")
        assert answers == _llvm(case, case.binary)
    else:
        assert answers == _lookup(case, case.intact)
        if LLVM_SYMBOLIZER is not None and not case.env and not case.args:
            # llvm-symbolizer answers the patched file as it answers the intact one, too.
            assert _llvm(case, case.binary) == _llvm(case, case.intact)
    assert sum(1 for frames in answers if frames and frames[-1][0] is not None) > len(answers) // 2


def _mapping_span(binary: Path) -> tuple[int, int]:
    """Where the whole image lies, in its own vaddrs: what a whole-module mapping covers."""
    image = open_object(binary)
    try:
        if isinstance(image, PeFile):
            return image.image_base, image.image_base + image.size_of_image
        loaded = [segment for segment in image.segments() if segment.filesz > 0]
        start = image.load_base if isinstance(image, ElfFile) else min(segment.vaddr for segment in loaded)
        return start, max(segment.vaddr + segment.memsz for segment in loaded)
    finally:
        image.close()


def test_profile_lists_the_hint_refused_with_its_reason(case: Case, tmp_path: Path) -> None:
    start, end = _mapping_span(case.binary)
    slide = 0x555555554000 if start == 0 else 0  # a PIE is mapped where Linux puts it
    profile = Profile(string_table=["", "cpu", "nanoseconds", str(case.binary)])
    profile.sample_type.add(type=1, unit=2)
    profile.mapping.add(id=1, memory_start=start + slide, memory_limit=end + slide, filename=3)
    for number, address in enumerate(case.addresses, start=1):
        profile.location.add(id=number, mapping_id=1, address=int(address, 16) + slide)
        profile.sample.add(location_id=[number], value=[1])
    given = tmp_path / "in.pb"
    given.write_bytes(profile.SerializeToString())
    done = _run(case, [sys.executable, "-m", "symbolize", "profile", str(given), "-o", str(tmp_path / "out.pb"),
                       "--json-summary", "--no-cache", "--no-background-index", *case.args])  # fmt: skip
    assert done.returncode == 0, done.stderr
    (mapping,) = json.loads(done.stdout)["mappings"]
    refused = [entry for entry in mapping["refused"] if entry.startswith(f"{case.refused_path}")]
    assert refused and case.reason in refused[0], mapping["refused"]
    named = sum(1 for frames in _lookup(case, case.binary) if frames)
    assert mapping["named"] == named > 0


def test_a_build_id_directory_that_cannot_be_searched_leaves_the_next_one_standing_in(tmp_path: Path) -> None:
    # The mapping's binary is gone: its debug file, found by build ID, stands in for it.
    prefix = _unprivileged()
    locked = tmp_path / "dbg" / ".build-id"
    locked.mkdir(parents=True)
    addresses = _addresses("cppdemo-gcc-buildid")
    with ElfFile(BIN / "cppdemo-gcc-buildid") as elf:
        build_id = str(elf.debug_id)
        size = max(segment.vaddr + segment.memsz for segment in elf.segments())
    base = 0x555555554000
    profile = Profile(string_table=["", "cpu", "nanoseconds", "/gone/cppdemo-gcc-buildid", build_id])
    profile.sample_type.add(type=1, unit=2)
    profile.mapping.add(id=1, memory_start=base, memory_limit=base + size, filename=3, build_id=4)
    for number, address in enumerate(addresses, start=1):
        profile.location.add(id=number, mapping_id=1, address=base + int(address, 16))
        profile.sample.add(location_id=[number], value=[1])
    given = tmp_path / "in.pb"
    given.write_bytes(profile.SerializeToString())
    locked.chmod(0)
    try:
        done = subprocess.run([*prefix, sys.executable, "-m", "symbolize", "profile", str(given), "-o",
                               str(tmp_path / "out.pb"), "--json-summary", "--no-cache", "--no-background-index",
                               "--debug-dir", str(tmp_path / "dbg"), "--debug-dir", str(BIN / "debug")],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    finally:
        locked.chmod(0o755)
    assert done.returncode == 0, done.stderr
    (mapping,) = json.loads(done.stdout)["mappings"]
    assert mapping["named"] == mapping["locations"] == len(addresses), mapping
    assert any(entry.startswith(str(locked)) and "Permission denied" in entry for entry in mapping["refused"])

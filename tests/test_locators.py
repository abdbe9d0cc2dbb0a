"""The locator registry and the ELF locators: where each hint is looked up, what verifies, the path rules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symbolize.discovery import (
    Candidate,
    LocatorDefaults,
    LookupContext,
    SearchOptions,
    find_module,
    locate,
    module_for,
    register_locator,
)
from symbolize.discovery.paths import base_name, build_id_path, is_file_name, lies_under, relative_path
from symbolize.discovery.registry import _LOCATORS, debug_id_refusal, located_by
from symbolize.formats import ElfFile
from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.errors import MissingDebugInfoError
from symbolize.formats.types import DebugHint, DebugId, DebugIdKind, HintKind, ObjectFile
from symbolize.loader import Loader
from tests.fixtures_data import BIN

SPLIT = "cdemo-clang-split"
DWZ = "cppdemo-gcc-dwz"


def options(**kwargs: object) -> Loader:
    kwargs.setdefault("debug_dirs", [])
    return Loader(SearchOptions(**kwargs))  # type: ignore[arg-type]


def context_for(path: Path, opts: Loader) -> LookupContext:
    return LookupContext(opts, path, path)


def dwo_id_of(path: Path) -> int:
    with ElfFile(path) as elf:
        (dwo_id,) = {state.unit.dwo_id for state in DwarfInfo(elf.section_data, path)._load_units()}
    assert dwo_id is not None
    return dwo_id


def split_hint(dwo_id: int | None, name: str = f"{SPLIT}.dwo", directory: str = "/fixtures/bin") -> DebugHint:
    debug_id = DebugId(DebugIdKind.DWO_ID, dwo_id.to_bytes(8, "big")) if dwo_id is not None else None
    return DebugHint(HintKind.SPLIT_DWARF, name, debug_id, directory=directory)


def copy_fixtures(target: Path, *names: str) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(BIN / name, target)
    return target / names[0]


# --- split DWARF --------------------------------------------------------------------------


def test_split_dwarf_prefers_the_package_beside_the_binary() -> None:
    opts = options()
    refused: list[str] = []
    found = locate(split_hint(dwo_id_of(BIN / SPLIT)), context_for(BIN / SPLIT, opts), refused)
    assert found is not None and found.path == BIN / f"{SPLIT}.dwp"
    assert refused == []
    opts.close()


def test_split_dwarf_dwo_beside_the_binary(tmp_path: Path) -> None:
    binary = copy_fixtures(tmp_path, SPLIT, f"{SPLIT}.dwo")
    opts = options()
    found = locate(split_hint(dwo_id_of(binary)), context_for(binary, opts), [])
    assert found is not None and found.path == tmp_path / f"{SPLIT}.dwo"
    opts.close()


def test_split_dwarf_found_through_a_search_path(tmp_path: Path) -> None:
    binary = copy_fixtures(tmp_path / "bin", SPLIT)
    copy_fixtures(tmp_path / "dwo", f"{SPLIT}.dwo")
    opts = options(search_paths=[tmp_path / "dwo"])
    found = locate(split_hint(dwo_id_of(binary)), context_for(binary, opts), [])
    assert found is not None and found.path == tmp_path / "dwo" / f"{SPLIT}.dwo"
    opts.close()


def test_split_dwarf_with_another_dwo_id_is_refused(tmp_path: Path) -> None:
    binary = copy_fixtures(tmp_path, SPLIT, f"{SPLIT}.dwo", f"{SPLIT}.dwp")
    opts = options()
    refused: list[str] = []
    assert locate(split_hint(dwo_id_of(binary) ^ 1), context_for(binary, opts), refused) is None
    assert len(refused) == 2 and all("holds no split unit" in reason for reason in refused)
    opts.close()


def test_split_dwarf_gnu_dwarf4_dwo_verifies_by_its_attribute(tmp_path: Path) -> None:
    # GCC's DWARF 4 split units carry the DWO ID as DW_AT_GNU_dwo_id, not in the unit header.
    binary = copy_fixtures(tmp_path, "cdemo-gcc-split4", "cdemo-gcc-split4.dwo")
    opts = options()
    dwo_id = dwo_id_of(binary)
    found = locate(split_hint(dwo_id, "cdemo-gcc-split4.dwo"), context_for(binary, opts), [])
    assert found is not None and found.path.name == "cdemo-gcc-split4.dwo"
    assert locate(split_hint(dwo_id + 1, "cdemo-gcc-split4.dwo"), context_for(binary, opts), []) is None
    opts.close()


def test_split_dwarf_escaping_name_is_not_followed(tmp_path: Path) -> None:
    # "../x.dwo" under a directory would leave it; only its base name is looked up.
    binary = copy_fixtures(tmp_path / "bin", SPLIT)
    copy_fixtures(tmp_path, f"{SPLIT}.dwo")  # the file the name points at, outside bin/
    opts = options()
    hint = split_hint(None, f"../{SPLIT}.dwo", directory="")
    assert locate(hint, context_for(binary, opts), []) is None
    opts.close()


def test_split_dwarf_absolute_name_followed_only_when_it_verifies(tmp_path: Path) -> None:
    binary = copy_fixtures(tmp_path / "bin", SPLIT)
    elsewhere = copy_fixtures(tmp_path / "elsewhere", f"{SPLIT}.dwo")
    opts = options()
    dwo_id = dwo_id_of(binary)
    found = locate(split_hint(dwo_id, str(elsewhere)), context_for(binary, opts), [])
    assert found is not None and found.path == elsewhere
    # Without a DWO ID to check, a recorded absolute path is not opened.
    assert locate(split_hint(None, str(elsewhere)), context_for(binary, opts), []) is None
    opts.close()


def test_module_lookups_reach_split_units_through_the_resolver(tmp_path: Path) -> None:
    # The reader asks discovery: with the .dwo in a search path only, inline chains come back.
    binary = copy_fixtures(tmp_path / "bin", SPLIT)
    copy_fixtures(tmp_path / "dwo", f"{SPLIT}.dwo")
    with ElfFile(binary) as bare:
        vaddrs = [s.vaddr for s in bare.symbols() if s.size > 0]
        unresolved = [bare.frames_at(vaddr) for vaddr in vaddrs]
    opts = options(search_paths=[tmp_path / "dwo"])
    module = module_for(opts.open(binary), opts)
    resolved = module.lookup(vaddrs)
    opts.close()
    assert any(r[-1].start_line > 0 for r in resolved if isinstance(r, list))
    assert all(frames and frames[-1].start_line == 0 for frames in unresolved)


# --- dwz supplementary file ----------------------------------------------------------------


def supplementary_hint(path: Path) -> DebugHint:
    with ElfFile(path) as elf:
        return next(hint for hint in elf.debug_hints() if hint.kind is HintKind.SUPPLEMENTARY)


def test_supplementary_beside_the_file() -> None:
    opts = options()
    found = locate(supplementary_hint(BIN / DWZ), context_for(BIN / DWZ, opts), [])
    assert found is not None and found.path == BIN / f"{DWZ}.common.debug"
    opts.close()


def test_supplementary_with_another_build_id_is_refused(tmp_path: Path) -> None:
    binary = copy_fixtures(tmp_path, DWZ)
    shutil.copy(BIN / "cdemo-gcc-debuglink.debug", tmp_path / f"{DWZ}.common.debug")
    opts = options()
    refused: list[str] = []
    assert locate(supplementary_hint(binary), context_for(binary, opts), refused) is None
    assert len(refused) == 1 and "does not match .gnu_debugaltlink's" in refused[0]
    opts.close()


def test_supplementary_by_build_id_under_a_debug_dir(tmp_path: Path) -> None:
    binary = copy_fixtures(tmp_path / "bin", DWZ)
    hint = supplementary_hint(binary)
    relative = build_id_path(hint.debug_id)
    assert relative is not None
    target = tmp_path / "debug" / relative
    target.parent.mkdir(parents=True)
    shutil.copy(BIN / f"{DWZ}.common.debug", target)
    opts = options(debug_dirs=[tmp_path / "debug"])
    found = locate(hint, context_for(binary, opts), [])
    assert found is not None and found.path == target
    opts.close()


# --- debuglink and build ID ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["../cdemo-gcc-debuglink.debug", "sub/x.debug", "..", "", "a\\b", "C:x"])
def test_debuglink_name_must_be_a_file_name(tmp_path: Path, name: str) -> None:
    binary = copy_fixtures(tmp_path / "bin", "cdemo-gcc-debuglink")
    copy_fixtures(tmp_path, "cdemo-gcc-debuglink.debug")
    opts = options()
    hint = DebugHint(HintKind.DEBUGLINK, name, crc32=None)
    assert locate(hint, context_for(binary, opts), []) is None
    opts.close()


@pytest.mark.parametrize("size", [0, 1, 65])
def test_build_id_of_absurd_length_is_not_looked_up(size: int) -> None:
    assert build_id_path(DebugId(DebugIdKind.GNU_BUILD_ID, b"\xab" * size)) is None


def test_build_id_path_layout() -> None:
    path = build_id_path(DebugId(DebugIdKind.GNU_BUILD_ID, bytes.fromhex("abcdef01")))
    assert path is not None and path.as_posix() == ".build-id/ab/cdef01.debug"
    assert build_id_path(DebugId(DebugIdKind.MACHO_UUID, b"\x01" * 16)) is None


def test_non_hex_mapping_build_id_finds_no_stand_in(tmp_path: Path) -> None:
    with pytest.raises(MissingDebugInfoError, match="not found"):
        find_module("/gone/app", "../../etc/passwd", options(debug_dirs=[tmp_path]))


# --- the mapping's binary --------------------------------------------------------------------


def test_windows_path_matched_by_base_name_ignoring_case() -> None:
    module = find_module("C:\\build\\out\\CDEMO-GCC-DEBUGLINK", None, options(search_paths=[BIN]))
    assert module.path == BIN / "cdemo-gcc-debuglink"


def test_mapping_build_id_compared_as_a_value() -> None:
    with ElfFile(BIN / "cdemo-gcc-debuglink") as elf:
        assert elf.debug_id is not None
        text = elf.debug_id.value.hex().upper()
    dashed = "-".join(text[i : i + 8] for i in range(0, len(text), 8))
    module = find_module("/usr/bin/cdemo-gcc-debuglink", dashed, options(search_paths=[BIN]))
    assert module.path == BIN / "cdemo-gcc-debuglink"


# --- the registry ----------------------------------------------------------------------------


class _FakePdbLocator(LocatorDefaults):
    """Looks for ``<root>/<name>/<GUID><age>/<name>`` (the symbol-store layout) in the search paths."""

    def __init__(self, escape: bool = False) -> None:
        self.escape = escape

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        for root in context.options.search_paths:
            if self.escape:
                yield Candidate(root / ".." / hint.name, root)
            elif is_file_name(hint.name):
                yield Candidate(root / hint.name / str(hint.debug_id) / hint.name, root)

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        return None if found.path.parent.name == str(hint.debug_id) else "not in its debug ID's directory"


class _PdbImage(ElfFile):
    """An ELF image that also says it has a PDB: what a PE reader's debug_hints() will list."""

    def debug_hints(self) -> list[DebugHint]:
        guid = DebugId.parse("{3F2504E0-4F89-11D3-9A0C-0305E82C3301}-2", DebugIdKind.PDB)
        return [DebugHint(HintKind.PDB, "cdemo-gcc-dwarf5-pie", guid)]


@pytest.fixture
def pdb_locator() -> Iterator[None]:
    before = located_by(HintKind.PDB)
    register_locator(HintKind.PDB, _FakePdbLocator())
    yield
    if before is None:
        _LOCATORS.pop(HintKind.PDB, None)
    else:
        register_locator(HintKind.PDB, before)


def test_a_registered_locator_gives_the_module_its_debug_file(tmp_path: Path, pdb_locator: None) -> None:
    store = tmp_path / "store" / "cdemo-gcc-dwarf5-pie" / "3F2504E04F8911D39A0C0305E82C33012"
    copy_fixtures(store, "cdemo-gcc-dwarf5-pie")
    opts = options(search_paths=[tmp_path / "store"])
    image = _PdbImage(BIN / "cdemo-gcc-symtab")
    module = module_for(image, opts)
    assert [source.path for source in module.debug_files] == [store / "cdemo-gcc-dwarf5-pie"]
    image.close()
    opts.close()


def test_registry_refuses_a_candidate_outside_its_root(tmp_path: Path) -> None:
    before = _LOCATORS.get(HintKind.DSYM)
    register_locator(HintKind.DSYM, _FakePdbLocator(escape=True))
    try:
        root = tmp_path / "root"
        root.mkdir()
        shutil.copy(BIN / "cdemo-gcc-symtab", tmp_path)
        opts = options(search_paths=[root])
        refused: list[str] = []
        hint = DebugHint(HintKind.DSYM, "cdemo-gcc-symtab")
        assert locate(hint, context_for(BIN / "cdemo-gcc-symtab", opts), refused) is None
        assert len(refused) == 1 and "outside" in refused[0]
    finally:
        if before is None:
            _LOCATORS.pop(HintKind.DSYM, None)
        else:
            register_locator(HintKind.DSYM, before)


def test_hint_without_a_locator_finds_nothing() -> None:
    hint = DebugHint(HintKind.DEBUG_MAP_OBJECT, "x.o")
    if HintKind.DEBUG_MAP_OBJECT not in _LOCATORS:
        assert locate(hint, context_for(BIN / SPLIT, options()), []) is None


def test_debug_id_refusal_compares_values() -> None:
    pdb = DebugId.parse("3F2504E04F8911D39A0C0305E82C33012", DebugIdKind.PDB)
    same = DebugId.parse("{3f2504e0-4f89-11d3-9a0c-0305e82c3301}-2", DebugIdKind.PDB)
    assert pdb is not None and debug_id_refusal(pdb, same) is None
    other = pdb._replace(age=3)
    refusal = debug_id_refusal(pdb, other)
    assert refusal is not None and str(other) in refusal and str(pdb) in refusal


def test_object_cache_keys_by_slice(tmp_path: Path) -> None:
    cache = Loader()
    path = BIN / "cdemo-gcc-symtab"
    plain, sliced = cache.open(path), cache.open(path, arch="x86_64")
    assert plain is not sliced
    assert cache.open(path, arch="x86_64") is sliced
    cache.close()


# --- path rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("recorded", "name"),
    [("C:\\x\\app.exe", "app.exe"), ("/usr/lib/libc.so.6", "libc.so.6"), ("app", "app"), ("dir/", "dir")],
)
def test_base_name(recorded: str, name: str) -> None:
    assert base_name(recorded) == name


def test_relative_path_rules() -> None:
    assert relative_path("sub/x.dwo") is not None
    for bad in ["../x.dwo", "a/../../x", "/abs/x.dwo", "a\\b.dwo", "C:x.dwo", "", "x\0.dwo"]:
        assert relative_path(bad) is None, bad


@given(st.text(max_size=20))
def test_a_file_name_stays_under_its_root(name: str) -> None:
    root = Path("/srv/debug")
    if is_file_name(name):
        assert lies_under(root / name, root)
    else:
        assert name in ("", ".", "..") or any(char in name for char in "/\\\0:")


def test_lies_under() -> None:
    root = Path("/srv/debug")
    assert lies_under(root / "a" / "b", root)
    assert not lies_under(root / ".." / "etc" / "passwd", root)
    assert not lies_under(root, root)
    assert not lies_under(Path("/srv/debugger/x"), root)


def test_a_locator_registered_before_its_kinds_module_loads_is_kept_when_it_loads() -> None:
    """The registry imports a kind's own locator module when a hint of the kind is first followed
    (a cold lookup imports no PDB or Mach-O locator); a locator a caller registered before that must
    stay the kind's, not be replaced by the module's own registration when it loads. In a fresh
    interpreter, where no locator module has been imported yet."""
    code = (
        "from symbolize.discovery import register_locator\n"
        "from symbolize.discovery.registry import load_locators, located_by, registered_kinds\n"
        "from symbolize.formats.types import HintKind\n"
        "mine = object()\n"
        "for kind in (HintKind.PDB, HintKind.DSYM, HintKind.BUILD_ID):\n"
        "    register_locator(kind, mine)\n"
        "registered_kinds(); load_locators()\n"
        "print([located_by(kind) is mine for kind in (HintKind.PDB, HintKind.DSYM, HintKind.BUILD_ID)])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True, True, True]"

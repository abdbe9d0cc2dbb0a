"""Finding a Mach-O binary's debug info: its dSYM (by name, by UUID, refused when another build's),
the objects of its debug map (refused when rebuilt since the link), and slices of universal files
through the library and the CLI."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from symbolize.api import lookup, open_module
from symbolize.cli.app import app
from symbolize.formats.archive import archive_members
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.symtab import N_OSO
from symbolize.formats.open import open_object
from symbolize.module import Unknown
from tests.fixtures_data import FIXTURES
from tests.macho_patch import with_oso_name

MACOS = FIXTURES / "bin" / "macos"
EXPECTED = FIXTURES / "expected" / "macos"


def _expected(variant: str) -> list[tuple[int, list[tuple[str | None, str | None, int]]]]:
    data = json.loads((EXPECTED / f"{variant}.json").read_text())
    return [
        (int(entry["address"], 16), [(f["function"], f["file"], f["line"]) for f in entry["frames"]])
        for entry in data["addresses"]
    ]


def _lookup(path: Path | str, vaddrs: list[int], **options: object) -> list[list[tuple[str | None, str | None, int]]]:
    results = lookup(path, vaddrs, demangle="none", use_cache=False, **options)  # type: ignore[arg-type]
    return [[] if isinstance(r, Unknown) else [(f.function, f.file, f.line) for f in r] for r in results]


def _copy_dsym(source: Path, bundle: Path, dwarf_name: str) -> None:
    dwarf_dir = bundle / "Contents" / "Resources" / "DWARF"
    dwarf_dir.mkdir(parents=True)
    shutil.copy(source, dwarf_dir / dwarf_name)


def test_open_object_reads_mach_o_slices() -> None:
    for arch in ("x86_64", "arm64"):
        with open_object(MACOS / "cppdemo-universal", arch=arch) as image:
            assert isinstance(image, MachOFile)
            assert image.arch == arch
            assert image.load_base == 0x100000000


def test_dsym_beside_the_binary_names_through_the_library() -> None:
    answers = _expected("cppdemo-macho-x86_64")[:60]
    assert _lookup(MACOS / "cppdemo-x86_64", [vaddr for vaddr, _ in answers]) == [frames for _, frames in answers]


def test_universal_file_and_its_universal_dsym_by_arch_or_suffix() -> None:
    for arch in ("x86_64", "arm64"):
        answers = _expected(f"cppdemo-macho-universal-{arch}")[:40]
        vaddrs = [vaddr for vaddr, _ in answers]
        assert _lookup(MACOS / "cppdemo-universal", vaddrs, arch=arch) == [frames for _, frames in answers]
        assert _lookup(f"{MACOS / 'cppdemo-universal'}:{arch}", vaddrs) == [frames for _, frames in answers]


def test_renamed_dsym_is_found_by_uuid_under_a_search_path(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    shutil.copy(MACOS / "cppdemo-arm64", tmp_path / "app" / "cppdemo-arm64")
    dwarf = MACOS / "cppdemo-arm64.dSYM" / "Contents" / "Resources" / "DWARF" / "cppdemo-arm64"
    _copy_dsym(dwarf, tmp_path / "symbols" / "deep" / "renamed.dSYM", "something-else")
    answers = _expected("cppdemo-macho-arm64")[:40]
    vaddrs = [vaddr for vaddr, _ in answers]
    without = _lookup(tmp_path / "app" / "cppdemo-arm64", vaddrs)
    assert all(frames == [] or frames[0][1] is None for frames in without)  # symbols only
    found = _lookup(tmp_path / "app" / "cppdemo-arm64", vaddrs, search_paths=[tmp_path / "symbols"])
    assert found == [frames for _, frames in answers]


def test_dsym_of_another_build_is_refused_with_both_uuids(tmp_path: Path) -> None:
    shutil.copy(MACOS / "cppdemo-x86_64", tmp_path / "cppdemo-x86_64")
    other = MACOS / "usemshape-x86_64.dSYM" / "Contents" / "Resources" / "DWARF" / "usemshape-x86_64"
    _copy_dsym(other, tmp_path / "cppdemo-x86_64.dSYM", "cppdemo-x86_64")
    module = open_module(tmp_path / "cppdemo-x86_64", use_cache=False)
    wanted = str(MachOFile(MACOS / "cppdemo-x86_64").debug_id)
    found = str(MachOFile(other).debug_id)
    assert any(wanted in reason and found in reason for reason in module.refused)
    frames = module.lookup([0x1000004C0])[0]
    assert not isinstance(frames, Unknown) and frames[0].file is None  # named by the symbol table alone


def _debug_map_copy(tmp_path: Path, recorded_mtime: int) -> Path:
    """cdemo-x86_64 and its object in ``tmp_path``, the N_OSO stab rewritten to record ``recorded_mtime``."""
    (tmp_path / "obj").mkdir()
    shutil.copy(MACOS / "obj" / "cdemo-x86_64.o", tmp_path / "obj" / "cdemo-x86_64.o")
    binary = tmp_path / "cdemo-x86_64"
    data = bytearray((MACOS / "cdemo-x86_64").read_bytes())
    with MachOFile(MACOS / "cdemo-x86_64") as image:
        oso = next(stab for stab in image.stabs() if stab.n_type == N_OSO)
    struct.pack_into("<Q", data, oso.file_offset + 8, recorded_mtime)  # nlist_64.n_value
    binary.write_bytes(bytes(data))
    return binary


def test_debug_map_objects_name_the_binary(tmp_path: Path) -> None:
    answers = _expected("cdemo-macho-x86_64-debugmap")
    vaddrs = [vaddr for vaddr, _ in answers]
    assert _lookup(MACOS / "cdemo-x86_64", vaddrs) == [frames for _, frames in answers]


def test_debug_map_object_rebuilt_since_the_link_is_refused(tmp_path: Path) -> None:
    binary = _debug_map_copy(tmp_path, 1_000_000_000)
    vaddrs = [vaddr for vaddr, _ in _expected("cdemo-macho-x86_64-debugmap")[:50]]
    with MachOFile(binary) as image:
        assert [hint.mtime for hint in image.debug_hints() if hint.name.endswith(".o")] == [1_000_000_000]
    stale = _lookup(binary, vaddrs)
    assert all(frames == [] or frames[0][1] is None for frames in stale)
    os.utime(tmp_path / "obj" / "cdemo-x86_64.o", (1_000_000_000, 1_000_000_000))
    fresh = _lookup(binary, vaddrs)
    assert fresh == [frames for _, frames in _expected("cdemo-macho-x86_64-debugmap")[:50]]


@pytest.mark.parametrize("recorded", ["absolute", "relative"])
def test_a_debug_map_object_of_another_mtime_is_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded: str
) -> None:
    # The recorded mtime is compared with the object's status first: a stale object is not read.
    (tmp_path / "obj").mkdir()
    obj = tmp_path / "obj" / "cdemo-x86_64.o"
    shutil.copy(MACOS / "obj" / obj.name, obj)
    binary = tmp_path / "cdemo-x86_64"
    name = str(obj) if recorded == "absolute" else "obj/cdemo-x86_64.o"
    binary.write_bytes(with_oso_name((MACOS / binary.name).read_bytes(), MACOS / binary.name, name, 1_000_000_000))
    opened: list[Path] = []

    def counting_open(path: Path, *args: object, **kwargs: object) -> object:
        opened.append(Path(path).resolve())
        return open_object(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("symbolize.loader.open_object", counting_open)
    answers = _expected("cdemo-macho-x86_64-debugmap")[:50]
    vaddrs = [vaddr for vaddr, _ in answers]
    stale = open_module(binary, use_cache=False)
    assert all(isinstance(r, Unknown) or r[0].file is None for r in stale.lookup(vaddrs))  # symbols alone
    assert obj.resolve() not in opened
    assert any(refusal.startswith(f"{obj}: modified since the link") for refusal in stale.refusals())
    os.utime(obj, (1_000_000_000, 1_000_000_000))  # the object the link recorded: opened, and it names
    assert _lookup(binary, vaddrs) == [frames for _, frames in answers]
    assert obj.resolve() in opened


def test_stripped_binary_without_dsym_keeps_its_global_names() -> None:
    results = lookup(MACOS / "cdemo-x86_64-stripped", [0x100000440, 0x100000330], demangle="none", use_cache=False)
    assert [r[0].function if not isinstance(r, Unknown) else None for r in results] == ["checksum_round", "memset"]
    assert all(not isinstance(r, Unknown) and r[0].line == 0 for r in results)


def test_cli_lookup_takes_arch_and_file_colon_arch() -> None:
    runner = CliRunner()
    answers = _expected("cppdemo-macho-universal-arm64")[:5]
    addresses = [f"{vaddr:#x}" for vaddr, _ in answers]
    base = ["lookup", "--json", "--no-cache", "--no-background-index", "--demangle", "none"]
    for obj in (["--obj", str(MACOS / "cppdemo-universal"), "--arch", "arm64"],
                ["--obj", f"{MACOS / 'cppdemo-universal'}:arm64"]):  # fmt: skip
        result = runner.invoke(app, [*base, *obj, *addresses])
        assert result.exit_code == 0, result.output
        printed = [json.loads(line) for line in result.stdout.splitlines()]
        assert [[(f["function"], f["file"], f["line"]) for f in row["frames"]] for row in printed] == [
            frames for _, frames in answers
        ]
    missing = runner.invoke(app, [*base, "--obj", str(MACOS / "cppdemo-universal"), "--arch", "arm64e", "0x1"])
    assert missing.exit_code == 1
    assert "no arm64e slice" in missing.output


def test_debug_map_archive_members_name_the_binary() -> None:
    """lib.a(hash.o) and lib.a(sort.o): the archive's members are found and read like objects."""
    answers = _expected("archdemo-macho-x86_64-debugmap")
    vaddrs = [vaddr for vaddr, _ in answers]
    ours = _lookup(MACOS / "archdemo-x86_64", vaddrs)
    assert ours == [frames for _, frames in answers]
    files = {frames[0][1] for frames in ours if frames}
    assert {"/fixtures/src/macarchive_hash.c", "/fixtures/src/macarchive_sort.c"} <= files


def _archive_copy(tmp_path: Path, recorded_mtime: int, member_mtime: int) -> Path:
    """archdemo-x86_64 and its objects in ``tmp_path``; the N_OSO stab of lib.a(hash.o) records
    ``recorded_mtime`` and hash.o's ar header ``member_mtime``."""
    (tmp_path / "obj").mkdir(parents=True)
    for name in ("macarchive-main-x86_64.o", "libmacarchive-x86_64.a"):
        shutil.copy(MACOS / "obj" / name, tmp_path / "obj" / name)
    archive = tmp_path / "obj" / "libmacarchive-x86_64.a"
    (member,) = [m for m in archive_members(archive) if m.name == "hash.o"]
    data = bytearray(archive.read_bytes())
    data[member.header_offset + 16 : member.header_offset + 28] = str(member_mtime).ljust(12).encode()
    archive.write_bytes(bytes(data))
    binary = tmp_path / "archdemo-x86_64"
    data = bytearray((MACOS / "archdemo-x86_64").read_bytes())
    with MachOFile(MACOS / "archdemo-x86_64") as image:
        oso = next(stab for stab in image.stabs() if stab.n_type == N_OSO and stab.name.endswith("(hash.o)"))
    struct.pack_into("<Q", data, oso.file_offset + 8, recorded_mtime)  # nlist_64.n_value
    binary.write_bytes(bytes(data))
    return binary


def test_debug_map_archive_member_of_another_mtime_is_refused(tmp_path: Path) -> None:
    """A member's mtime is its ar header's, checked against the stab as an object file's is."""
    answers = _expected("archdemo-macho-x86_64-debugmap")
    vaddrs = [vaddr for vaddr, _ in answers]
    hashed = [position for position, (_, frames) in enumerate(answers) if frames and "hash.c" in str(frames[0][1])]
    assert len(hashed) > 20
    stale = _lookup(_archive_copy(tmp_path / "stale", 1_000_000_000, 999_999_999), vaddrs)
    assert all(not stale[position] or stale[position][0][1] is None for position in hashed)
    module = open_module(tmp_path / "stale" / "archdemo-x86_64", use_cache=False)
    module.lookup(vaddrs)
    refusal = "x86_64.a(hash.o): modified since the link: mtime 999999999 is not the 1000000000"
    assert any(refusal in reason for reason in module.refusals()), module.refusals()
    fresh = _lookup(_archive_copy(tmp_path / "fresh", 1_000_000_000, 1_000_000_000), vaddrs)
    assert fresh == [frames for _, frames in answers]

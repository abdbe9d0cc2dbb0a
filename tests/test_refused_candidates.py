"""Candidate debug files that were found and turned down are shown in the summary, with why.

A ``.dwo`` of another build (its DWO ID differs) and a dwz file of another build (its build ID
differs) are refused while the DWARF is decoded; a debug file whose CRC32 differs is refused when
the module is opened. Each shows, as ``path: why``, in ``--json-summary``'s ``"refused"`` and in
the text summary.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from symbolize import api
from symbolize.summary import Summary
from tests.fixtures_data import BIN
from tests.test_contained_damage import _pie_profile, _vaddrs


def _summary_of(binary: Path) -> Summary:
    _, summary = api.symbolize_profile(_pie_profile(binary, _vaddrs(binary.name)), binaries=[binary], use_cache=False)
    return summary


def _assert_shown(summary: Summary, refusal: str) -> None:
    assert refusal in summary.to_json()["mappings"][0]["refused"]
    assert f"  refused: {refusal}" in summary.format_text().splitlines()


def test_a_dwo_of_another_build_is_shown_refused_with_its_dwo_id(tmp_path: Path) -> None:
    binary = tmp_path / "cdemo-clang-split"
    shutil.copy(BIN / binary.name, binary)
    # gcc's .dwo of the same source, under clang's name: another unit, another DWO ID.
    shutil.copy(BIN / "cdemo-gcc-split4.dwo", tmp_path / "cdemo-clang-split.dwo")
    summary = _summary_of(binary)
    _assert_shown(summary, f"{tmp_path / 'cdemo-clang-split.dwo'}: holds no split unit with DWO ID 0x8ed3464260f9c483")
    assert summary.mappings[0].named == summary.mappings[0].locations  # the skeleton and symbols still name


def test_a_dwz_file_of_another_build_is_shown_refused_with_both_build_ids(tmp_path: Path) -> None:
    binary = tmp_path / "cppdemo-gcc-dwz"
    shutil.copy(BIN / binary.name, binary)
    other = tmp_path / "cppdemo-gcc-dwz.common.debug"
    shutil.copy(BIN / "cppdemo-gcc-buildid", other)
    summary = _summary_of(binary)
    refused = summary.to_json()["mappings"][0]["refused"]
    assert [entry for entry in refused if entry.startswith(f"{other}: debug ID ")], refused
    wanted = "8feebad8c365000be09b33ee5c5edc5cebd34f5b"  # the .gnu_debugaltlink's build ID
    refusal = next(entry for entry in refused if entry.startswith(f"{other}: "))
    assert refusal.endswith(f"does not match .gnu_debugaltlink's {wanted}")
    _assert_shown(summary, refusal)


def test_a_debug_file_whose_crc_differs_is_shown_refused(tmp_path: Path) -> None:
    binary = tmp_path / "cdemo-gcc-debuglink"
    shutil.copy(BIN / binary.name, binary)
    wrong = tmp_path / "cdemo-gcc-debuglink.debug"
    shutil.copy(BIN / "cdemo-gcc-dwarf5-pie", wrong)
    summary = _summary_of(binary)
    refused = summary.to_json()["mappings"][0]["refused"]
    assert any(entry.startswith(f"{wrong}: ") and "does not match" in entry for entry in refused), refused


def test_nothing_refused_shows_nothing(tmp_path: Path) -> None:
    binary = tmp_path / "cdemo-clang-split"
    shutil.copy(BIN / binary.name, binary)
    shutil.copy(BIN / "cdemo-clang-split.dwo", tmp_path / "cdemo-clang-split.dwo")
    summary = _summary_of(binary)
    assert summary.to_json()["mappings"][0]["refused"] == []
    assert "  refused: " not in summary.format_text()

"""Windows paths where the toolkit parses paths, checked on any OS with PureWindowsPath: a mapping's
``C:\\...`` file name, a ``FILE:ARCH`` on a drive, the default cache directory, and the index
cache's own names (no ``/``-joined paths)."""

from __future__ import annotations

import sys
from pathlib import Path, PureWindowsPath

import pytest

from symbolize.api import path_and_arch
from symbolize.cache import CACHE_DIR_VARIABLE, default_cache_dir, index_path
from symbolize.discovery.paths import base_name, is_file_name, relative_path

WINDOWS_PATHS = [
    PureWindowsPath(r"C:\Program Files\App\app.exe"),
    PureWindowsPath(r"D:\build\out\lib x64.dll"),
    PureWindowsPath(r"\\server\share\symbols\app.pdb"),
    PureWindowsPath(r"C:/mixed\separators/app.exe"),
]


@pytest.mark.parametrize("path", WINDOWS_PATHS, ids=str)
def test_a_windows_file_name_is_its_last_part(path: PureWindowsPath) -> None:
    assert base_name(str(path)) == path.name
    assert is_file_name(path.name)
    assert not is_file_name(str(path))


@pytest.mark.parametrize("path", WINDOWS_PATHS, ids=str)
def test_a_windows_path_is_no_relative_split_dwarf_name(path: PureWindowsPath) -> None:
    assert relative_path(str(path)) is None
    assert relative_path(path.name) is not None


@pytest.mark.parametrize("path", WINDOWS_PATHS, ids=str)
def test_a_drive_colon_is_no_arch_suffix(path: PureWindowsPath) -> None:
    assert path_and_arch(str(path)) == (Path(str(path)), None)
    sliced, arch = path_and_arch(f"{path}:arm64")
    assert (PureWindowsPath(str(sliced)), arch) == (path, "arm64")


def test_the_default_cache_directory_on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CACHE_DIR_VARIABLE, raising=False)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", r"C:\Users\me\AppData\Local")
    assert PureWindowsPath(str(default_cache_dir())) == PureWindowsPath(r"C:\Users\me\AppData\Local\symbolize\Cache")


def test_an_index_path_is_built_from_parts(tmp_path: Path) -> None:
    """Joined by the OS's own separator: under a Windows cache directory it is a Windows path."""
    windows_cache = PureWindowsPath(r"C:\Users\me\AppData\Local\symbolize\Cache")
    path = index_path(Path(str(windows_cache)), "key")
    assert PureWindowsPath(str(path)).parent == windows_cache / "index"
    assert path.suffix == ".idx"

"""What a name read from a binary or a profile may make discovery open.

Names in hints and mappings come from files we do not trust (a profile from
another machine, a binary from anywhere), so each is checked before it
becomes a path:

- a ``.gnu_debuglink`` name, a mapping's base name and any name looked up in
  a directory is a *file name*: no separator of either OS, not ``.``/``..``,
  no NUL;
- a split-DWARF ``DW_AT_dwo_name`` looked up under a directory is a relative
  path without ``..``;
- a GNU build ID used in ``.build-id/xx/rest.debug`` is 2 to 64 bytes (hex
  by construction: it is a :class:`DebugId` value);
- every candidate path lies, once normalized, under the directory it was
  looked up in, unless it is an explicit argument (``--binary``) or a path the
  file records (an absolute ``DW_AT_dwo_name``, ``.gnu_debugaltlink``), which
  is followed only when the file found then verifies by its ID.

Symbolic links inside a root are followed: distributions link
``.build-id/xx/rest.debug`` to the debug file elsewhere under the same
debug directory.

A name not found as spelled is looked for ignoring case (a Windows profile names
``C:\\x\\App.exe``) in the directory's listing, read once per run
(:class:`DirectoryListings`): listing a large search directory again for every unmatched
mapping cost the mappings times the entries.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from symbolize.formats.types import DebugId, DebugIdKind

MIN_BUILD_ID_BYTES = 2
MAX_BUILD_ID_BYTES = 64


def base_name(recorded: str) -> str:
    """The last component of a path in POSIX or Windows syntax (``C:\\x\\app.exe`` -> ``app.exe``)."""
    return recorded.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def is_file_name(name: str) -> bool:
    """True for a bare file name: no separators of either OS, not ``.`` or ``..``, no NUL."""
    return bool(name) and name not in (".", "..") and not any(char in name for char in "/\\\0") and ":" not in name


def relative_path(name: str) -> PurePosixPath | None:
    """``name`` as a relative path without ``..`` (a ``DW_AT_dwo_name``), or None when it is not one."""
    if not name or "\0" in name or "\\" in name or name.startswith("/") or ":" in name:
        return None
    path = PurePosixPath(name)
    if any(part == ".." for part in path.parts) or not path.parts:
        return None
    return path


def build_id_path(debug_id: DebugId | None) -> PurePosixPath | None:
    """``.build-id/xx/rest.debug`` for a GNU build ID of sane length; None for anything else."""
    if debug_id is None or debug_id.kind is not DebugIdKind.GNU_BUILD_ID:
        return None
    if not MIN_BUILD_ID_BYTES <= len(debug_id.value) <= MAX_BUILD_ID_BYTES:
        return None
    text = debug_id.value.hex()
    return PurePosixPath(".build-id", text[:2], f"{text[2:]}.debug")


class DirectoryListings:
    """The entries of each directory looked in, by case-folded name, listed once (one run's worth:
    the owner, :class:`~symbolize.loader.Loader`, lives as long as a run)."""

    def __init__(self) -> None:
        self._listed: dict[str, dict[str, list[str]]] = {}

    def matching(self, directory: Path, name: str) -> list[str]:
        """The entries of ``directory`` whose name is ``name`` ignoring case, sorted; none when it
        cannot be listed."""
        key = os.path.abspath(directory)
        listed = self._listed.get(key)
        if listed is None:
            listed = {}
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        listed.setdefault(entry.name.casefold(), []).append(entry.name)
            except OSError:
                listed = {}
            for names in listed.values():
                names.sort()
            self._listed[key] = listed
        return listed.get(name.casefold(), [])

    def clear(self) -> None:
        self._listed.clear()


def lies_under(path: Path, root: Path) -> bool:
    """Whether ``path``, normalized (``..`` folded, links not followed), is inside ``root``."""
    normal_root = os.path.normpath(os.path.abspath(root))
    normal_path = os.path.normpath(os.path.abspath(path))
    try:
        return os.path.commonpath([normal_root, normal_path]) == normal_root and normal_path != normal_root
    except ValueError:  # different drives on Windows
        return False


def normalized_dir(path: Path) -> Path:
    """The absolute, ``..``-folded directory holding ``path``."""
    return Path(os.path.normpath(os.path.abspath(path))).parent

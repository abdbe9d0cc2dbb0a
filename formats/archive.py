"""Static archives (``ar``): where each member of ``lib.a`` (or a Rust ``.rlib``) lies in the file.

A debug map names an object taken from a static library as ``lib.a(member.o)``, and records the
member's modification time from its ar header; the member's bytes are a Mach-O object file at
some offset of the archive. arpy reads the archive format (the common ``!<arch>`` header, the
60-byte member headers, the BSD ``#1/N`` and GNU ``/N`` long names, the symbol and name
tables); its types stay in this module. Checked here, because arpy does not check them: every
member lies inside the file, and no header leads back (a negative size would make arpy read
the same header forever).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from symbolize.formats.errors import MalformedInputError, MissingDebugInfoError, NotFoundError, SymbolizeError

AR_MAGIC = b"!<arch>\n"
# More members than this is not an archive a linker made (the largest system ones hold thousands).
_MAX_MEMBERS = 1 << 20


class ArchiveMember(NamedTuple):
    """One file stored in an archive: ``size`` bytes at ``file_offset``, and its recorded mtime."""

    name: str
    mtime: int
    file_offset: int
    size: int
    # Where its 60-byte ar header starts.
    header_offset: int


def split_member_path(recorded: str) -> tuple[str, str] | None:
    """``("dir/lib.a", "member.o")`` for a recorded ``dir/lib.a(member.o)``; None for a plain path."""
    if not recorded.endswith(")"):
        return None
    opening = recorded.rfind("(")
    if opening <= 0 or opening == len(recorded) - 2:
        return None
    return recorded[:opening], recorded[opening + 1 : -1]


def archive_members(path: Path) -> list[ArchiveMember]:
    """Every member of the archive at ``path`` (symbol and name tables left out), in file order.

    Raises MalformedInputError for a damaged archive (a file that is not one included: callers
    sniff the magic first).
    """
    import arpy

    try:
        size = path.stat().st_size
        stream = path.open("rb")
    except FileNotFoundError as err:
        raise NotFoundError("file not found", path) from err
    except OSError as err:
        raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
    members: list[ArchiveMember] = []
    with stream:
        try:
            archive = arpy.Archive(fileobj=stream)
            previous = -1
            while (header := archive.read_next_header()) is not None:
                start = header.file_offset
                if header.size < 0 or start is None or start <= previous or start + header.size > size:
                    raise MalformedInputError(f"archive member of {header.size} bytes is outside the file",
                                              path, header.offset)  # fmt: skip
                previous = start
                if len(members) >= _MAX_MEMBERS:
                    raise MalformedInputError(f"more than {_MAX_MEMBERS} archive members", path, header.offset)
                if header.type in (arpy.HEADER_BSD, arpy.HEADER_NORMAL, arpy.HEADER_GNU):
                    name = bytes(header.name).rstrip(b"\0").decode("utf-8", "surrogateescape")
                    if name not in ("__.SYMDEF", "__.SYMDEF SORTED", "__.SYMDEF_64", "__.SYMDEF_64 SORTED"):
                        members.append(ArchiveMember(name, int(header.timestamp), start, header.size, header.offset))
        except (arpy.ArchiveFormatError, arpy.ArchiveAccessError, ValueError, OSError) as err:
            raise MalformedInputError(f"damaged archive: {err}", path) from err
    return members


def find_member(path: Path, name: str) -> ArchiveMember:
    """The member of the archive at ``path`` called ``name`` (the first, as linkers take it).

    Raises MissingDebugInfoError when it holds none of that name.
    """
    for member in archive_members(path):
        if member.name == name:
            return member
    raise MissingDebugInfoError(f"the archive holds no member {name}", path)

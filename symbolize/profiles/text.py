"""Lines of a text profile, numbers and addresses in them, and the maps section, all bounded.

Text profiles (gperftools heap profiles and the maps text of a CPU profile) are read line by
line; every failure names its 1-based line number. Numbers are matched with at most 20 digits
before ``int()`` sees them (hostile input cannot make the conversion slow) and must fit pprof's
int64 values; addresses are ``0x``-prefixed hex of at most 16 digits (64 bits).

Maps lines are those of Linux ``proc(5)`` ``/proc/[pid]/maps``:
``start-end perms offset dev inode [path]``. Producers on Windows and macOS synthesize lines of
the same shape (``start-end r-xp 00000000 00:00 0 path``); the path is the rest of the line, so
paths with spaces (``C:\\Program Files\\...``) are kept whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.errors import MalformedInputError
from symbolize.profiles.builder import MapsEntry

__all__ = [
    "MAX_FRAMES",
    "MAX_LINE_BYTES",
    "MAX_VALUE",
    "TextLine",
    "iter_lines",
    "parse_address",
    "parse_maps_line",
]

MAX_VALUE = 2**63 - 1  # pprof values are int64
MAX_LINE_BYTES = 1 << 20
MAX_FRAMES = 8192  # per sample; real stack walkers stop at 64-256
MAX_ADDRESS = 2**64 - 1

_ADDRESS = re.compile(r"0[xX]([0-9a-fA-F]{1,16})")
_MAPS_LINE = re.compile(
    r"([0-9a-fA-F]{1,16})-([0-9a-fA-F]{1,16})\s+([-rwxsp]{4})\s+([0-9a-fA-F]{1,16})\s+"
    r"[0-9a-fA-F]+:[0-9a-fA-F]+\s+\d{1,20}(?:\s+(.*?))?\s*"
)


class TextLine(NamedTuple):
    number: int  # 1-based
    text: str  # without its line ending
    complete: bool  # False for a last line that has no newline (a file cut short, or hand-written)


def iter_lines(text: str, path: Path | str, first_number: int = 1) -> Iterator[TextLine]:
    """The lines of ``text``, numbered from ``first_number``; a line longer than the cap is an error."""
    number = first_number
    position = 0
    end = len(text)
    while position < end:
        newline = text.find("\n", position, position + MAX_LINE_BYTES + 1)
        if newline < 0:
            if end - position > MAX_LINE_BYTES:
                raise MalformedInputError(f"line {number}: longer than {MAX_LINE_BYTES} bytes", path)
            yield TextLine(number, text[position:].rstrip("\r"), complete=False)
            return
        yield TextLine(number, text[position:newline].rstrip("\r"), complete=True)
        position = newline + 1
        number += 1


def parse_address(token: str, line: TextLine, path: Path | str) -> int:
    """A ``0x``-prefixed hex address of at most 64 bits."""
    match = _ADDRESS.fullmatch(token)
    if match is None:
        raise MalformedInputError(f"line {line.number}: address {token[:40]!r} is not 0x-prefixed hex of 64 bits", path)
    return int(match.group(1), 16)


def parse_maps_line(line: TextLine, path: Path | str) -> MapsEntry:
    """One maps line; anything else is an error naming the line."""
    match = _MAPS_LINE.fullmatch(line.text.strip())
    if match is None:
        what = "cut short" if not line.complete else "not a maps line"
        raise MalformedInputError(f"line {line.number}: {what}: {line.text[:80]!r}", path)
    start, limit, perms, offset, file_path = match.groups()
    memory_start, memory_limit = int(start, 16), int(limit, 16)
    if memory_limit < memory_start:
        raise MalformedInputError(f"line {line.number}: maps range ends before it starts", path)
    return MapsEntry(memory_start, memory_limit, perms, int(offset, 16), file_path or "")

"""Errors raised by the toolkit: one root, :class:`SymbolizeError`.

They are defined in ``symbolize.formats.errors`` (the lower layer) and re-exported here,
the public place to import them from, with :func:`os_error`, which words an operating
system's error on a user's file the way every other error here is worded.
"""

from __future__ import annotations

import errno
from pathlib import Path

from symbolize.formats.errors import (
    DebugIdMismatchError,
    InputLimitError,
    MalformedInputError,
    MissingDebugInfoError,
    NotFoundError,
    RemoteMissError,
    SymbolizeError,
    UnsupportedFormatError,
)

__all__ = [
    "DebugIdMismatchError",
    "InputLimitError",
    "MalformedInputError",
    "MissingDebugInfoError",
    "NotFoundError",
    "RemoteMissError",
    "SymbolizeError",
    "UnsupportedFormatError",
    "os_error",
]

# How an operating system's error reads, the same for every kind of file (binary, profile, output).
_PHRASES = {errno.EACCES: "permission denied", errno.EPERM: "permission denied", errno.EISDIR: "is a directory"}


def os_error(error: OSError, doing: str, path: Path | str) -> SymbolizeError:
    """``error`` as a SymbolizeError naming ``path`` (the user's, never a temporary's) and what
    failed (``doing``: "read", "write"): ``out.pb: cannot write: permission denied``; a file
    to read that is missing reads ``file not found`` (a NotFoundError), as discovery words it."""
    path = Path(path)
    if error.errno == errno.ENOENT and doing == "read":
        return NotFoundError("file not found", path)
    if error.errno == errno.ENOENT and doing == "write" and not path.parent.is_dir():
        return SymbolizeError(f"cannot write: no directory {path.parent}", path)
    reason = _PHRASES.get(error.errno or 0) or (error.strerror or str(error)).lower()
    return SymbolizeError(f"cannot {doing}: {reason}", path)

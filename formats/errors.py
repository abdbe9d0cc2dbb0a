"""The error root shared by the readers and the symbolizer.

Every failure caused by input (a truncated file, a hostile offset, a format we
do not read, debug info that is missing or belongs to another build) raises a
subclass of :class:`SymbolizeError`. Third-party exceptions are wrapped with
``raise ... from`` so callers catch one type.
"""

from __future__ import annotations

import os
from pathlib import Path


class SymbolizeError(Exception):
    """Root of every error this toolkit raises for bad or unusable input."""

    def __init__(self, message: str, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.reason = message
        super().__init__(f"{self.path}: {message}" if self.path is not None else message)


class MalformedInputError(SymbolizeError):
    """A file (binary, debug file or profile) is truncated or inconsistent."""

    def __init__(self, message: str, path: Path | str | None = None, offset: int | None = None) -> None:
        self.offset = offset
        where = f" (at offset {offset:#x})" if offset is not None else ""
        super().__init__(message + where, path)


class BrokenSpanError(MalformedInputError):
    """Part of a file's answers is broken (one function's subtree, one name), the rest not.

    Raised for the addresses of that part only: the lookup that meets it goes on to the other
    regions holding the address (a symbol table) and gives this error where none names it, and
    the part's region keeps answering its other addresses.
    """


class InputLimitError(MalformedInputError):
    """An input would take more memory than a cap allows (a decompression bomb, an absurd count).

    ``limit`` is the cap, in ``unit`` (bytes unless said), and ``setting`` the environment
    variable that raises it, if any; all are in the message too.
    """

    def __init__(
        self,
        message: str,
        path: Path | str | None,
        offset: int | None,
        *,
        limit: int,
        setting: str | None = None,
        unit: str = "bytes",
    ) -> None:
        self.limit = limit
        self.setting = setting
        hint = f"; {setting} raises the limit" if setting else ""
        super().__init__(f"{message} (limit {limit} {unit}{hint})", path, offset)


class UnsupportedFormatError(SymbolizeError):
    """The file is well formed but of a kind or version this toolkit does not read."""


class MissingDebugInfoError(SymbolizeError):
    """The binary or debug file that would name these addresses cannot be found."""


class RemoteMissError(MissingDebugInfoError):
    """A file not on disk that the servers asked for did not give either: none has it
    (``unreachable`` False), or some could not be reached and none of the others has it
    (``unreachable`` True); ``tried`` lists the URLs asked."""

    def __init__(self, message: str, path: Path | str | None, *, unreachable: bool, tried: tuple[str, ...]) -> None:
        self.unreachable = unreachable
        self.tried = tried
        super().__init__(message, path)


class NotFoundError(SymbolizeError):
    """A file or directory the caller named (a binary, a debug file, a profile, a search path) does
    not exist."""


class DebugIdMismatchError(SymbolizeError):
    """A candidate file's debug ID differs from the one the profile or binary asks for."""

    def __init__(self, path: Path | str, expected: str, found: str | None, what: str = "debug ID") -> None:
        self.expected = expected
        self.found = found
        super().__init__(f"{what} {found or 'none'} does not match expected {expected}", path)


def configured_limit(setting: str, default: int) -> int:
    """The cap in force for an :class:`InputLimitError`: environment variable ``setting`` when it
    holds a number (decimal or 0x hex), else ``default``."""
    text = os.environ.get(setting)
    if text:
        try:
            return int(text, 0)
        except ValueError:
            pass  # a setting that is not a number leaves the default
    return default

"""Errors raised by the toolkit: one root, :class:`SymbolizeError`.

They are defined in ``symbolize.formats.errors`` (the lower layer) and re-exported here,
the public place to import them from.
"""

from symbolize.formats.errors import (
    DebugIdMismatchError,
    InputLimitError,
    MalformedInputError,
    MissingDebugInfoError,
    SymbolizeError,
    UnsupportedFormatError,
)

__all__ = [
    "DebugIdMismatchError",
    "InputLimitError",
    "MalformedInputError",
    "MissingDebugInfoError",
    "SymbolizeError",
    "UnsupportedFormatError",
]

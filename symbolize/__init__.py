"""symbolize: turn the bare hex addresses of native pprof profiles into named frames.

The public API (importable without the CLI's dependencies)::

    import symbolize
    frames = symbolize.lookup("a.out", [0x1139])          # one result per address
    profile, summary = symbolize.symbolize_profile("cpu.pb.gz", binaries=["a.out"])
    summary = symbolize.symbolize_file("cpu.pb.gz", "cpu.symbolized.pb.gz")

Frame lists are innermost first. Every error raised for bad input is a
:class:`SymbolizeError`.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any


def _installed_copy() -> list[str] | None:
    """Where an installed copy of this package lives, when this one is a source checkout's.

    ``python -m symbolize`` or ``python -m pytest`` run in a checkout put the checkout first on
    ``sys.path``, and its ``symbolize/`` has no ``formats`` (pyproject.toml maps ``formats/`` there
    only when installing) and no compiled kernels (pip built them into the install). So a checkout's
    package without ``symbolize.formats`` takes its modules from the copy pip installed: what runs
    is what was installed. An editable install maps ``symbolize.formats`` to the checkout's
    ``formats/``: nothing to do. Without any install, importing fails here, saying so.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.isdir(os.path.join(here, "formats")):
        return None  # an installed copy: one stat, nothing more, on every run
    import importlib.util

    if importlib.util.find_spec("symbolize.formats") is not None:
        return None
    for entry in sys.path:
        candidate = os.path.join(os.path.abspath(entry or os.curdir), "symbolize")
        if os.path.isfile(os.path.join(candidate, "formats", "__init__.py")):
            return [candidate]
    raise ImportError(
        f"symbolize is imported from the source checkout {os.path.dirname(here)} and is not installed: "
        "pip install . (or pip install -e .) first"
    )


if (_installed := _installed_copy()) is not None:
    __path__[:] = _installed

if TYPE_CHECKING:
    from symbolize.api import (
        discovery_options,
        lookup,
        open_module,
        remote_options,
        stamp_profile,
        symbolize_file,
        symbolize_profile,
    )
    from symbolize.demangle import DemangleMode, demangle
    from symbolize.errors import (
        DebugIdMismatchError,
        MalformedInputError,
        MissingDebugInfoError,
        NotFoundError,
        SymbolizeError,
        UnsupportedFormatError,
    )
    from symbolize.formats.types import DebugId, DebugIdKind, Frame, Symbol
    from symbolize.module import Module, Reason, Unknown
    from symbolize.pprof import Profile, read_profile, write_profile
    from symbolize.summary import MappingSummary, Summary

# Submodules load on first use (PEP 562): `import symbolize.pprof` stays cheap and
# the package never imports itself half-initialised.
_EXPORTS = {
    "DebugId": "symbolize.formats.types",
    "DebugIdKind": "symbolize.formats.types",
    "DebugIdMismatchError": "symbolize.errors",
    "DemangleMode": "symbolize.demangle",
    "Frame": "symbolize.formats.types",
    "MalformedInputError": "symbolize.errors",
    "MappingSummary": "symbolize.summary",
    "MissingDebugInfoError": "symbolize.errors",
    "NotFoundError": "symbolize.errors",
    "Module": "symbolize.module",
    "Profile": "symbolize.pprof",
    "Reason": "symbolize.module",
    "Summary": "symbolize.summary",
    "Symbol": "symbolize.formats.types",
    "SymbolizeError": "symbolize.errors",
    "Unknown": "symbolize.module",
    "UnsupportedFormatError": "symbolize.errors",
    "demangle": "symbolize.demangle",
    "discovery_options": "symbolize.api",
    "lookup": "symbolize.api",
    "open_module": "symbolize.api",
    "read_profile": "symbolize.pprof",
    "remote_options": "symbolize.api",
    "stamp_profile": "symbolize.api",
    "symbolize_file": "symbolize.api",
    "symbolize_profile": "symbolize.api",
    "write_profile": "symbolize.pprof",
}

__all__ = [
    "DebugId",
    "DebugIdKind",
    "DebugIdMismatchError",
    "DemangleMode",
    "Frame",
    "MalformedInputError",
    "MappingSummary",
    "MissingDebugInfoError",
    "Module",
    "NotFoundError",
    "Profile",
    "Reason",
    "Summary",
    "Symbol",
    "SymbolizeError",
    "Unknown",
    "UnsupportedFormatError",
    "demangle",
    "discovery_options",
    "lookup",
    "native_status",
    "open_module",
    "read_profile",
    "remote_options",
    "stamp_profile",
    "symbolize_file",
    "symbolize_profile",
    "write_profile",
]


def native_status() -> str:
    """``compiled kernels: yes``, or ``no (why)``: whether readers run their Rust twins (``native/``)."""
    from symbolize.formats.native import status

    return status()


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'symbolize' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

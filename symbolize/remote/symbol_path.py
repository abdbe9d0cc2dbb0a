"""A symbol path (``_NT_SYMBOL_PATH``, ``--symbol-server SPEC``) read as WinDbg and LLDB read it.

Specs: Microsoft's "Symbol path for Windows debuggers" and "Advanced SymSrv Use" (dbghelp and
symsrv.dll), and LLDB's ``SymbolLocatorSymStore::ParseEnvSymbolPaths``. Elements are separated
by ``;`` (blank ones skipped, surrounding blanks trimmed); within an element ``*`` separates parts,
and the keywords are matched ignoring case:

- ``srv*A*B*...*URL`` (``symsrv*symsrv.dll*A*...`` is its long form): a *chain* of symbol stores
  searched left to right; the leftmost is the downstream store a file found further right is
  copied to (symsrv copies it into every store to its left; the bottom-most one keeps it
  uncompressed; here a file found in a directory is read where it is, and a download or a
  decoded ``_`` file is kept in the bottom-most store only). An empty part (``srv**URL``, a
  trailing ``*``) is the *default downstream store* -- symsrv's ``<home>/sym``, here the download
  store (RemoteOptions.cache_dir). A chain of one directory (``srv*\\\\server\\share``) has no
  downstream store of its own (a ``cache*`` before it still applies). ``srv*`` with nothing
  after it is WinDbg's ``.symfix`` path: the default store, then the Microsoft public symbol
  server. ``symsrv*`` with another DLL is another program's protocol and is ignored, with why.
- ``cache*DIR`` (``cache*`` alone: the default store) is looked in where it stands, and is the
  downstream store of every element to its right that names none of its own (LLDB's "implicit
  cache"): what they fetch is kept there.
- anything else is a plain directory (local, or UNC ``\\\\server\\share``; ``file://`` is
  dropped as LLDB drops it). A bare ``http(s)://`` URL is read as ``srv*URL``, as LLDB does (so
  ``--symbol-server https://host/symbols`` needs no ``srv*``).

HTTP(S) stores are asked only when the user opted in (``--symbol-server``, or ``--remote`` for
the environment's); this module only parses. On POSIX a Windows path (``C:\\x``, ``\\\\host\\share``)
names nothing on this machine and would otherwise become a relative file name in the current
directory: such parts are ignored, with why (a chain keeps its other parts).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MICROSOFT_SYMBOL_SERVER = "https://msdl.microsoft.com/download/symbols"
SYMSRV_DLL = "symsrv.dll"

_URL = re.compile(r"^https?://", re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class StoreChain:
    """One element of a symbol path, in search order.

    ``directories`` are looked in left to right, in the symsrv layout (``name/<index>/name``; and,
    for a plain directory element, by name too: ``flat``); then ``urls`` are asked, in order.
    ``cache`` is the downstream store a file fetched for this element is kept in: a directory, or
    None for the default store (the download store).
    """

    directories: tuple[Path, ...] = ()
    urls: tuple[str, ...] = ()
    cache: Path | None = None
    flat: bool = False


@dataclass(frozen=True)
class SymbolPath:
    """A parsed symbol path: its chains in order, and the parts ignored with why (``"part: why"``)."""

    chains: tuple[StoreChain, ...] = ()
    ignored: tuple[str, ...] = ()

    def directories(self) -> list[Path]:
        """Every local store of the path, in search order (each chain's downstream store first)."""
        found: list[Path] = []
        for chain in self.chains:
            found.extend(chain.directories)
        return list(dict.fromkeys(found))

    def servers(self) -> list[tuple[str, Path | None]]:
        """(URL, downstream store) of every HTTP(S) store, in search order."""
        return list(dict.fromkeys((url, chain.cache) for chain in self.chains for url in chain.urls))

    def __add__(self, other: SymbolPath) -> SymbolPath:
        return SymbolPath(self.chains + other.chains, self.ignored + other.ignored)


def parse_symbol_path(value: str | None, *, windows: bool | None = None) -> SymbolPath:
    """``value`` read as WinDbg reads ``_NT_SYMBOL_PATH`` (see the module docstring).

    ``windows`` says whether Windows paths name files here (default: whether this is Windows).
    """
    on_windows = os.name == "nt" if windows is None else windows
    chains: list[StoreChain] = []
    ignored: list[str] = []
    implicit_cache: Path | None = None  # the cache*DIR in effect; None: the default store
    for raw in (value or "").split(";"):
        element = raw.strip()
        if not element:
            continue
        parts = [part.strip() for part in element.split("*")]
        head = parts[0].lower() if len(parts) > 1 else ""
        if head == "cache":
            if len(parts) > 2:
                ignored.append(f"{element}: a cache element names one directory")
                continue
            implicit_cache = _directory(parts[1], on_windows, ignored) if parts[1] else None
            if implicit_cache is not None:
                # Looked in where it stands: every element to its right keeps what it fetches there.
                chains.append(StoreChain((implicit_cache,), (), implicit_cache))
        elif head == "symsrv" and parts[1].lower() != SYMSRV_DLL:
            ignored.append(f"{element}: another symbol server ({parts[1] or 'none'}), not symsrv's protocol")
        elif head in ("srv", "symsrv"):
            chains.append(_chain(parts[1 if head == "srv" else 2 :], implicit_cache, on_windows, ignored))
        elif _URL.match(element):
            chains.append(_chain([element], implicit_cache, on_windows, ignored))
        else:
            directory = _directory(element, on_windows, ignored)
            if directory is not None:
                chains.append(StoreChain((directory,), (), implicit_cache, flat=True))
    return SymbolPath(tuple(chain for chain in chains if chain.directories or chain.urls), tuple(ignored))


def symbol_path_from_environment(environ: Mapping[str, str] | None = None) -> SymbolPath:
    """``_NT_SYMBOL_PATH`` then ``_NT_ALT_SYMBOL_PATH``, as dbghelp and LLDB read them."""
    env = os.environ if environ is None else environ
    return parse_symbol_path(env.get("_NT_SYMBOL_PATH")) + parse_symbol_path(env.get("_NT_ALT_SYMBOL_PATH"))


def _chain(parts: list[str], implicit_cache: Path | None, on_windows: bool, ignored: list[str]) -> StoreChain:
    """A ``srv*`` chain of ``parts`` (the parts after ``srv*`` or ``symsrv*symsrv.dll*``, trimmed)."""
    if not any(parts):
        # ``srv*``: WinDbg's .symfix path, the default store then Microsoft's public server.
        return StoreChain((), (MICROSOFT_SYMBOL_SERVER,), implicit_cache)
    cache = implicit_cache
    directories: list[Path] = []
    urls: list[str] = []
    for index, part in enumerate(parts):
        if _URL.match(part):
            urls.append(part.rstrip("/"))
            continue
        # An empty part is the default store: the download store, looked in through the fetcher.
        directory = _directory(part, on_windows, ignored) if part else None
        if index == 0 and len(parts) > 1 and (directory is not None or not part):
            cache = directory  # the bottom-most store of a chain is its downstream store
        if directory is not None:
            directories.append(directory)
    return StoreChain(tuple(dict.fromkeys(directories)), tuple(dict.fromkeys(urls)), cache)


def _directory(part: str, on_windows: bool, ignored: list[str]) -> Path | None:
    """``part`` as a directory of this machine; None (and why, in ``ignored``) when it names none."""
    text = part[7:] if part[:7].lower() == "file://" else part
    if not text or "\0" in text:
        return None
    if not on_windows and (_DRIVE.match(text) or text.startswith("\\\\")):
        ignored.append(f"{part}: a Windows path, not a directory on this system")
        return None
    return Path(text)

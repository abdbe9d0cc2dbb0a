"""Binaries by ID from the run's servers: the hook list :func:`find_module` asks when no binary on
disk is the mapping's (symbolize/discovery/modules.py).

A :class:`BinarySource` fetches the binary a mapping names by its file name and ID text: the
debuginfod one here (``/buildid/<hex>/executable``, else ``/debuginfo``, which keeps the
program headers and stands in for a binary as a separate debug file does), the symbol servers'
for PE and Mach-O (``name.exe/<TIMESTAMP><SIZE>/name.exe``, registered by
symbolize/remote/symsrv.py). Each source says nothing when the ID is not of its kind, and asks
only through the loader's :class:`~symbolize.remote.run.RemoteRun`, which keeps what the servers
missed under the mapping's file name; the file a source returns is verified again by
:func:`find_module`, by ID, like any candidate on disk. Nothing here imports the network's
modules until a run asks for a server.

Registering one::

    from symbolize.discovery.binary_sources import register_binary_source

    class SymbolServerBinaries:
        def fetch(self, filename: str, wanted: str, loader: FileLoader) -> Path | None:
            ...  # parse ``wanted`` as a PE code ID; loader.remote.fetch(filename, key, ...)

    register_binary_source(SymbolServerBinaries())
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from symbolize.discovery.paths import base_name
from symbolize.discovery.registry import FileLoader, load_locators
from symbolize.formats.types import DebugId, DebugIdKind

if TYPE_CHECKING:
    from symbolize.remote.debuginfod import Artifact


class BinarySource(Protocol):
    """Fetches the binary of a mapping by ID from the run's servers."""

    def fetch(self, filename: str, wanted: str, loader: FileLoader) -> Path | None:
        """The binary the mapping ``filename`` with ID text ``wanted`` names, fetched (or found in a
        download cache) through ``loader.remote``; None when ``wanted`` is not this source's kind
        of ID or no server has it (the miss kept under ``filename``)."""
        ...


_SOURCES: list[BinarySource] = []


def register_binary_source(source: BinarySource) -> BinarySource:
    """Have :func:`find_module` ask ``source`` too (after those registered before it)."""
    _SOURCES.append(source)
    return source


def fetched_binaries(filename: str, wanted: str, loader: FileLoader) -> Iterator[Path]:
    """Each registered source's binary for the mapping, in order; nothing unless the run asks servers."""
    if loader.remote is None:
        return
    load_locators()  # the locators' modules register their binary sources (a PDB's symbol stores)
    for source in _SOURCES:
        found = source.fetch(filename, wanted, loader)
        if found is not None:
            yield found


class DebuginfodBinaries:
    """A binary by GNU build ID from debuginfod: ``executable``, else ``debuginfo`` as its stand-in."""

    def fetch(self, filename: str, wanted: str, loader: FileLoader) -> Path | None:
        remote = loader.remote
        debug_id = DebugId.parse(wanted, DebugIdKind.GNU_BUILD_ID)
        if remote is None or debug_id is None:
            return None
        from symbolize.remote.debuginfod import fetch_artifact  # the network's modules, only when asked

        name = base_name(filename) or filename
        artifacts: tuple[Artifact, ...] = ("executable", "debuginfo")
        for artifact in artifacts:
            found = fetch_artifact(remote, debug_id, artifact, name=name, owner=filename)
            if found is not None:
                return found[0]
        return None


register_binary_source(DebuginfodBinaries())

"""The PDB locator: the file a PE image's CodeView RSDS record names, checked by GUID and DBI age.

Search order (the debuggers' and llvm-symbolizer's places):

- an explicit ``--binary`` argument with the PDB's base name (compared ignoring case);
- the recorded path as is, when it lies under a search path or debug directory (a PDB path is
  the build machine's: followed only where the user said to look);
- the base name of the recorded path (a Windows path: ``C:\\build\\app.pdb`` -> ``app.pdb``)
  beside the image, then in each ``--search-path`` directory, matched ignoring case;
- the base name in each plain directory of ``_NT_SYMBOL_PATH`` (and ``_NT_ALT_SYMBOL_PATH``),
  as dbghelp looks: ``DIR/symbols/<ext>``, ``DIR/<ext>``, ``DIR`` (``<ext>`` the image's, ``dll``);
- symbol stores in the symsrv layout, ``<root>/<name>/<GUID><age>/<name>`` (GUID upper- or
  lower-case, age in hex), or ``<root>/<first two letters of name>/<name>/<GUID><age>/<name>`` in
  a two-tier store (one with an ``index2.txt`` at its root), and the file a ``file.ptr`` there
  points to when it lies under a directory named here, under every search path, every debug
  directory, and the local stores of the symbol path (symbolize/remote/symbol_path.py: its
  ``srv*`` chains' directories, ``cache*<dir>``, plain directories; Windows paths name nothing on
  POSIX), and of ``--symbol-server``;
- then, when the run asks symbol servers (``--symbol-server``, ``--remote`` for the
  environment's, ``--offline`` for the caches alone), the PDB from the download caches or the
  HTTP stores, raced (symbolize/remote/symsrv.py): kept only when its GUID and age are the
  image's, and only for an image without DWARF of its own.

The symbol stores also give a mapping's binary by ID (:class:`SymbolStoreBinaries`, registered
with symbolize/discovery/binary_sources.py): a PE image by its code ID, a Mach-O binary by its
UUID.

The file found must be a PDB whose info-stream GUID and DBI age are the RSDS record's; another
is refused with both IDs in the reason (llvm-symbolizer uses any PDB it finds unchecked).

With an index directory, a candidate's identity (GUID, DBI age, machine) is read from a few of
its blocks first (formats/pdb/deferred.py): when a persistent index answers for that identity at
the image's base, the PDB stands in by that identity alone and is never read (a warm lookup);
otherwise it is opened whole, as without an index.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from symbolize.discovery.binary_sources import register_binary_source
from symbolize.discovery.paths import DirectoryListings, base_name, is_file_name, lies_under, normalized_dir
from symbolize.discovery.registry import (
    Candidate,
    FileLoader,
    LocatorDefaults,
    LookupContext,
    debug_id_refusal,
    register_locator,
)
from symbolize.formats.types import DebugHint, DebugId, HintKind, ObjectFile

if TYPE_CHECKING:
    from symbolize.remote.symsrv_layout import SymbolStoreKey


def symbol_path_directories(value: str | None) -> list[Path]:
    """The local directories of an ``_NT_SYMBOL_PATH`` value, in order (servers left out): what
    :func:`symbolize.remote.symbol_path.parse_symbol_path` reads in it."""
    from symbolize.remote.symbol_path import parse_symbol_path

    return parse_symbol_path(value).directories()


class PdbLocator(LocatorDefaults):
    """Follows a ``HintKind.PDB`` hint (the RSDS record's path, GUID and age)."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        name = base_name(hint.name)
        if not is_file_name(name):
            return
        options = context.options
        wanted = name.casefold()
        for path in options.binaries:
            if path.name.casefold() == wanted:
                yield Candidate(path, None)
        roots = [*options.search_paths, *options.debug_dirs]
        if hint.name.startswith("/"):
            recorded = Path(hint.name)
            for root in roots:
                if lies_under(recorded, root):
                    yield Candidate(recorded, root)
                    break
        image_dir = normalized_dir(context.image_path)
        for directory in (image_dir, *options.search_paths):
            yield from _named_in(directory, name, context.loader.listings)
        yield from _symbol_path_candidates(hint, name, context)

    def load(self, candidate: Candidate, context: LookupContext) -> ObjectFile:
        """The PDB at ``candidate`` by its identity alone when an index answers for it, else opened."""
        loader = context.loader
        if context.image_load_base is not None:
            deferred = loader.open_indexed_pdb(candidate.path, context.arch, context.image_load_base)
            if deferred is not None:
                return deferred
        return loader.open(candidate.path, image_path=context.image_path, arch=context.arch)

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        if found.format != "pdb":
            return f"not a PDB ({found.format})"
        return debug_id_refusal(hint.debug_id, found.debug_id, "the image's RSDS record")


def _symbol_path_candidates(hint: DebugHint, name: str, context: LookupContext) -> Iterator[Candidate]:
    """The PDB ``name`` in the symbol path's plain directories (by name, as dbghelp looks:
    ``DIR/symbols/<ext>``, ``DIR/<ext>``, ``DIR``, ``<ext>`` the image's), then by its key in every
    local store, then from the download caches and the symbol servers."""
    # symbolize.remote (the transfer's modules) is imported once a PDB is looked for by its ID.
    from symbolize.remote.symbol_path import symbol_path_from_environment
    from symbolize.remote.symsrv_layout import configured_symbol_path, local_store_candidates, pdb_key

    key = pdb_key(name, hint.debug_id)
    if key is None or hint.debug_id is None:
        return
    options = context.options
    listings = context.loader.listings
    symbol_path = symbol_path_from_environment() + configured_symbol_path(options.remote)
    ext = context.image_path.suffix[1:].lower()
    subdirectories = [Path("symbols", ext), Path(ext)] if is_file_name(ext) else []
    for chain in symbol_path.chains:
        if not chain.flat:
            continue
        for directory in chain.directories:
            for subdirectory in subdirectories:
                yield from _named_in(directory / subdirectory, name, listings)
            yield from _named_in(directory, name, listings)
    stores = [*options.search_paths, *options.debug_dirs, *symbol_path.directories()]
    yield from local_store_candidates(stores, key, context.loader, stores)
    yield from _fetched(key, hint.debug_id, context, stores)


def _fetched(
    key: SymbolStoreKey, debug_id: DebugId, context: LookupContext, stores: list[Path]
) -> Iterator[Candidate]:
    """The PDB from the download caches, the compressed forms in the local ``stores`` or the run's
    symbol servers, after every local candidate."""
    remote = context.loader.remote
    if remote is None or not context.ask_servers:
        return
    from symbolize.remote.symsrv import LocalStores, fetch_from_symbol_servers, loader_reader
    from symbolize.remote.verifiers import pdb_verifier

    what = f"{key.name} ({key.index})"
    local = LocalStores(stores, loader_reader(context.loader))
    found = fetch_from_symbol_servers(remote, str(context.image_path), key, what, pdb_verifier(debug_id), local)
    if found is not None:
        yield Candidate(found, found.parents[2])  # the tier's root: <root>/<name>/<index>/<name>


class SymbolStoreBinaries:
    """A mapping's binary from the symbol stores by its ID (a :class:`BinarySource`): a PE image by
    its code ID, a Mach-O binary by its UUID, an ELF one by its build ID (symbolize/remote/symsrv.py's
    :func:`fetch_binary`)."""

    def fetch(self, filename: str, wanted: str, loader: FileLoader) -> Path | None:
        remote = loader.remote
        if remote is None:
            return None
        from symbolize.remote.symsrv import fetch_binary

        return fetch_binary(remote, filename, wanted, loader)


def _named_in(directory: Path, name: str, listings: DirectoryListings) -> Iterator[Candidate]:
    """``directory/name``, then the entries of ``directory`` whose name matches ignoring case."""
    yield Candidate(directory / name, directory)
    for match in listings.matching(directory, name):
        if match != name:
            yield Candidate(directory / match, directory)


register_locator(HintKind.PDB, PdbLocator())
register_binary_source(SymbolStoreBinaries())

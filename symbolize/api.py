"""The library API: name addresses of a binary, symbolize a pprof profile.

Importable without typer. Frame lists are innermost first, everywhere.
Object addresses (``vaddrs``) are the addresses the object file itself uses,
what ``llvm-symbolizer --obj`` takes.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from symbolize.demangle import DemangleMode
from symbolize.discovery import SearchOptions
from symbolize.discovery import open_module as discovery_open_module
from symbolize.errors import MissingDebugInfoError, NotFoundError
from symbolize.formats.types import Frame
from symbolize.loader import Loader
from symbolize.module import Module, Unknown
from symbolize.shaping import FrameShaper

if TYPE_CHECKING:
    from symbolize.answer_text import AnswerText, PlainStyle

    # Imported where used: looking addresses up should not pay for protobuf.
    from symbolize.pprof import Profile
    from symbolize.progress import ProgressReport
    from symbolize.remote.options import RemoteOptions
    from symbolize.remote.progress import DownloadProgress
    from symbolize.rewrite import RewriteOptions
    from symbolize.stamp import StampReport
    from symbolize.summary import Summary

__all__ = [
    "build_indexes",
    "discovery_options",
    "index_in_background",
    "lookup",
    "lookup_batches",
    "lookup_text_batches",
    "open_module",
    "remote_options",
    "stamp_profile",
    "symbolize_file",
    "symbolize_profile",
]

PathLike = str | Path


def discovery_options(
    *,
    binaries: Iterable[PathLike] = (),
    search_paths: Iterable[PathLike] = (),
    debug_dirs: Iterable[PathLike] | None = None,
    cache_dir: PathLike | None = None,
    use_cache: bool = True,
    remote: RemoteOptions | None = None,
) -> SearchOptions:
    """Where to find binaries, debug files and persistent indexes.

    ``debug_dirs=None`` keeps the default (``/usr/lib/debug``). Indexes are read
    from ``cache_dir`` (default: :func:`symbolize.cache.default_cache_dir`)
    unless ``use_cache`` is False; ``symbolize index`` builds them. A binary that is
    not a file, or a search path or debug directory that is not a directory, raises
    MissingDebugInfoError naming it (NotFoundError when it does not exist): a mistyped path
    would otherwise only leave addresses unnamed. ``remote`` names the servers and download caches
    to ask for files not on disk (:func:`remote_options`); None, the default, asks none.
    """
    arguments: dict[str, Any] = {
        "binaries": tuple(_existing(path, "binary", directory=False) for path in binaries),
        "search_paths": tuple(_existing(path, "search path", directory=True) for path in search_paths),
    }
    if debug_dirs is not None:
        arguments["debug_dirs"] = tuple(_existing(path, "debug directory", directory=True) for path in debug_dirs)
    index_dir = None
    if use_cache:  # the cache's modules only for a run that has one
        from symbolize.cache import default_cache_dir

        index_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return SearchOptions(**arguments, index_dir=index_dir, remote=remote)


def remote_options(
    *,
    debuginfod_urls: Iterable[str] = (),
    symbol_servers: Iterable[str] = (),
    from_environment: bool = False,
    offline: bool = False,
    cache_dir: PathLike | None = None,
) -> RemoteOptions | None:
    """The servers and download caches a run may ask for debug files and binaries not on disk;
    None when it asks none (nothing goes to the network unless asked).

    ``debuginfod_urls``: debuginfod servers (raced; ``--debuginfod``). ``symbol_servers``: symbol
    path entries (``srv*CACHE*URL``, a directory; ``--symbol-server``). ``from_environment``: also
    the servers ``DEBUGINFOD_URLS`` and ``_NT_SYMBOL_PATH`` name (``--remote``). ``offline``: only
    what the download caches hold, no request (``--offline``). ``DEBUGINFOD_TIMEOUT``,
    ``_MAXTIME`` and ``_MAXSIZE`` set the stall timeout, the total timeout and the size cap in
    any case. Downloads are stored under ``cache_dir/downloads`` (default: the per-user cache's).
    A debuginfod URL that is not http(s) with a host, and a symbol server entry that names nothing
    on this system (another symbol server DLL, a Windows path elsewhere, a URL that is none),
    raise SymbolizeError naming it.
    """
    debuginfod_urls, symbol_servers = tuple(debuginfod_urls), tuple(symbol_servers)
    if not (debuginfod_urls or symbol_servers or from_environment or offline):
        return None  # before the network's modules are imported: a run that asks nothing pays nothing
    from symbolize.remote.options import download_store_root, server_url
    from symbolize.remote.options import from_environment as read_environment

    environment = read_environment()
    urls = debuginfod_urls + (environment.debuginfod_urls if from_environment else ())
    servers = symbol_servers + (environment.symbol_servers if from_environment else ())
    from symbolize.remote.symbol_path import parse_symbol_path

    # An entry the user wrote that names nothing here is said, not skipped (the environment's are
    # skipped, as WinDbg skips them).
    written = parse_symbol_path(";".join(symbol_servers))
    if written.ignored:
        from symbolize.errors import SymbolizeError

        raise SymbolizeError(f"symbol server {written.ignored[0]}")
    for url, _ in written.servers():
        server_url(url)
    if not (urls or servers or offline):
        return None
    from dataclasses import replace  # here: a run that asks no server never imports dataclasses for it

    return replace(
        environment,
        debuginfod_urls=tuple(dict.fromkeys(server_url(url) for url in urls)),
        symbol_servers=tuple(dict.fromkeys(servers)),
        offline=offline,
        cache_dir=download_store_root(Path(cache_dir) if cache_dir is not None else None),
    )


class Session:
    """What every call of this API is asked besides its inputs, taken once: where to look
    (:func:`discovery_options`), how to show frames, whether to index in the background. It
    opens a run's :class:`~symbolize.loader.Loader` and ends the run (:meth:`finish`).

    ``keep_loader`` keeps one loader open across runs, closed by :meth:`close`: a batch worker
    (symbolize/batch/) rewrites profile after profile of the same binaries, and the files and
    indexes the first opened serve the rest. ``build_missing_indexes`` builds a missing index
    before answering from it (instead of ``background_index``'s detached builder afterwards).
    ``process_ends``: the caller's process exits right after the run without tearing down
    (symbolize/cli/entry.py), so :meth:`finish` closes nothing; the library's callers leave it off.
    """

    def __init__(
        self,
        *,
        binaries: Iterable[PathLike] = (),
        search_paths: Iterable[PathLike] = (),
        debug_dirs: Iterable[PathLike] | None = None,
        cache_dir: PathLike | None = None,
        use_cache: bool = True,
        background_index: bool = False,
        demangle: DemangleMode = "full",
        inlines: bool = True,
        remote: RemoteOptions | None = None,
        download_progress: DownloadProgress | None = None,
        keep_loader: bool = False,
        build_missing_indexes: bool = False,
        process_ends: bool = False,
    ) -> None:
        self.options = discovery_options(
            binaries=binaries, search_paths=search_paths, debug_dirs=debug_dirs, cache_dir=cache_dir,
            use_cache=use_cache, remote=remote,
        )  # fmt: skip
        if build_missing_indexes:
            self.options = self.options._replace(build_missing_indexes=True)
        self.keep_loader = keep_loader
        self._kept: Loader | None = None
        self.background_index = background_index
        self.demangle = demangle
        self.inlines = inlines
        self.download_progress = download_progress
        # The process ends with the run (the console script's lookup, symbolize/cli/entry.py):
        # finish() leaves the loader's files and what it decoded for the exit to drop, as
        # llvm-symbolizer's -disable-free does (freeing a cold run's decoded units cost 3 % of it).
        self.process_ends = process_ends
        # What the runs ended so far fetched, and from where (the servers' report lines).
        self.download_report: list[str] = []

    def loader(self) -> Loader:
        """A run's loader, with the session's options and download progress (the kept one, with
        ``keep_loader``)."""
        if self._kept is not None:
            return self._kept
        loader = Loader(self.options, download_progress=self.download_progress)
        if self.keep_loader:
            self._kept = loader
        return loader

    def close(self) -> None:
        """Close the loader kept open across runs (``keep_loader``), if any."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.close()

    def shaper(self) -> FrameShaper:
        return FrameShaper(self.demangle, self.inlines)

    def open_module(self, path: PathLike, arch: str | None) -> tuple[Module, Loader]:
        """The module at ``path`` (``FILE:ARCH`` read as in :func:`path_and_arch`), with the loader
        the caller ends the run with (:meth:`finish`; closed here when opening fails)."""
        loader = self.loader()
        try:
            return _open_with(loader, path, arch), loader
        except BaseException:
            loader.close()
            raise

    def finish(self, loader: Loader, answered: bool = True) -> None:
        """End the run of ``loader``: the indexes it found missing built in the background when
        asked (and when the run ``answered``), then every file closed."""
        try:
            if loader.remote is not None:
                self.download_report += loader.remote.report()
            if answered and self.background_index:
                index_in_background(loader)
        finally:
            if loader is not self._kept and not self.process_ends:
                loader.close()


def _existing(path: PathLike, role: str, *, directory: bool) -> Path:
    """``path``, checked to be a directory (``directory``) or a file; the error names ``role``."""
    path = Path(path)
    if not path.exists():
        raise NotFoundError(f"{role} not found", path)
    if directory and not path.is_dir():
        raise MissingDebugInfoError(f"{role} is not a directory", path)
    if not directory and path.is_dir():
        raise MissingDebugInfoError(f"{role} is a directory, not a file", path)
    return path


def open_module(
    path: PathLike,
    *,
    search_paths: Iterable[PathLike] = (),
    debug_dirs: Iterable[PathLike] | None = None,
    cache_dir: PathLike | None = None,
    use_cache: bool = True,
    arch: str | None = None,
    remote: RemoteOptions | None = None,
) -> Module:
    """Open a binary with its debug file (found by build ID, debuglink, dSYM, search paths).

    ``arch`` picks the slice of a universal Mach-O file (also written ``FILE:ARCH``, as
    llvm-symbolizer takes it). Raises SymbolizeError when the file cannot be read (NotFoundError
    when it does not exist). ``remote`` (:func:`remote_options`) lets servers supply the debug files
    not on disk. Close the module (``module.close()``, or ``with open_module(...) as
    module:``) to release its files at once rather than when it is collected.
    """
    session = Session(
        search_paths=search_paths, debug_dirs=debug_dirs, cache_dir=cache_dir, use_cache=use_cache, remote=remote
    )
    module, loader = session.open_module(path, arch)
    module.close_with(loader.close)
    return module


def _open_with(loader: Loader, path: PathLike, arch: str | None) -> Module:
    """The module at ``path`` (``FILE:ARCH`` read as in :func:`path_and_arch`), opened by ``loader``."""
    binary, slice_arch = path_and_arch(path, arch)
    return discovery_open_module(binary, loader, arch=slice_arch)


def path_and_arch(path: PathLike, arch: str | None = None) -> tuple[Path, str | None]:
    """``path`` and the slice it names: ``arch``, or the ``:ARCH`` suffix llvm-symbolizer accepts
    (``app:arm64``) when no file has the whole name and the suffix is a Mach-O arch name."""
    text = str(path)
    head, colon, tail = text.rpartition(":")
    if arch is None and colon and tail in _macho_arch_names() and not Path(text).exists():
        return Path(head), tail
    return Path(text), arch


def _macho_arch_names() -> frozenset[str]:
    from symbolize.formats.macho.slices import ARCH_NAMES  # the Mach-O reader, only for a FILE:ARCH

    return ARCH_NAMES


def lookup(
    path: PathLike,
    vaddrs: Sequence[int],
    *,
    demangle: DemangleMode = "full",
    inlines: bool = True,
    search_paths: Iterable[PathLike] = (),
    debug_dirs: Iterable[PathLike] | None = None,
    cache_dir: PathLike | None = None,
    use_cache: bool = True,
    background_index: bool = False,
    arch: str | None = None,
    remote: RemoteOptions | None = None,
) -> list[list[Frame] | Unknown]:
    """Frames at each object address of the binary at ``path``: one result per address, in order.

    Each result is a list of frames, innermost first, with names demangled as
    ``demangle`` asks, or ``Unknown(reason)``. With ``inlines=False`` each list
    holds one frame, as ``llvm-symbolizer --no-inlines`` prints it: the
    outermost function's name with the innermost frame's file, line and column.
    ``background_index`` starts a detached process that builds the indexes
    found missing, for later calls (see :func:`index_in_background`). ``arch`` picks the
    slice of a universal Mach-O file, and ``remote`` the servers to ask, as in :func:`open_module`.
    """
    batches = lookup_batches(
        path, [vaddrs], demangle=demangle, inlines=inlines, search_paths=search_paths, debug_dirs=debug_dirs,
        cache_dir=cache_dir, use_cache=use_cache, background_index=background_index, arch=arch, remote=remote,
    )  # fmt: skip
    (results,) = batches  # exhausting the iterator closes the cache
    return results


def lookup_batches(
    path: PathLike,
    batches: Iterable[Sequence[int]],
    *,
    demangle: DemangleMode = "full",
    inlines: bool = True,
    search_paths: Iterable[PathLike] = (),
    debug_dirs: Iterable[PathLike] | None = None,
    cache_dir: PathLike | None = None,
    use_cache: bool = True,
    background_index: bool = False,
    arch: str | None = None,
    remote: RemoteOptions | None = None,
) -> Iterator[list[list[Frame] | Unknown]]:
    """:func:`lookup` of each batch of ``batches`` in turn, the binary opened once.

    The binary is opened now (its errors raised here); each batch is looked up only when
    the iterator is asked for its results, so a batch read from a pipe is answered before
    the next one is read. ``background_index`` starts when the batches run out.
    """
    session = Session(
        search_paths=search_paths, debug_dirs=debug_dirs, cache_dir=cache_dir, use_cache=use_cache,
        background_index=background_index, demangle=demangle, inlines=inlines, remote=remote,
    )  # fmt: skip
    module, loader = session.open_module(path, arch)
    return _looked_up_batches(session, module, loader, batches)


def lookup_text_batches(
    path: PathLike,
    batches: Iterable[Sequence[str]],
    *,
    as_json: bool = False,
    style: PlainStyle | None = None,
    demangle: DemangleMode = "full",
    inlines: bool = True,
    search_paths: Iterable[PathLike] = (),
    debug_dirs: Iterable[PathLike] | None = None,
    cache_dir: PathLike | None = None,
    use_cache: bool = True,
    background_index: bool = False,
    arch: str | None = None,
    remote: RemoteOptions | None = None,
) -> Iterator[str]:
    """What ``symbolize lookup`` prints for each batch of input lines (see symbolize/answer_text.py):
    JSON lines (``as_json``) or llvm-symbolizer's text, one answer per line, a non-address echoed;
    ``style`` asks for another of llvm-symbolizer's plain styles (GNU, addresses, pretty).

    Opens the binary now and answers each batch when asked, as :func:`lookup_batches` does.
    """
    from symbolize.answer_text import AnswerText

    session = Session(
        search_paths=search_paths, debug_dirs=debug_dirs, cache_dir=cache_dir, use_cache=use_cache,
        background_index=background_index, demangle=demangle, inlines=inlines, remote=remote,
    )  # fmt: skip
    module, loader = session.open_module(path, arch)
    return _answered_text_batches(session, module, loader, AnswerText(session.shaper(), as_json, style), batches)


def _answered_text_batches(
    session: Session, module: Module, loader: Loader, text: AnswerText, batches: Iterable[Sequence[str]]
) -> Iterator[str]:
    answered = False
    try:
        for texts in batches:
            yield text.render(module, texts)
        answered = True
    finally:
        session.finish(loader, answered)


def _looked_up_batches(
    session: Session, module: Module, loader: Loader, batches: Iterable[Sequence[int]]
) -> Iterator[list[list[Frame] | Unknown]]:
    shaper = session.shaper()
    answered = False
    try:
        for vaddrs in batches:
            yield [shaper.shape(result) for result in module.lookup(vaddrs)]
        answered = True
    finally:
        session.finish(loader, answered)


def symbolize_profile(
    profile_or_path: Profile | PathLike,
    *,
    binaries: Iterable[PathLike] = (),
    search_paths: Iterable[PathLike] = (),
    debug_dirs: Iterable[PathLike] | None = None,
    demangle: DemangleMode = "full",
    adjust_return_addresses: bool = True,
    cache_dir: PathLike | None = None,
    use_cache: bool = True,
    background_index: bool = False,
    drop_frames: str | None = None,
    keep_hashes: bool = False,
    progress: ProgressReport | None = None,
    remote: RemoteOptions | None = None,
    download_progress: DownloadProgress | None = None,
    session: Session | None = None,
) -> tuple[Profile, Summary]:
    """Name the bare addresses of a profile; returns ``(profile, summary)``.

    A Profile message is rewritten in place (and returned); a path is read
    first (gzipped or not) and the rewritten message returned, the file left
    alone. ``binaries`` are candidate files for the profile's mappings (matched
    by build ID or name). Raises MalformedInputError for an unreadable profile;
    mappings whose files are missing are reported in the summary. ``drop_frames``
    (a regex) becomes the profile's ``drop_frames`` and is skipped by the
    summary's top functions; an invalid one raises ``re.error``. Without it a heap profile gets
    its allocator's frames (:data:`symbolize.drop_frames.HEAP_DROP_FRAMES`), unless it has its own;
    ``""`` adds none. Rust names lose their hash unless ``keep_hashes``
    (:func:`symbolize.demangle.profile_name`).
    ``progress`` hears how many locations were named so far (symbolize/progress.py; the command
    line draws it on a terminal). ``remote`` (:func:`remote_options`) names the servers and download
    caches to ask for the binaries and debug files not on disk, each verified by the mapping's ID;
    ``download_progress`` hears each download (symbolize/remote/progress.py). The summary says per
    mapping what the servers did not have (``missed``) and, in ``downloads``, what was fetched.
    ``session``, when given, is the run's :class:`Session` (a batch worker's, its loader kept open
    across profiles) and stands for the discovery arguments (``binaries`` to ``download_progress``).
    """
    from symbolize.pprof import Profile, read_profile
    from symbolize.rewrite import symbolize_profile as rewrite_profile

    if isinstance(profile_or_path, Profile):
        profile = profile_or_path
    else:
        profile, _ = read_profile(profile_or_path)
    summary = _rewritten(
        lambda options: rewrite_profile(profile, options),
        binaries=binaries, search_paths=search_paths, debug_dirs=debug_dirs, demangle=demangle,
        adjust_return_addresses=adjust_return_addresses, cache_dir=cache_dir, use_cache=use_cache,
        background_index=background_index, drop_frames=drop_frames, keep_hashes=keep_hashes, progress=progress,
        remote=remote, download_progress=download_progress, session=session,
    )  # fmt: skip
    return profile, summary


def _rewritten(
    rewrite: Callable[[RewriteOptions], Summary],
    *,
    binaries: Iterable[PathLike],
    search_paths: Iterable[PathLike],
    debug_dirs: Iterable[PathLike] | None,
    demangle: DemangleMode,
    adjust_return_addresses: bool,
    cache_dir: PathLike | None,
    use_cache: bool,
    background_index: bool,
    drop_frames: str | None,
    keep_hashes: bool,
    progress: ProgressReport | None,
    remote: RemoteOptions | None,
    download_progress: DownloadProgress | None,
    session: Session | None = None,
) -> Summary:
    """``rewrite`` run with the options :func:`symbolize_profile` takes (one session, one loader:
    ``session``'s when given)."""
    from symbolize.progress import ProgressReport
    from symbolize.rewrite import RewriteOptions

    if session is None:
        session = Session(
            binaries=binaries, search_paths=search_paths, debug_dirs=debug_dirs, cache_dir=cache_dir,
            use_cache=use_cache, background_index=background_index, demangle=demangle, remote=remote,
            download_progress=download_progress,
        )  # fmt: skip
    if drop_frames is not None:
        re.compile(drop_frames)  # refuse a bad pattern before any work
    loader = session.loader()
    options = RewriteOptions(
        discovery=loader,
        demangle=demangle,
        adjust_return_addresses=adjust_return_addresses,
        drop_frames=drop_frames,
        keep_hashes=keep_hashes,
        progress=progress if progress is not None else ProgressReport(),
    )
    answered = False
    try:
        summary = rewrite(options)
        answered = True
        if loader.remote is not None:
            summary.downloads = loader.remote.report()
        return summary
    finally:
        session.finish(loader, answered)


def symbolize_file(
    in_path: PathLike | BinaryIO,
    out_path: PathLike | BinaryIO,
    *,
    gzip: bool | None = None,
    binaries: Iterable[PathLike] = (),
    search_paths: Iterable[PathLike] = (),
    debug_dirs: Iterable[PathLike] | None = None,
    demangle: DemangleMode = "full",
    adjust_return_addresses: bool = True,
    cache_dir: PathLike | None = None,
    use_cache: bool = True,
    background_index: bool = False,
    drop_frames: str | None = None,
    keep_hashes: bool = False,
    progress: ProgressReport | None = None,
    remote: RemoteOptions | None = None,
    download_progress: DownloadProgress | None = None,
    session: Session | None = None,
) -> Summary:
    """Read the profile at ``in_path``, symbolize it, write it atomically to ``out_path``.

    ``gzip=None`` compresses the output when ``out_path`` ends in ``.gz`` or the
    input was gzipped. Either may be a binary stream instead (the command line's ``-``): the
    input is read whole, named ``<stdin>`` in errors; the output gets the profile in one write,
    once the rewrite has succeeded, so a reader has a whole profile or nothing. ``drop_frames``,
    ``keep_hashes``, ``progress``, ``remote``, ``download_progress`` and ``session`` are
    :func:`symbolize_profile`'s.

    An OpenTelemetry profiles export (protobuf or OTLP JSON) is named as one too and written in
    its own encoding (symbolize/otlp/rewrite.py); the summary says per mapping whether its
    addresses were read as runtime or file-relative ones.
    """
    from symbolize.pprof import output_target, read_profile_bytes, serialize_profile, write_profile

    name = str(in_path) if isinstance(in_path, str | Path) else "<stdin>"
    data = read_profile_bytes(in_path) if isinstance(in_path, str | Path) else in_path.read()
    parsed = parse_profile_or_export(data, name)
    if isinstance(out_path, str | Path):
        output_target(out_path)  # an output that cannot be written is refused before the work
    if parsed is None:
        return _symbolize_otlp(
            data, name, out_path, gzip,
            binaries=binaries, search_paths=search_paths, debug_dirs=debug_dirs, demangle=demangle,
            adjust_return_addresses=adjust_return_addresses, cache_dir=cache_dir, use_cache=use_cache,
            background_index=background_index, drop_frames=drop_frames, keep_hashes=keep_hashes, progress=progress,
            remote=remote, download_progress=download_progress, session=session,
        )  # fmt: skip
    profile, was_gzipped = parsed
    _, summary = symbolize_profile(
        profile,
        binaries=binaries,
        search_paths=search_paths,
        debug_dirs=debug_dirs,
        demangle=demangle,
        adjust_return_addresses=adjust_return_addresses,
        cache_dir=cache_dir,
        use_cache=use_cache,
        background_index=background_index,
        drop_frames=drop_frames,
        keep_hashes=keep_hashes,
        progress=progress,
        remote=remote,
        download_progress=download_progress,
        session=session,
    )
    if not isinstance(out_path, str | Path):
        out_path.write(serialize_profile(profile, gzip=was_gzipped if gzip is None else gzip))
        out_path.flush()
        return summary
    if gzip is None:
        gzip = was_gzipped or str(out_path).endswith(".gz")
    write_profile(profile, out_path, gzip=gzip)
    return summary


def parse_profile_or_export(data: bytes, name: str) -> tuple[Profile, bool] | None:
    """``parse_profile(data, name)`` (the profile, whether it was gzipped), or None when ``data`` is
    an OpenTelemetry profiles export instead (symbolize/otlp/ is imported only then). A profile
    past a cap is refused as it is, never sniffed (that would parse what the cap refused)."""
    from symbolize.errors import InputLimitError, MalformedInputError
    from symbolize.pprof import parse_profile

    try:
        return parse_profile(data, name)
    except InputLimitError:
        raise
    except MalformedInputError:
        from symbolize.otlp.convert import looks_like_otlp

        if not looks_like_otlp(data, name):
            raise
        return None


def _symbolize_otlp(
    data: bytes, name: str, out_path: PathLike | BinaryIO, gzip: bool | None, **options: Any
) -> Summary:
    """:func:`symbolize_file` of an OTLP export: named in place, written in its encoding."""
    import gzip as gzip_module

    from symbolize.otlp.encoding import encode_profiles_data, read_profiles_data
    from symbolize.otlp.rewrite import symbolize_profiles_data
    from symbolize.pprof import write_atomically

    message, encoding, was_gzipped = read_profiles_data(data, name)
    summary = _rewritten(lambda rewrite: symbolize_profiles_data(message, rewrite, source=name), **options)
    if gzip is None:
        gzip = was_gzipped or (isinstance(out_path, str | Path) and str(out_path).endswith(".gz"))
    encoded = encode_profiles_data(message, encoding)
    if gzip:
        encoded = gzip_module.compress(encoded, compresslevel=6, mtime=0)
    if isinstance(out_path, str | Path):
        write_atomically(encoded, out_path)
    else:
        out_path.write(encoded)
        out_path.flush()
    return summary


def stamp_profile(
    profile_or_path: Profile | PathLike, *, binaries: Iterable[PathLike] = ()
) -> tuple[Profile, StampReport]:
    """Record in each mapping the build IDs of its file on this machine, read from the file's
    headers only (no debug info): what makes a profile symbolizable anywhere, verified, and
    fetchable from servers by ID. Returns ``(profile, report)``.

    Run it where the profile was made, right after the dump (symbolize/stamp.py). A Profile
    message is stamped in place; a path is read first and the stamped message returned, the file
    left alone. A mapping's file is the one in ``binaries`` with its base name (ignoring case),
    else the file at its recorded path. IDs go to ``Mapping.build_id`` as symbolize/mapping_ids.py
    spells them (a PE image: ``<GUID><AGE>,<TIMESTAMP><SIZEOFIMAGE>``); a mapping whose file is
    missing, unreadable or modified after the profile was taken keeps what it had, and the report
    counts it with the reason. Raises MalformedInputError for an unreadable profile.
    """
    from symbolize.pprof import Profile, read_profile
    from symbolize.stamp import PprofStampTarget, stamp

    if isinstance(profile_or_path, Profile):
        profile = profile_or_path
    else:
        profile, _ = read_profile(profile_or_path)
    given = tuple(_existing(path, "binary", directory=False) for path in binaries)
    return profile, stamp(PprofStampTarget(profile), binaries=given)


def index_in_background(loader: Loader) -> list[Path]:
    """Start a detached, low-priority build of the indexes ``loader`` found missing; returns the files.

    The call that found them has answered already, from the files themselves:
    building an index takes a full decode, much longer than a first batch of
    lookups. A builder that cannot be started is a RuntimeWarning, not an
    error: every answer stands without it.
    """
    missing = loader.missing_indexes()
    index_dir = loader.options.index_dir
    if not missing or index_dir is None:
        return []
    from symbolize.index.background import start_background_indexing

    try:
        return start_background_indexing(missing, index_dir)
    except OSError as error:
        warnings.warn(f"could not start building indexes in the background: {error}", RuntimeWarning, stacklevel=2)
        return []


def build_indexes(
    paths: Iterable[PathLike],
    *,
    search_paths: Iterable[PathLike] = (),
    debug_dirs: Iterable[PathLike] | None = None,
    cache_dir: PathLike | None = None,
    progress: ProgressReport | None = None,
) -> list[Path]:
    """Build the persistent index of each binary and of the debug files found for it.

    Returns the index files written or found. Later lookups and profile
    rewrites with the same ``cache_dir`` answer from them. ``progress`` hears which binary is
    being indexed and one step per binary done (symbolize/progress.py; the caller starts its stage).
    """
    from symbolize.cache import default_cache_dir
    from symbolize.index.indexed import IndexedObject
    from symbolize.progress import ProgressReport

    index_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    built: list[Path] = []
    searched = discovery_options(search_paths=search_paths, debug_dirs=debug_dirs, use_cache=False)
    options = searched._replace(index_dir=index_dir, build_missing_indexes=True)
    progress = progress if progress is not None else ProgressReport()
    for path in paths:
        progress.describe(f"indexing {Path(path).name}")
        with Loader(options) as loader:
            module = discovery_open_module(Path(path), loader)
            for source in [*module.debug_files, module.binary]:
                if isinstance(source, IndexedObject) and source.index.path not in built:
                    built.append(source.index.path)
        progress.advance()
    return built

"""Build missing indexes in a detached process, so that the next run against a file is fast.

A first lookup in a file without an index answers from the file itself (the
cold path); building the index then would make that first run several times
slower (a full decode: seconds to tens of seconds for large binaries). So the
command line, once it has answered, hands the files it found without an index
to a detached, low-priority ``python -m symbolize.index.background`` and exits;
the run after that answers from the index. Each file goes as an
:class:`~symbolize.index.job.IndexJob`: the builder opens it as the run did (the
slice of a universal file, the image a PDB was bound to, the search settings
its hints were followed with), so it builds the very index the run missed.

A marker file beside each index being built keeps two runs from starting two
builders for one file; a marker older than :data:`STALE_MARKER_SECONDS` is
taken to be left by a builder that died and is ignored. Index writes are
atomic (symbolize/index/store.py), so a builder killed halfway leaves no index
rather than half of one. A builder's failures, whatever they are, go to
``background.log`` in the cache directory (it has no terminal to print them
on), and a failure record keyed like the index (``.failed``) keeps later runs
from starting a builder for that file again: the same file, the same toolkit
would fail the same way. ``symbolize cache clear`` or an explicit ``symbolize
index`` removes the record.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from pathlib import Path

from symbolize.cache import ConsultedFiles, build_index, index_key, index_path, load_index
from symbolize.formats.errors import SymbolizeError
from symbolize.index.indexed import IndexableSource
from symbolize.index.job import IndexJob

STALE_MARKER_SECONDS = 3600.0
LOG_NAME = "background.log"


def marker_path(cache_dir: Path, source: IndexableSource) -> Path:
    return index_path(cache_dir, index_key(source)).with_suffix(".building")


def failure_path(cache_dir: Path, source: IndexableSource) -> Path:
    """Where a builder records that it could not index ``source`` (keyed like its index)."""
    return index_path(cache_dir, index_key(source)).with_suffix(".failed")


def start_background_indexing(
    sources: Iterable[IndexableSource | tuple[IndexableSource, IndexJob]], cache_dir: Path
) -> list[Path]:
    """Start one detached builder for those of ``sources`` that no builder is indexing and none
    failed to index; returns their paths.

    Each source comes with the job that opens it as it was opened, or alone (opened by its path).
    Raises OSError when the builder cannot be started (its markers are removed).
    """
    claimed: list[tuple[IndexJob, Path]] = []
    for item in sources:
        source, job = item if isinstance(item, tuple) else (item, IndexJob(item.path))
        if failure_path(cache_dir, source).exists():
            continue
        marker = marker_path(cache_dir, source)
        if _claim(marker):
            claimed.append((job, marker))
    if not claimed:
        return []
    # Absolute paths (to_json): the builder must not depend on a working directory that may go away.
    argv = [sys.executable, "-m", "symbolize.index.background", "--cache-dir", str(cache_dir.resolve())]
    for job, _ in claimed:
        argv += ["--job", job.to_json()]
    try:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            # Outlive this process and its terminal (POSIX: own session; Windows: detached, lower priority).
            start_new_session=sys.platform != "win32",
            creationflags=_windows_creation_flags(),
        )
    except OSError:
        for _, marker in claimed:
            marker.unlink(missing_ok=True)
        raise
    return [job.path for job, _ in claimed]


def _claim(marker: Path) -> bool:
    """Create ``marker`` unless a live builder holds it."""
    marker.parent.mkdir(parents=True, exist_ok=True)
    try:
        if time.time() - marker.stat().st_mtime > STALE_MARKER_SECONDS:
            marker.unlink(missing_ok=True)
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def _windows_creation_flags() -> int:
    if sys.platform != "win32":
        return 0
    names = ("DETACHED_PROCESS", "CREATE_NEW_PROCESS_GROUP", "BELOW_NORMAL_PRIORITY_CLASS")
    flags = 0
    for name in names:
        flags |= getattr(subprocess, name, 0)
    return flags


def build_missing(jobs: Sequence[IndexJob | Path], cache_dir: Path) -> int:
    """The builder's work: index each file that still has no index; returns how many failed.

    Every failure is contained to its file: logged, and recorded so that no later run starts a
    builder for it again. A bug (an exception that is no SymbolizeError) counts too: it would
    recur on every run.
    """
    failures = 0
    for item in jobs:
        job = item if isinstance(item, IndexJob) else IndexJob(item)
        with ExitStack() as opened_files:
            try:
                opened, consulted = _open(job, opened_files)
            except Exception as error:  # the builder has no caller to raise to
                failures += _log(cache_dir, f"{job.path}: {_describe(error)}")
                continue
            marker = marker_path(cache_dir, opened)
            try:
                existing = load_index(opened, cache_dir, consulted)
                if existing is None:
                    build_index(opened, cache_dir, consulted, job.image_path)
                else:
                    existing.index.close()
            except Exception as error:
                failures += _log(cache_dir, f"{job.path}: {_describe(error)}")
                _record_failure(failure_path(cache_dir, opened), _describe(error))
            finally:
                marker.unlink(missing_ok=True)
    return failures


def _open(job: IndexJob, opened_files: ExitStack) -> tuple[IndexableSource, ConsultedFiles]:
    """``job``'s file opened as the run opened it: its slice, its needs followed through the run's
    search settings, bound to its image, with the follower of its needs; everything opened is
    closed with ``opened_files``."""
    from symbolize.discovery.options import DEFAULT_DEBUG_DIRS, SearchOptions
    from symbolize.loader import Loader

    loader = Loader(
        SearchOptions(
            binaries=job.binaries,
            search_paths=job.search_paths,
            debug_dirs=DEFAULT_DEBUG_DIRS if job.debug_dirs is None else job.debug_dirs,
        )
    )
    opened_files.callback(loader.close)
    image = loader.open(job.bound_image, arch=job.image_arch) if job.bound_image is not None else None
    return loader.open_for_indexing(job.path, image_path=job.image_path, arch=job.arch, image=image)


def _describe(error: BaseException) -> str:
    return str(error) if isinstance(error, SymbolizeError | OSError) else f"{type(error).__name__}: {error}"


def _record_failure(path: Path, reason: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(reason + "\n", encoding="utf-8")
    except OSError:
        pass  # without the record the next run tries again: slower, never wrong


def _log(cache_dir: Path, message: str) -> int:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with (cache_dir / LOG_NAME).open("a", encoding="utf-8") as log:
            log.write(f"{stamp} index not built: {message}\n")
    except OSError:
        pass  # nowhere left to report to; the file keeps answering from the cold path
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symbolize.index.background", description=__doc__)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--job", action="append", default=[], help="an IndexJob as JSON (symbolize/index/job.py)")
    parser.add_argument("paths", type=Path, nargs="*", help="files opened by path alone")
    args = parser.parse_args(argv)
    if sys.platform != "win32":  # os.nice is POSIX's
        os.nice(10)  # an optimisation for later runs must not slow down what the user runs now
    jobs: list[IndexJob | Path] = [*args.paths]
    for text in args.job:
        try:
            jobs.append(IndexJob.from_json(text))
        except ValueError as error:
            _log(args.cache_dir, str(error))
    return 1 if build_missing(jobs, args.cache_dir) else 0


if __name__ == "__main__":
    sys.exit(main())

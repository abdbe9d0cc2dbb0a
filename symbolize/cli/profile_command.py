"""What ``profile`` does once its command line is read, by typer (symbolize/cli/app.py) or without it
(symbolize/cli/entry.py): the same calls of the API, output, one-line errors and exit codes.

Apart from symbolize/cli/commands.py (``lookup``, and what every command shares): the plain path
imports this module only for a ``profile`` command line, so a lookup does not build the request's
class (a NamedTuple of 20 fields) nor load the rest at start-up (1.9M instructions, 1.2 % of a warm
one-address lookup). Nothing here imports typer. The request's defaults are the declarations'
(symbolize/cli/options.py).
"""

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from symbolize.cli.commands import (
    STDIO_PATH,
    download_progress,
    echo,
    requested_remote,
    run_guarded,
    standard_output,
    use_index_store,
)
from symbolize.cli.exits import EXIT_UNNAMED_ABOVE, EXIT_UNVERIFIED
from symbolize.cli.options import PROFILE_OPTIONS, option

if TYPE_CHECKING:
    from symbolize.summary import GateFailure, Summary

# Names of profile files' extensions, kept after ``.symbolized`` in the default output name.
PROFILE_SUFFIXES = (".gz", ".pb", ".pprof", ".prof", ".proto")


class ProfileRequest(NamedTuple):
    """``profile``'s options, one field per declaration in PROFILE_OPTIONS, in its order."""

    in_path: Path
    out_path: Path | None = option(PROFILE_OPTIONS, "out_path").default
    binaries: Sequence[Path] | None = option(PROFILE_OPTIONS, "binaries").default
    search_paths: Sequence[Path] | None = option(PROFILE_OPTIONS, "search_paths").default
    debug_dirs: Sequence[Path] | None = option(PROFILE_OPTIONS, "debug_dirs").default
    demangle: str = option(PROFILE_OPTIONS, "demangle").default
    no_return_address_adjust: bool = option(PROFILE_OPTIONS, "no_return_address_adjust").default
    json_summary: bool = option(PROFILE_OPTIONS, "json_summary").default
    drop_frames: str | None = option(PROFILE_OPTIONS, "drop_frames").default
    cache_dir: Path | None = option(PROFILE_OPTIONS, "cache_dir").default
    no_cache: bool = option(PROFILE_OPTIONS, "no_cache").default
    background_index: bool = option(PROFILE_OPTIONS, "background_index").default
    index_store: str | None = option(PROFILE_OPTIONS, "index_store").default
    fail_unnamed_above: str | None = option(PROFILE_OPTIONS, "fail_unnamed_above").default
    require_verified: bool = option(PROFILE_OPTIONS, "require_verified").default
    keep_hashes: bool = option(PROFILE_OPTIONS, "keep_hashes").default
    debuginfod: Sequence[str] | None = option(PROFILE_OPTIONS, "debuginfod").default
    symbol_servers: Sequence[str] | None = option(PROFILE_OPTIONS, "symbol_servers").default
    remote: bool = option(PROFILE_OPTIONS, "remote").default
    offline: bool = option(PROFILE_OPTIONS, "offline").default

    @property
    def from_stdin(self) -> bool:
        return str(self.in_path) == STDIO_PATH

    @property
    def to_stdout(self) -> bool:
        """OUT ``-``, or no OUT for IN ``-``."""
        return str(self.out_path) == STDIO_PATH or (self.out_path is None and self.from_stdin)


def default_output_path(in_path: Path) -> Path:
    """``cpu.pb.gz`` -> ``cpu.symbolized.pb.gz``; ``cpu`` -> ``cpu.symbolized``.

    Known profile extensions (``.pb``, ``.pprof``, ``.prof``, ``.proto``, ``.gz``)
    at the end of the name stay at the end; ``.symbolized`` goes before them.
    """
    name = in_path.name
    suffix = ""
    stem = name
    while True:
        for known in PROFILE_SUFFIXES:
            if stem.endswith(known) and len(stem) > len(known):
                stem = stem[: -len(known)]
                suffix = known + suffix
                break
        else:
            break
    return in_path.with_name(f"{stem}.symbolized{suffix}")


def run_profile(request: ProfileRequest, *, debug: bool = False) -> int:
    """``profile``: the rewritten profile to OUT, the summary to stderr (or stdout as JSON); returns
    the exit code. ``-`` for IN or OUT is stdin or stdout: the output goes to stdout in one write
    after the rewrite succeeded, so whoever reads it gets a whole profile or nothing.

    The summary is printed outside the error boundary: a failure there is the program's, as
    symbolize/cli/app.py's main reports it (and click, for typer's commands).
    """
    from symbolize.api import symbolize_file
    from symbolize.progress import stderr_progress

    summaries: list[Summary] = []

    def rewrite() -> None:
        if request.json_summary:
            standard_output()  # refused before any work
        use_index_store(request.index_store)
        out_path: Path | BinaryIO
        if request.to_stdout:
            out_path = standard_output().buffer  # refused before any work
        else:
            out_path = request.out_path or default_output_path(request.in_path)
        remote = requested_remote(request)
        progress = stderr_progress()
        # rich draws one live display: the download lines join the bar's.
        downloads = download_progress(remote, progress)
        try:
            summary = symbolize_file(
                sys.stdin.buffer if request.from_stdin else request.in_path,
                out_path,
                binaries=request.binaries or (),
                search_paths=request.search_paths or (),
                debug_dirs=request.debug_dirs or None,
                demangle=request.demangle,  # type: ignore[arg-type]  # one of the declared choices
                adjust_return_addresses=not request.no_return_address_adjust,
                cache_dir=request.cache_dir,
                use_cache=not request.no_cache,
                background_index=request.background_index,
                drop_frames=request.drop_frames,
                keep_hashes=request.keep_hashes,
                progress=progress,
                remote=remote,
                download_progress=downloads,
            )
        finally:
            if downloads is not None:
                downloads.close()
            progress.close()  # erased before the summary and any error line are printed
        summaries.append(summary)

    code = run_guarded(rewrite, debug=debug)
    if code:
        return code
    summary = summaries[0]
    # The gates are checked once OUT is written, so CI keeps the profile of a failed run to look at.
    failures = summary.check_gates(
        unnamed_above=unnamed_limit(request.fail_unnamed_above), require_verified=request.require_verified
    )
    if request.json_summary:
        import json

        echo(json.dumps(summary.to_json(), indent=2))
        for failure in failures:  # the text summary has these lines already
            echo(f"gate --{failure.gate} failed: {failure.detail}", err=True)
    else:
        echo(summary.format_text(), err=True)
    return gate_exit_code(failures)


def unnamed_limit(percent: str | None) -> float | None:
    """``--fail-unnamed-above PCT`` as a share (0..1); None when not given. ValueError unless PCT is a
    number from 0 to 100 (typer's command reports it as a usage error before any work)."""
    if percent is None:
        return None
    value = float(percent)
    if not 0.0 <= value <= 100.0:
        raise ValueError(f"{percent} is not a percentage from 0 to 100")
    return value / 100.0


def gate_exit_code(failures: "Sequence[GateFailure]") -> int:
    """0 when no gate tripped; else the first tripped gate's code, unnamed share first (exits.py)."""
    from symbolize.summary import GATE_UNNAMED_ABOVE

    if any(failure.gate == GATE_UNNAMED_ABOVE for failure in failures):
        return EXIT_UNNAMED_ABOVE
    return EXIT_UNVERIFIED if failures else 0

"""The ``symbolize`` command line (typer); with symbolize/cli/audit.py, the only modules that import typer.

Commands (promises to users' scripts)::

    symbolize [--debug] profile IN|- [-o OUT|-] [--binary FILE]... [--search-path DIR]...
              [--debug-dir DIR]... [--demangle full|short|none] [--no-return-address-adjust]
              [--json-summary] [--drop-frames REGEX]
              [--debuginfod URL]... [--symbol-server SPEC]... [--remote] [--offline] [--index-store URL]
    symbolize [--debug] batch IN... -o OUTDIR [--workers N] [--dask SCHEDULER] [profile's options]
              (exit codes: symbolize/cli/batch.py)
    symbolize [--debug] lookup --obj FILE [--json] [--inlines/--no-inlines] [--demangle MODE]
              [--search-path DIR]... [--debug-dir DIR]... [--arch ARCH]
              [--debuginfod URL]... [--symbol-server SPEC]... [--remote] [--offline] [--index-store URL]
              [ADDR...]
    symbolize audit BINARY... [--debug-file FILE]... [--search-path DIR]... [--debug-dir DIR]...
              [--cargo PATH] [--target TRIPLE]... [--json] [--require names|lines|inlines]
              [--require-frame-pointers] [--debuginfod URL]... [--symbol-server SPEC]... [--remote]
              (exit codes: symbolize/cli/audit.py)
    symbolize [--debug] convert IN|- -o OUT|- --to otlp|pprof [--encoding protobuf|json]
              [--original-payload]
    symbolize [--debug] stamp IN|- -o OUT|- [--binary FILE]... [--json-summary]
    symbolize [--debug] serve --forward URL [--forward-header 'NAME: VALUE']... [--listen HOST:PORT]
              [--binary FILE]... [--search-path DIR]...
              [--debug-dir DIR]... [--demangle MODE] [--cache-dir DIR] [--no-cache] [--max-pending N]
              [--max-body-mib MIB] [--forward-deadline SECONDS] [--shutdown-timeout SECONDS]
              [--debuginfod URL]... [--symbol-server SPEC]... [--remote] [--offline]

Data goes to stdout, diagnostics to stderr; exit codes and error lines: symbolize/cli/exits.py,
in every command, ``audit`` (whose own codes are in ``symbolize/cli/audit.py``) included.
``--debug``, before or after the command name, shows the traceback instead. The options are
declared in symbolize/cli/options.py (the plain lookup and profile of symbolize/cli/entry.py read
the same declarations); what ``lookup`` and ``profile`` do is in symbolize/cli/commands.py and
symbolize/cli/profile_command.py.
"""

from __future__ import annotations

import enum
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from symbolize.cli.audit import audit_command
from symbolize.cli.commands import LookupRequest, lookup_usage_problem, run_guarded, run_lookup, use_index_store
from symbolize.cli.exits import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, error_line, internal_error_line
from symbolize.cli.options import (
    BATCH_OPTIONS,
    CACHE_CLEAR_OPTIONS,
    CACHE_PRUNE_OPTIONS,
    CACHE_SHOW_OPTIONS,
    CONVERT_OPTIONS,
    INDEX_OPTIONS,
    LOOKUP_OPTIONS,
    PROFILE_OPTIONS,
    SERVE_OPTIONS,
    STAMP_OPTIONS,
    CliOption,
    Kind,
)
from symbolize.cli.profile_command import ProfileRequest, run_profile, unnamed_limit
from symbolize.cli.spellings import llvm_spellings
from symbolize.errors import SymbolizeError
from symbolize.units import human_size

if TYPE_CHECKING:
    from symbolize.cache import CacheEntry

_APP_SETTINGS: dict[str, Any] = dict(
    name="symbolize",
    help="Name the bare addresses of native pprof profiles, or of an object file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help and errors, not rich's panels: a panel 80 columns wide cuts option names
    # (``--background-i…``) and boxes the error a script reads from stderr.
    rich_markup_mode=None,
    # -h as well, as llvm-symbolizer and most tools take it; every command inherits it.
    context_settings={"help_option_names": ["-h", "--help"]},
)


def typer_parameter(declared: CliOption) -> Any:
    """typer's Option or Argument for ``declared``, in the form that carries its default, so that
    the default, like the names, help and metavar, is the declaration's (symbolize/cli/options.py).
    A parameter's type is its annotation in the command's signature; tests/test_cli_options.py
    checks it against the declaration's kind and choices."""
    if declared.kind in (Kind.ARGUMENT, Kind.ARGUMENTS, Kind.PATH_ARGUMENTS):
        return typer.Argument(declared.default, metavar=declared.metavar, help=declared.help)
    names = declared.names
    if declared.kind is Kind.SWITCH:
        names = tuple(f"{on}/{off}" for on, off in zip(declared.names, declared.off_names, strict=True))
    return typer.Option(
        declared.default,
        *names,
        metavar=declared.metavar,
        help=declared.help,
        envvar=declared.envvar,
        case_sensitive=declared.case_sensitive,
    )


def _parameters(options: tuple[CliOption, ...]) -> dict[str, Any]:
    return {declared.field: typer_parameter(declared) for declared in options}


_PROFILE = _parameters(PROFILE_OPTIONS)
_BATCH = _parameters(BATCH_OPTIONS)
_LOOKUP = _parameters(LOOKUP_OPTIONS)
_INDEX = _parameters(INDEX_OPTIONS)
_CACHE_SHOW = _parameters(CACHE_SHOW_OPTIONS)
_CACHE_CLEAR = _parameters(CACHE_CLEAR_OPTIONS)
_STAMP = _parameters(STAMP_OPTIONS)
_CACHE_PRUNE = _parameters(CACHE_PRUNE_OPTIONS)
_CONVERT = _parameters(CONVERT_OPTIONS)
_SERVE = _parameters(SERVE_OPTIONS)


class DemangleChoice(enum.StrEnum):
    full = "full"
    short = "short"
    none = "none"


class OutputStyle(enum.StrEnum):
    LLVM = "LLVM"
    GNU = "GNU"
    JSON = "JSON"


# convert's choices, spelled here rather than imported from symbolize.otlp (Target, Encoding),
# whose import loads opentelemetry-proto: only a convert run may pay for that.
class ConvertTarget(enum.StrEnum):
    otlp = "otlp"
    pprof = "pprof"


class OtlpEncoding(enum.StrEnum):
    protobuf = "protobuf"
    json = "json"


class FunctionNames(enum.StrEnum):
    linkage = "linkage"
    short = "short"
    none = "none"


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from symbolize import native_status

        typer.echo(f"symbolize {version('pprof-symbolize')}\n{native_status()}")
        raise typer.Exit()


def _global_options(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the version and whether the compiled kernels run, then exit.",
        ),
    ] = False,
) -> None:
    ctx.obj = {"debug": debug}


def _debug(ctx: typer.Context) -> bool:
    """Whether ``--debug`` asks for tracebacks instead of one-line errors."""
    return bool((ctx.obj or {}).get("debug"))


def _exit_with(code: int) -> None:
    if code:
        raise typer.Exit(code)


def profile_command(
    ctx: typer.Context,
    in_path: Path = _PROFILE["in_path"],
    out_path: Path | None = _PROFILE["out_path"],
    binaries: list[Path] | None = _PROFILE["binaries"],
    search_paths: list[Path] | None = _PROFILE["search_paths"],
    debug_dirs: list[Path] | None = _PROFILE["debug_dirs"],
    demangle: DemangleChoice = _PROFILE["demangle"],
    no_return_address_adjust: bool = _PROFILE["no_return_address_adjust"],
    json_summary: bool = _PROFILE["json_summary"],
    drop_frames: str | None = _PROFILE["drop_frames"],
    cache_dir: Path | None = _PROFILE["cache_dir"],
    no_cache: bool = _PROFILE["no_cache"],
    background_index: bool = _PROFILE["background_index"],
    index_store: str | None = _PROFILE["index_store"],
    fail_unnamed_above: str | None = _PROFILE["fail_unnamed_above"],
    require_verified: bool = _PROFILE["require_verified"],
    keep_hashes: bool = _PROFILE["keep_hashes"],
    debuginfod: list[str] | None = _PROFILE["debuginfod"],
    symbol_servers: list[str] | None = _PROFILE["symbol_servers"],
    remote: bool = _PROFILE["remote"],
    offline: bool = _PROFILE["offline"],
) -> None:
    """Rewrite a profile with function names, files and lines.

    An OpenTelemetry profiles export (OTLP protobuf or JSON) is written back in its own encoding.
    The output is gzipped when OUT ends in .gz or IN was gzipped. IN - reads stdin;
    OUT - (the default for IN -) writes stdout, whole, once the rewrite has succeeded.
    """
    _check_profile_values(drop_frames, fail_unnamed_above)
    request = ProfileRequest(
        in_path=in_path,
        out_path=out_path,
        binaries=binaries,
        search_paths=search_paths,
        debug_dirs=debug_dirs,
        demangle=demangle.value,
        no_return_address_adjust=no_return_address_adjust,
        json_summary=json_summary,
        drop_frames=drop_frames,
        cache_dir=cache_dir,
        no_cache=no_cache,
        background_index=background_index,
        index_store=index_store,
        fail_unnamed_above=fail_unnamed_above,
        require_verified=require_verified,
        keep_hashes=keep_hashes,
        debuginfod=debuginfod,
        symbol_servers=symbol_servers,
        remote=remote,
        offline=offline,
    )
    if request.to_stdout and json_summary:
        raise typer.BadParameter("the profile goes to stdout: --json-summary cannot", param_hint="-o")
    _exit_with(run_profile(request, debug=_debug(ctx)))


def _check_profile_values(drop_frames: str | None, fail_unnamed_above: str | None) -> None:
    """``--drop-frames`` and ``--fail-unnamed-above`` checked before any work (``profile``, ``batch``)."""
    if drop_frames is not None:
        try:
            re.compile(drop_frames)
        except re.error as exc:
            raise typer.BadParameter(f"not a regular expression: {exc}", param_hint="--drop-frames") from exc
    try:
        unnamed_limit(fail_unnamed_above)
    except ValueError as exc:
        raise typer.BadParameter(f"not a percentage from 0 to 100: {fail_unnamed_above}",
                                 param_hint="--fail-unnamed-above") from exc  # fmt: skip


def batch_command(
    ctx: typer.Context,
    inputs: list[Path] = _BATCH["inputs"],
    out_dir: Path = _BATCH["out_dir"],
    workers: str | None = _BATCH["workers"],
    dask: str | None = _BATCH["dask"],
    binaries: list[Path] | None = _BATCH["binaries"],
    search_paths: list[Path] | None = _BATCH["search_paths"],
    debug_dirs: list[Path] | None = _BATCH["debug_dirs"],
    demangle: DemangleChoice = _BATCH["demangle"],
    no_return_address_adjust: bool = _BATCH["no_return_address_adjust"],
    json_summary: bool = _BATCH["json_summary"],
    drop_frames: str | None = _BATCH["drop_frames"],
    cache_dir: Path | None = _BATCH["cache_dir"],
    no_cache: bool = _BATCH["no_cache"],
    background_index: bool = _BATCH["background_index"],
    index_store: str | None = _BATCH["index_store"],
    fail_unnamed_above: str | None = _BATCH["fail_unnamed_above"],
    require_verified: bool = _BATCH["require_verified"],
    keep_hashes: bool = _BATCH["keep_hashes"],
    debuginfod: list[str] | None = _BATCH["debuginfod"],
    symbol_servers: list[str] | None = _BATCH["symbol_servers"],
    remote: bool = _BATCH["remote"],
    offline: bool = _BATCH["offline"],
) -> None:
    """Rewrite many profiles as profile rewrites each, in parallel, sharded by debug ID.

    Each IN goes to OUTDIR under the name profile would give it, written whole or not at all.
    A local process pool by default; --dask SCHEDULER runs the same shards on a Dask cluster.
    --background-index (the default) builds a missing index in the worker, before answering
    from it. A line per profile on stderr as each is done, then the run's figures
    (--json-summary: all of it as JSON on stdout). A profile that fails is said and the others
    go on. Exit 0 when all were rewritten and no gate tripped; 1 when any failed on its input,
    70 on an internal error, else profile's gate codes (4, then 5).
    """
    from symbolize.cli.batch import BatchRequest, run_batch_command, worker_count

    _check_profile_values(drop_frames, fail_unnamed_above)
    try:
        worker_count(workers)
    except ValueError as exc:
        raise typer.BadParameter(f"not a number of workers from 1: {workers}", param_hint="--workers") from exc
    if any(str(path) == "-" for path in inputs):
        raise typer.BadParameter("batch reads files: - (stdin) is profile's", param_hint="IN...")
    request = BatchRequest(
        inputs=inputs,
        out_dir=out_dir,
        workers=workers,
        dask=dask,
        binaries=binaries,
        search_paths=search_paths,
        debug_dirs=debug_dirs,
        demangle=demangle.value,
        no_return_address_adjust=no_return_address_adjust,
        json_summary=json_summary,
        drop_frames=drop_frames,
        cache_dir=cache_dir,
        no_cache=no_cache,
        background_index=background_index,
        index_store=index_store,
        fail_unnamed_above=fail_unnamed_above,
        require_verified=require_verified,
        keep_hashes=keep_hashes,
        debuginfod=debuginfod,
        symbol_servers=symbol_servers,
        remote=remote,
        offline=offline,
    )
    _exit_with(run_batch_command(request, debug=_debug(ctx)))


def lookup_command(
    ctx: typer.Context,
    obj: Path | None = _LOOKUP["obj"],
    addresses: list[str] | None = _LOOKUP["addresses"],
    as_json: bool = _LOOKUP["as_json"],
    inlines: bool = _LOOKUP["inlines"],
    demangle: DemangleChoice = _LOOKUP["demangle"],
    print_addresses: bool = _LOOKUP["print_addresses"],
    pretty: bool = _LOOKUP["pretty"],
    output_style: OutputStyle = _LOOKUP["output_style"],
    functions: FunctionNames = _LOOKUP["functions"],
    relative_address: bool = _LOOKUP["relative_address"],
    adjust_vma: str | None = _LOOKUP["adjust_vma"],
    basenames: bool = _LOOKUP["basenames"],
    relativenames: bool = _LOOKUP["relativenames"],
    verbose: bool = _LOOKUP["verbose"],
    context_lines: str | None = _LOOKUP["context_lines"],
    search_paths: list[Path] | None = _LOOKUP["search_paths"],
    debug_dirs: list[Path] | None = _LOOKUP["debug_dirs"],
    cache_dir: Path | None = _LOOKUP["cache_dir"],
    no_cache: bool = _LOOKUP["no_cache"],
    background_index: bool = _LOOKUP["background_index"],
    index_store: str | None = _LOOKUP["index_store"],
    arch: str | None = _LOOKUP["arch"],
    debuginfod: list[str] | None = _LOOKUP["debuginfod"],
    symbol_servers: list[str] | None = _LOOKUP["symbol_servers"],
    remote: bool = _LOOKUP["remote"],
    offline: bool = _LOOKUP["offline"],
) -> None:
    """Print the frames at object addresses, like llvm-symbolizer.

    Addresses are hex with 0x or decimal, from the arguments or one per line on stdin (each
    line answered as it arrives), read as llvm-symbolizer reads them: CODE/DATA first, FILE
    (or "FILE") before the address without --obj, words after it ignored; with --obj a
    non-address is echoed back. llvm-symbolizer's and addr2line's spellings work: -e/--exe,
    -a, -f, -C, -i, -p, -s, combined (-Cfi), --output-style=LLVM|GNU|JSON.
    """
    request = LookupRequest(
        obj=obj,
        addresses=addresses,
        as_json=as_json,
        inlines=inlines,
        demangle=demangle.value,
        print_addresses=print_addresses,
        pretty=pretty,
        output_style=output_style.value,
        functions=functions.value,
        relative_address=relative_address,
        adjust_vma=adjust_vma,
        basenames=basenames,
        relativenames=relativenames,
        verbose=verbose,
        context_lines=context_lines,
        search_paths=search_paths,
        debug_dirs=debug_dirs,
        cache_dir=cache_dir,
        no_cache=no_cache,
        background_index=background_index,
        index_store=index_store,
        arch=arch,
        debuginfod=debuginfod,
        symbol_servers=symbol_servers,
        remote=remote,
        offline=offline,
    )
    problem = lookup_usage_problem(request)
    if problem is not None:
        raise typer.BadParameter(problem[1], param_hint=problem[0])
    _exit_with(run_lookup(request, debug=_debug(ctx)))


def index_command(
    ctx: typer.Context,
    binaries: list[Path] = _INDEX["binaries"],
    search_paths: list[Path] | None = _INDEX["search_paths"],
    debug_dirs: list[Path] | None = _INDEX["debug_dirs"],
    cache_dir: Path | None = _INDEX["cache_dir"],
    index_store: str | None = _INDEX["index_store"],
) -> None:
    """Build the persistent index of each binary and its debug files, for fast later lookups.

    Prints each index file, and on stderr the binary (or debug file and its binary) it answers
    for; a binary that cannot be indexed is reported on stderr and the others are indexed still
    (exit 1 when any failed). On a terminal, stderr shows which binary is being indexed.

    With --index-store, an index the store holds is fetched instead of built, and each index
    (built now or before) is published to the store unless it holds one (exit 1 when the store
    could not be reached or written).
    """
    from symbolize.api import build_indexes
    from symbolize.cache import index_owner, publish_index_file
    from symbolize.index_store.config import index_store as configured_index_store
    from symbolize.progress import stderr_progress

    failed: list[Path] = []

    def index() -> None:
        use_index_store(index_store)
        store = configured_index_store() if index_store else None
        progress = stderr_progress()
        try:
            progress.start("indexing", len(binaries))
            for binary in binaries:
                try:
                    built = build_indexes(
                        [binary], search_paths=search_paths or (), debug_dirs=debug_dirs or None, cache_dir=cache_dir,
                        progress=progress,
                    )  # fmt: skip
                except (SymbolizeError, OSError) as exc:
                    if _debug(ctx):
                        raise
                    typer.echo(error_line(exc), err=True)
                    failed.append(binary)
                    progress.advance()
                    continue
                for path in built:
                    if store is not None:
                        publish_index_file(path)  # built before, or by a run without the store
                    typer.echo(f"{path}: {_owner_text(*index_owner(path))}", err=True)
                    typer.echo(str(path))
        finally:
            progress.close()

    _exit_with(run_guarded(index, debug=_debug(ctx)))
    # An index store that could not be written was said (a warning line): asked to publish, the run failed.
    store = configured_index_store() if index_store else None
    if failed or (store is not None and store.unavailable is not None):
        raise typer.Exit(EXIT_INPUT_ERROR)


def _owner_text(source_path: Path | None, image_path: Path | None) -> str:
    """What an index answers for: ``BINARY``, or ``DEBUG FILE (debug file of BINARY)``."""
    if source_path is None:
        return "(unknown binary)"
    if image_path is None or image_path == source_path:
        return str(source_path)
    return f"{source_path} (debug file of {image_path})"


def cache_show_command(
    ctx: typer.Context,
    cache_dir: Path | None = _CACHE_SHOW["cache_dir"],
    as_json: bool = _CACHE_SHOW["as_json"],
) -> None:
    """List the indexes in the cache: binary, debug ID, size, age and demangler of each."""
    from symbolize.cache import cache_entries, default_cache_dir

    def show() -> None:
        directory = cache_dir or default_cache_dir()
        entries = cache_entries(directory)
        now = time.time()
        if as_json:
            typer.echo(json.dumps(_cache_json(directory, entries, now), indent=2))
            return
        rows = [_cache_row(entry, now) for entry in entries]
        if rows:
            rows.insert(0, ("BINARY", "DEBUG ID", "SIZE", "AGE", "DEMANGLER"))
            widths = [max(len(row[column]) for row in rows) for column in range(4)]
            for row in rows:
                typer.echo("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[4]]))
        total = sum(entry.size for entry in entries)
        typer.echo(f"{len(entries)} indexes, {human_size(total)} in {directory}", err=True)

    _exit_with(run_guarded(show, debug=_debug(ctx)))


def _cache_row(entry: CacheEntry, now: float) -> tuple[str, str, str, str, str]:
    binary = _owner_text(entry.source_path, entry.image_path) if entry.source_path else f"(unknown: {entry.path.name})"
    debug_id = entry.debug_id or ("(unreadable)" if entry.key is None else "(none: path, size, mtime)")
    return binary, debug_id, human_size(entry.size), _human_age(now - entry.modified), entry.demangler or "?"


def _cache_json(directory: Path, entries: list[CacheEntry], now: float) -> dict[str, Any]:
    """``cache show --json``: {"cache_dir", "indexes": [{"index", "binary", "debug_file_of",
    "debug_id", "size", "built", "age_seconds", "demangler", "key"}]}; unknown values are null,
    and so is ``debug_file_of`` of a binary's own index."""
    from datetime import UTC, datetime

    return {
        "cache_dir": str(directory),
        "indexes": [
            {
                "index": str(entry.path),
                "binary": str(entry.source_path) if entry.source_path else None,
                "debug_file_of": str(entry.image_path) if entry.image_path else None,
                "debug_id": entry.debug_id,
                "size": entry.size,
                "built": datetime.fromtimestamp(entry.modified, UTC).isoformat(timespec="seconds"),
                "age_seconds": max(0, round(now - entry.modified)),
                "demangler": entry.demangler,
                "key": entry.key,
            }
            for entry in entries
        ],
    }


def _human_age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds // length} {unit}"
    return f"{seconds} s"


def cache_clear_command(ctx: typer.Context, cache_dir: Path | None = _CACHE_CLEAR["cache_dir"]) -> None:
    """Delete every index in the cache."""
    from symbolize.cache import clear_cache, default_cache_dir

    def clear() -> None:
        directory = cache_dir or default_cache_dir()
        typer.echo(f"removed {clear_cache(directory)} files from {directory}", err=True)

    _exit_with(run_guarded(clear, debug=_debug(ctx)))


def stamp_command(
    ctx: typer.Context,
    in_path: Path = _STAMP["in_path"],
    out_path: Path = _STAMP["out_path"],
    binaries: list[Path] | None = _STAMP["binaries"],
    json_summary: bool = _STAMP["json_summary"],
) -> None:
    """Record each mapping's build ID, read from its file's headers, on the machine that made the profile.

    Run right after the dump: a stamped profile is symbolized anywhere, every mapping verified and
    its files fetchable by ID. A mapping whose file is missing, unreadable or newer than the
    profile keeps what it had and is counted in the report (stderr). OUT is written atomically.
    """
    from symbolize.cli.commands import STDIO_PATH, echo, standard_output

    to_stdout = str(out_path) == STDIO_PATH
    if to_stdout and json_summary:
        raise typer.BadParameter("the profile goes to stdout: --json-summary cannot", param_hint="-o")
    reports: list[Any] = []

    def stamp() -> None:
        from symbolize.api import parse_profile_or_export, stamp_profile
        from symbolize.pprof import output_target, serialize_profile, write_atomically

        source = "<stdin>" if str(in_path) == STDIO_PATH else str(in_path)
        data = sys.stdin.buffer.read() if str(in_path) == STDIO_PATH else _read_input(in_path)
        output = standard_output().buffer if to_stdout else None  # refused before any work
        parsed = parse_profile_or_export(data, source)
        if output is None:
            output_target(out_path)
        if parsed is None:  # an OTLP export: its mappings' attributes record the IDs
            from symbolize.otlp.stamp import stamp_otlp_payload

            stamped, report = stamp_otlp_payload(data, binaries=binaries or (), source=source)
        else:
            profile, was_gzipped = parsed
            _, report = stamp_profile(profile, binaries=binaries or ())
            stamped = serialize_profile(profile, gzip=was_gzipped or (output is None and str(out_path).endswith(".gz")))
        if output is not None:
            output.write(stamped)
            output.flush()
        else:
            write_atomically(stamped, out_path)
        reports.append(report)

    _exit_with(run_guarded(stamp, debug=_debug(ctx)))
    if json_summary:
        echo(json.dumps(reports[0].to_json(), indent=2))
    else:
        echo(reports[0].format_text(), err=True)


def cache_prune_command(
    ctx: typer.Context,
    cache_dir: Path | None = _CACHE_PRUNE["cache_dir"],
    max_size: str = _CACHE_PRUNE["max_size"],
    max_age: str = _CACHE_PRUNE["max_age"],
) -> None:
    """Remove downloaded debug files unused for longer than --max-age, then the least recently used
    until the rest fit in --max-size; expired misses and stale partial downloads too."""
    from symbolize.remote.options import download_store_root
    from symbolize.remote.prune import parse_age, parse_size, prune_store

    try:
        size_limit = parse_size(max_size)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--max-size") from exc
    try:
        age_limit = parse_age(max_age)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--max-age") from exc

    def prune() -> None:
        store = download_store_root(cache_dir)
        result = prune_store(store, max_bytes=size_limit, max_age=age_limit)
        typer.echo(
            f"removed {result.removed_files} downloaded files ({human_size(result.removed_bytes)}) from {store}; "
            f"kept {result.kept_files} ({human_size(result.kept_bytes)})",
            err=True,
        )

    _exit_with(run_guarded(prune, debug=_debug(ctx)))


def convert_command(
    ctx: typer.Context,
    in_path: Path = _CONVERT["in_path"],
    out_path: Path = _CONVERT["out_path"],
    to: ConvertTarget = _CONVERT["to"],
    encoding: OtlpEncoding = _CONVERT["encoding"],
    original_payload: bool = _CONVERT["original_payload"],
) -> None:
    """Convert a profile between pprof and OpenTelemetry (OTLP profiles, v1development).

    IN is told apart by its bytes; the output is gzipped when IN was. pprof -> OTLP -> pprof gives
    back the same profile; what pprof has no place for (timestamps, links, resource attributes)
    is named on stderr.
    """
    if original_payload and to is not ConvertTarget.otlp:
        raise typer.BadParameter("only OTLP output carries an original payload", param_hint="--original-payload")

    def work() -> None:
        # Imported here: opentelemetry-proto's messages are no part of a run that does not convert.
        from symbolize.otlp.convert import Target, convert
        from symbolize.otlp.encoding import Encoding

        data = sys.stdin.buffer.read() if str(in_path) == "-" else _read_input(in_path)
        shown = "<stdin>" if str(in_path) == "-" else in_path
        converted = convert(
            data, Target(to.value), encoding=Encoding(encoding.value), original_payload=original_payload, path=shown
        )
        if str(out_path) == "-":
            sys.stdout.buffer.write(converted.data)
            sys.stdout.buffer.flush()
        else:
            from symbolize.pprof import write_atomically

            write_atomically(converted.data, out_path)
        if converted.note is not None:
            typer.echo(f"symbolize: note: {converted.note}", err=True)

    _exit_with(run_guarded(work, debug=_debug(ctx)))


def _read_input(path: Path) -> bytes:
    from symbolize.errors import os_error

    try:
        return path.read_bytes()
    except OSError as error:
        raise os_error(error, "read", path) from error


def _number(text: str, option: str, *, integer: bool = False) -> float:
    """A positive number given to ``option``, else a usage error naming it."""
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        value = -1
    if not value > 0 or value == float("inf"):
        raise typer.BadParameter(f"not a positive {'whole ' if integer else ''}number: {text}", param_hint=option)
    return value


def serve_command(
    ctx: typer.Context,
    forward: str = _SERVE["forward"],
    forward_headers: list[str] | None = _SERVE["forward_headers"],
    listen: str = _SERVE["listen"],
    binaries: list[Path] | None = _SERVE["binaries"],
    search_paths: list[Path] | None = _SERVE["search_paths"],
    debug_dirs: list[Path] | None = _SERVE["debug_dirs"],
    demangle: DemangleChoice = _SERVE["demangle"],
    cache_dir: Path | None = _SERVE["cache_dir"],
    no_cache: bool = _SERVE["no_cache"],
    index_store: str | None = _SERVE["index_store"],
    max_pending: str = _SERVE["max_pending"],
    max_body_mib: str = _SERVE["max_body_mib"],
    forward_deadline: str = _SERVE["forward_deadline"],
    shutdown_timeout: str = _SERVE["shutdown_timeout"],
    debuginfod: list[str] | None = _SERVE["debuginfod"],
    symbol_servers: list[str] | None = _SERVE["symbol_servers"],
    remote: bool = _SERVE["remote"],
    offline: bool = _SERVE["offline"],
) -> None:
    """Take OTLP/HTTP profile exports (POST /v1development/profiles), name them, forward them to URL.

    The sender gets the receiver's answer: 200 only once the receiver took the named export.
    Retryable answers (429, 503, with Retry-After) when too many exports are in flight, while
    the receiver is down past --forward-deadline, and on shutdown; GET /health says how it goes.
    SIGTERM or Ctrl-C: stop taking exports, finish those in flight (--shutdown-timeout), exit 0.
    """
    from symbolize.serve.forward import parse_header
    from symbolize.serve.run import parse_listen

    try:
        address = parse_listen(listen)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--listen") from exc
    try:
        headers = dict(parse_header(text) for text in forward_headers or ())
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--forward-header") from exc
    from symbolize.serve.server import ServeLimits

    limits = ServeLimits(
        max_pending=int(_number(max_pending, "--max-pending", integer=True)),
        max_body=int(_number(max_body_mib, "--max-body-mib") * (1 << 20)),
        forward_deadline=_number(forward_deadline, "--forward-deadline"),
        shutdown_timeout=_number(shutdown_timeout, "--shutdown-timeout"),
    )

    def work() -> None:
        from symbolize.api import Session, remote_options
        from symbolize.rewrite import RewriteOptions
        from symbolize.serve.forward import ForwardTarget
        from symbolize.serve.run import serve

        ForwardTarget(forward)  # a URL that is none is refused before listening
        use_index_store(index_store)
        servers = remote_options(debuginfod_urls=debuginfod or (), symbol_servers=symbol_servers or (),
                                 from_environment=remote, offline=offline, cache_dir=cache_dir)  # fmt: skip
        session = Session(
            binaries=binaries or (), search_paths=search_paths or (), debug_dirs=debug_dirs or None,
            cache_dir=cache_dir, use_cache=not no_cache, demangle=demangle.value, remote=servers,
        )  # fmt: skip
        # A server builds a binary's index the first time an export needs it, in the naming
        # thread, and keeps it: every later export is answered from it (a command's run, which
        # ends, leaves that to a background builder instead).
        session.options = session.options._replace(build_missing_indexes=session.options.index_dir is not None)
        serve(address, forward, session, lambda loader: RewriteOptions(discovery=loader, demangle=demangle.value),
              limits, forward_headers=headers)  # fmt: skip

    _exit_with(run_guarded(work, debug=_debug(ctx)))


# The commands, in the order help lists them.
_COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("profile", profile_command),
    ("batch", batch_command),
    ("lookup", lookup_command),
    ("index", index_command),
    ("audit", audit_command),
    ("convert", convert_command),
    ("stamp", stamp_command),
    ("serve", serve_command),
)
_CACHE_COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("show", cache_show_command),
    ("clear", cache_clear_command),
    ("prune", cache_prune_command),
)


def build_app(only: str | None = None) -> typer.Typer:
    """The command line, with every command, or with only the command (or group) named ``only``.

    typer turns every registered command into a click command, parameter by parameter, before
    it runs any: building the one that runs is most of typer's work on a quick lookup.
    """
    built = typer.Typer(**_APP_SETTINGS)
    built.callback()(_global_options)
    for name, function in _COMMANDS:
        if only in (None, name):
            built.command(name)(function)
    if only in (None, "cache"):
        cache_app = typer.Typer(
            help="Show or clear the persistent index cache; prune the downloaded debug files.",
            no_args_is_help=True,
            rich_markup_mode=None,
        )
        for name, function in _CACHE_COMMANDS:
            cache_app.command(name)(function)
        built.add_typer(cache_app, name="cache")
    return built


app = build_app()


def hoist_debug(argv: list[str]) -> list[str]:
    """``argv`` with a ``--debug`` given after the command name moved before it, where it is defined.

    Only up to a ``--`` (after which every word is an argument).
    """
    end = argv.index("--") if "--" in argv else len(argv)
    if "--debug" not in argv[:end]:
        return argv
    rest = [word for word in argv[:end] if word != "--debug"]
    return ["--debug", *rest, *argv[end:]]


def app_for(arguments: list[str]) -> typer.Typer:
    """The app with only the command ``arguments`` name (after the global options), when they name
    one; help for the whole program (no command, ``--help``) and a mistyped command get every command."""
    name = next((word for word in arguments if not word.startswith("-")), None)
    known = {command for command, _ in _COMMANDS} | {"cache"}
    return build_app(name) if name in known else app


def usage_line(error: typer.TyperException, arguments: list[str]) -> str:
    """The one line a usage error prints for a script (stderr not a terminal), naming the command
    ``arguments`` run."""
    name = next((word for word in arguments if not word.startswith("-")), None)
    path = f"symbolize {name}" if name in {command for command, _ in _COMMANDS} | {"cache"} else "symbolize"
    message = error.format_message().replace("\n", " ")
    return f"{path}: error: {message} (try '{path} -h')"


def run_app(command: typer.Typer, arguments: list[str]) -> None:
    """Run ``command``; when stderr is no terminal, a usage error is :func:`usage_line`, exit 2
    (click's own report, on a terminal, takes four lines)."""
    if _is_terminal(sys.stderr):
        command(args=arguments, prog_name="symbolize")
        return
    try:
        code = command(args=arguments, prog_name="symbolize", standalone_mode=False)
    except typer.TyperException as error:
        line = usage_line(error, arguments) if error.exit_code == 2 else f"symbolize: error: {error.format_message()}"
        print(line, file=sys.stderr)
        sys.exit(error.exit_code)
    except typer.Abort:
        print("Aborted!", file=sys.stderr)
        sys.exit(EXIT_INPUT_ERROR)
    if isinstance(code, int) and code:
        sys.exit(code)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:  # closed, or no stream at all
        return False


def main() -> None:
    """Run the command line through typer (symbolize/cli/entry.py's main runs the plain forms
    without it, and comes here for everything else)."""
    arguments = llvm_spellings(hoist_debug(sys.argv[1:]))
    try:
        run_app(app_for(arguments), arguments)
    except Exception as exc:
        # The boundary again, for a command that does not run inside run_guarded.
        if arguments[:1] == ["--debug"]:
            raise
        print(internal_error_line(exc), file=sys.stderr)
        sys.exit(EXIT_INTERNAL_ERROR)

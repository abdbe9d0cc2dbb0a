"""The ``symbolize`` command line (typer); the only module that imports typer.

Commands (promises to users' scripts)::

    symbolize [--debug] profile IN|- [-o OUT|-] [--binary FILE]... [--search-path DIR]...
              [--debug-dir DIR]... [--demangle full|short|none] [--no-return-address-adjust]
              [--json-summary] [--drop-frames REGEX]
    symbolize [--debug] lookup --obj FILE [--json] [--inlines/--no-inlines] [--demangle MODE]
              [--search-path DIR]... [--debug-dir DIR]... [--arch ARCH] [ADDR...]
    symbolize audit BINARY... [--debug-file FILE]... [--search-path DIR]... [--debug-dir DIR]...
              [--cargo PATH] [--target TRIPLE]... [--json] [--require names|lines|inlines]
              [--require-frame-pointers]   (exit codes: symbolize/cli/audit.py)

Data goes to stdout, diagnostics to stderr. Exit codes: 0 done; 1 an error the
input caused (a SymbolizeError or OSError: one line ``symbolize: error: <message>``);
2 a usage error; 70 (sysexits' EX_SOFTWARE) an internal error, any other exception (a bug,
or an input that found one: one line ``symbolize: error: internal error: <type>: <message>``),
in every command, ``audit`` (whose own codes are in ``symbolize/cli/audit.py``) included.
``--debug``, before or after the command name, shows the traceback instead.
"""

from __future__ import annotations

import enum
import gc
import io
import json
import re
import sys
import time
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from symbolize.cli.audit import audit_command
from symbolize.cli.entry import (
    EXIT_INPUT_ERROR,
    EXIT_INTERNAL_ERROR,
    default_output_path,
    iter_stdin_batches,
    standard_output,
)
from symbolize.cli.entry import error_line as _error_line
from symbolize.cli.entry import internal_error_line as _internal_error_line
from symbolize.cli.spellings import llvm_spellings
from symbolize.errors import SymbolizeError

if TYPE_CHECKING:
    from symbolize.cache import CacheEntry
    from symbolize.summary import Summary

_APP_SETTINGS: dict[str, Any] = dict(
    name="symbolize",
    help="Name the bare addresses of native pprof profiles, or of an object file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # -h as well, as llvm-symbolizer and most tools take it; every command inherits it.
    context_settings={"help_option_names": ["-h", "--help"]},
)
app = typer.Typer(**_APP_SETTINGS)

# Options several commands share.
SearchPathsOption = Annotated[
    list[Path] | None,
    typer.Option("--search-path", metavar="DIR", help="Where to look for binaries and debug files."),
]
DebugDirsOption = Annotated[
    list[Path] | None, typer.Option("--debug-dir", metavar="DIR", help="Debug file directory.")
]
CacheDirOption = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir", metavar="DIR", help="Index cache (default: $SYMBOLIZE_CACHE_DIR, else the per-user cache)."
    ),
]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Do not read persistent indexes.")]
BackgroundIndexOption = Annotated[
    bool,
    typer.Option(
        "--background-index/--no-background-index",
        envvar="SYMBOLIZE_BACKGROUND_INDEX",
        help="After answering, index the files found without an index, in a detached process, for next time.",
    ),
]

# The exit codes (module docstring), the error lines, iter_stdin_batches and default_output_path
# come from symbolize/cli/entry.py, which runs a plain lookup or profile without typer with them.

# What typer raises to end a command or report a usage error, passed through as they are. typer
# 0.2x carries its own copy of click (typer._click), older versions use click: BadParameter derives
# from that click's ClickException either way.
_CLICK_ERRORS: tuple[type[BaseException], ...] = (
    typer.Exit,
    typer.Abort,
    next(base for base in typer.BadParameter.__mro__ if base.__name__ == "ClickException"),
)



# IN or OUT spelled ``-``: stdin or stdout, as in most tools.
STDIO_PATH = "-"


class DemangleChoice(enum.StrEnum):
    full = "full"
    short = "short"
    none = "none"


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from symbolize import native_status

        typer.echo(f"symbolize {version('pprof-symbolize')}\n{native_status()}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    _version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version,
                     help="Print the version and whether the compiled kernels run, then exit."),
    ] = False,
) -> None:
    ctx.obj = {"debug": debug}


@contextmanager
def _errors_as_one_line(ctx: typer.Context) -> Iterator[None]:
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            yield
        for warning in caught:
            typer.echo(f"symbolize: warning: {warning.message}", err=True)
    except _CLICK_ERRORS:
        raise
    except (SymbolizeError, OSError) as exc:
        if (ctx.obj or {}).get("debug"):
            raise
        typer.echo(_error_line(exc), err=True)
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    except Exception as exc:
        # The one boundary for everything else: one line and its own exit code, never a traceback
        # unless asked for.
        if (ctx.obj or {}).get("debug"):
            raise
        typer.echo(_internal_error_line(exc), err=True)
        raise typer.Exit(EXIT_INTERNAL_ERROR) from None


@app.command("profile")
def profile_command(
    ctx: typer.Context,
    in_path: Annotated[Path, typer.Argument(metavar="IN", help="pprof profile, gzipped or not; - for stdin.")],
    out_path: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", metavar="OUT",
            help="Output file; - for stdout (default: IN with .symbolized before its extension; stdout for IN -)."
        ),
    ] = None,
    binaries: Annotated[
        list[Path] | None, typer.Option("--binary", metavar="FILE", help="A binary of the profile.")
    ] = None,
    search_paths: SearchPathsOption = None,
    debug_dirs: DebugDirsOption = None,
    demangle: Annotated[DemangleChoice, typer.Option("--demangle", help="Name style.")] = DemangleChoice.full,
    no_return_address_adjust: Annotated[
        bool,
        typer.Option(
            "--no-return-address-adjust", help="Look callers up at their address, not address - 1."
        ),
    ] = False,
    json_summary: Annotated[
        bool, typer.Option("--json-summary", help="Print the summary as JSON on stdout.")
    ] = False,
    drop_frames: Annotated[
        str | None,
        typer.Option(
            "--drop-frames",
            metavar="REGEX",
            help="Set the profile's drop_frames (pprof hides matching frames and their callees); "
            "the summary's top functions skip them too.",
        ),
    ] = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    background_index: BackgroundIndexOption = True,
) -> None:
    """Rewrite a profile with function names, files and lines.

    The output is gzipped when OUT ends in .gz or IN was gzipped. IN - reads stdin;
    OUT - (the default for IN -) writes stdout, whole, once the rewrite has succeeded.
    """
    from symbolize.api import symbolize_file

    if drop_frames is not None:
        try:
            re.compile(drop_frames)
        except re.error as exc:
            raise typer.BadParameter(f"not a regular expression: {exc}", param_hint="--drop-frames") from exc
    from_stdin = str(in_path) == STDIO_PATH
    to_stdout = str(out_path) == STDIO_PATH or (out_path is None and from_stdin)
    if to_stdout and json_summary:
        raise typer.BadParameter("the profile goes to stdout: --json-summary cannot", param_hint="-o")
    options: dict[str, Any] = dict(
        binaries=binaries or (),
        search_paths=search_paths or (),
        debug_dirs=debug_dirs or None,
        demangle=demangle.value,
        adjust_return_addresses=not no_return_address_adjust,
        cache_dir=cache_dir,
        use_cache=not no_cache,
        background_index=background_index,
        drop_frames=drop_frames,
    )
    with _errors_as_one_line(ctx):
        if json_summary:
            standard_output()  # refused before any work
        if from_stdin or to_stdout:
            summary = _profile_through_stdio(in_path, out_path, from_stdin, to_stdout, options)
        else:
            summary = symbolize_file(in_path, out_path or default_output_path(in_path), **options)
    if json_summary:
        typer.echo(json.dumps(summary.to_json(), indent=2))
    else:
        typer.echo(summary.format_text(), err=True)


def _profile_through_stdio(
    in_path: Path, out_path: Path | None, from_stdin: bool, to_stdout: bool, options: dict[str, Any]
) -> Summary:
    """``profile`` with ``-`` for IN (stdin) or OUT (stdout).

    The output goes to stdout in one write after the rewrite succeeded: whoever reads it
    gets a whole profile or nothing, as a file written atomically gives.
    """
    from symbolize.api import symbolize_profile
    from symbolize.pprof import parse_profile, read_profile, serialize_profile, write_profile

    output = standard_output() if to_stdout else None  # refused before any work
    if from_stdin:
        profile, was_gzipped = parse_profile(sys.stdin.buffer.read(), "<stdin>")
    else:
        profile, was_gzipped = read_profile(in_path)
    _, summary = symbolize_profile(profile, **options)
    if output is not None:
        output.buffer.write(serialize_profile(profile, gzip=was_gzipped))
        output.buffer.flush()
    else:
        assert out_path is not None  # no OUT for stdin means stdout
        write_profile(profile, out_path, gzip=was_gzipped or str(out_path).endswith(".gz"))
    return summary


class OutputStyle(enum.StrEnum):
    LLVM = "LLVM"
    GNU = "GNU"
    JSON = "JSON"


class FunctionNames(enum.StrEnum):
    linkage = "linkage"
    short = "short"
    none = "none"


@app.command("lookup")
def lookup_command(
    ctx: typer.Context,
    obj: Annotated[
        Path, typer.Option("--obj", "-e", "--exe", metavar="FILE", help="The object file (binary).")
    ],
    addresses: Annotated[
        list[str] | None, typer.Argument(metavar="[ADDR...]", help="Object addresses; else stdin.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line (our own shape).")] = False,
    inlines: Annotated[
        bool, typer.Option("--inlines/--no-inlines", help="Show inlined frames (also -i, --inlining[=BOOL]).")
    ] = True,
    demangle: Annotated[
        DemangleChoice,
        typer.Option("--demangle", help="Name style (-C and --demangle alone: full; --no-demangle: none)."),
    ] = DemangleChoice.full,
    print_addresses: Annotated[
        bool, typer.Option("-a", "--addresses", "--print-address", help="Print the address before its frames.")
    ] = False,
    pretty: Annotated[bool, typer.Option("-p", "--pretty-print", help="One line per frame.")] = False,
    output_style: Annotated[
        OutputStyle,
        typer.Option("--output-style", case_sensitive=False, help="LLVM (default) or GNU (addr2line's: no column)."),
    ] = OutputStyle.LLVM,
    functions: Annotated[
        FunctionNames,
        typer.Option(
            "--functions", help="Function names: linkage (default, also -f), short (as --demangle short), none."
        ),
    ] = FunctionNames.linkage,
    search_paths: SearchPathsOption = None,
    debug_dirs: DebugDirsOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    background_index: BackgroundIndexOption = True,
    arch: Annotated[
        str | None, typer.Option("--arch", metavar="ARCH", help="Slice of a universal Mach-O (or --obj FILE:ARCH).")
    ] = None,
) -> None:
    """Print the frames at object addresses, like llvm-symbolizer --obj.

    Addresses are hex with 0x or decimal, from the arguments or one per line on stdin (each
    line answered as it arrives); a non-address is echoed back, as llvm-symbolizer does.
    llvm-symbolizer's and addr2line's spellings work: -e/--exe, -a, -f, -C, -i, -p,
    --output-style=LLVM|GNU.
    """
    from symbolize.answer_text import PlainStyle
    from symbolize.api import lookup_text_batches

    if output_style is OutputStyle.JSON:
        raise typer.BadParameter(
            "llvm-symbolizer's JSON carries fields this tool does not read (StartAddress, StartFileName, "
            "Discriminator); --json prints our own JSON",
            param_hint="--output-style",
        )
    if as_json and (print_addresses or pretty or output_style is not OutputStyle.LLVM):
        raise typer.BadParameter("--json has its own shape: no -a, -p or --output-style", param_hint="--json")
    if functions is FunctionNames.short:
        demangle = DemangleChoice.short
    style = PlainStyle(
        gnu=output_style is OutputStyle.GNU,
        addresses=print_addresses,
        pretty=pretty,
        functions=functions is not FunctionNames.none,
    )
    # An empty argument is no question (llvm-symbolizer skips it); an empty stdin line is echoed.
    batches: Iterable[list[str]] = [[text for text in addresses or () if text.strip()]]
    if not addresses:
        batches = iter_stdin_batches(cast("io.BufferedIOBase", sys.stdin.buffer))
    with _errors_as_one_line(ctx):
        output = standard_output()  # refused before any work
        answers = lookup_text_batches(
            obj,
            batches,
            as_json=as_json,
            style=style,
            demangle=demangle.value,
            inlines=inlines,
            search_paths=search_paths or (),
            debug_dirs=debug_dirs or None,
            cache_dir=cache_dir,
            use_cache=not no_cache,
            background_index=background_index,
            arch=arch,
        )
        for text in answers:
            # One write a batch: echoing 10,000 lines one by one costs more than looking them up
            # from an index. Not through typer.echo, which scans the whole text for ANSI codes to
            # strip when stdout is not a terminal; there are none. Flushed, for whoever reads
            # through a pipe and waits for this answer before writing the next address.
            output.write(text)
            output.flush()


@app.command("index")
def index_command(
    ctx: typer.Context,
    binaries: Annotated[list[Path], typer.Argument(metavar="BINARY...", help="Binaries to index.")],
    search_paths: SearchPathsOption = None,
    debug_dirs: DebugDirsOption = None,
    cache_dir: CacheDirOption = None,
) -> None:
    """Build the persistent index of each binary and its debug files, for fast later lookups.

    Prints each index file; a binary that cannot be indexed is reported on stderr and the
    others are indexed still (exit 1 when any failed).
    """
    from symbolize.api import build_indexes

    failed = False
    with _errors_as_one_line(ctx):
        for binary in binaries:
            try:
                built = build_indexes(
                    [binary], search_paths=search_paths or (), debug_dirs=debug_dirs or None, cache_dir=cache_dir
                )
            except (SymbolizeError, OSError) as exc:
                if (ctx.obj or {}).get("debug"):
                    raise
                typer.echo(_error_line(exc), err=True)
                failed = True
                continue
            for path in built:
                typer.echo(str(path))
    if failed:
        raise typer.Exit(EXIT_INPUT_ERROR)


app.command("audit")(audit_command)

cache_app = typer.Typer(help="Show or clear the persistent index cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("show")
def cache_show_command(
    ctx: typer.Context,
    cache_dir: CacheDirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object with every index.")] = False,
) -> None:
    """List the indexes in the cache: binary, debug ID, size, age and demangler of each."""
    from symbolize.cache import cache_entries, default_cache_dir

    with _errors_as_one_line(ctx):
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
        typer.echo(f"{len(entries)} indexes, {_human_size(total)} in {directory}", err=True)


def _cache_row(entry: CacheEntry, now: float) -> tuple[str, str, str, str, str]:
    binary = str(entry.source_path) if entry.source_path else f"(unknown: {entry.path.name})"
    debug_id = entry.debug_id or ("(unreadable)" if entry.key is None else "(none: path, size, mtime)")
    return binary, debug_id, _human_size(entry.size), _human_age(now - entry.modified), entry.demangler or "?"


def _cache_json(directory: Path, entries: list[CacheEntry], now: float) -> dict[str, Any]:
    """``cache show --json``: {"cache_dir", "indexes": [{"index", "binary", "debug_id", "size",
    "built", "age_seconds", "demangler", "key"}]}; unknown values are null."""
    from datetime import UTC, datetime

    return {
        "cache_dir": str(directory),
        "indexes": [
            {
                "index": str(entry.path),
                "binary": str(entry.source_path) if entry.source_path else None,
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


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    scaled = size / 1024
    for unit in ("KiB", "MiB"):
        if scaled < 1024:
            return f"{scaled:.1f} {unit}"
        scaled /= 1024
    return f"{scaled:.1f} GiB"


def _human_age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds // length} {unit}"
    return f"{seconds} s"


@cache_app.command("clear")
def cache_clear_command(ctx: typer.Context, cache_dir: CacheDirOption = None) -> None:
    """Delete every index in the cache."""
    from symbolize.cache import clear_cache, default_cache_dir

    with _errors_as_one_line(ctx):
        directory = cache_dir or default_cache_dir()
        typer.echo(f"removed {clear_cache(directory)} files from {directory}", err=True)


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
    """``app`` with only the command ``arguments`` name (after the global options), when they name one.

    typer turns every registered command into a click command, parameter by parameter, before
    it runs any: building the one that runs is most of typer's work on a quick lookup. Help
    for the whole program (no command, ``--help``) and a mistyped command get every command.
    """
    name = next((word for word in arguments if not word.startswith("-")), None)
    commands = [command for command in app.registered_commands if command.name == name]
    groups = [group for group in app.registered_groups if group.name == name]
    if not (commands or groups):
        return app
    only = typer.Typer(**_APP_SETTINGS)
    only.registered_callback = app.registered_callback
    only.registered_commands = commands
    only.registered_groups = groups
    return only


def main() -> None:
    """Console-script entry point."""
    # One run allocates a few hundred thousand small objects (frames, names, pprof lines) that
    # live until exit. Python's cycle collector walks them again and again and finds a few
    # hundred cycles in all: on 10,000 warm lookups in the Rust benchmark binary, two full
    # passes over 170,000 objects (~40 ms each) and ~300 young ones, about 0.1 s of 0.7 s, for
    # nothing, in a process that ends when the command does. (An index build frees each unit
    # by reference counting; its peak memory is the same either way.)
    gc.disable()
    arguments = llvm_spellings(hoist_debug(sys.argv[1:]))
    try:
        app_for(arguments)(args=arguments, prog_name="symbolize")
    except Exception as exc:
        # The boundary again, for a command that does not run inside _errors_as_one_line.
        if arguments[:1] == ["--debug"]:
            raise
        print(_internal_error_line(exc), file=sys.stderr)
        sys.exit(EXIT_INTERNAL_ERROR)
    finally:
        # The interpreter's shutdown runs one last cycle collection over every object left, the
        # disabled collector or not: 0.07 s of a cold 1,000-address lookup's 0.43 s in libpython.
        # Frozen objects are not walked; they are still freed as the modules are torn down.
        gc.freeze()

"""The ``symbolize`` console script and ``python -m symbolize``: plain ``lookup`` and ``profile`` run without typer.

Importing typer (and the click it carries) and building a command takes 25-30 ms, as long as a warm
lookup of 10,000 addresses. So :func:`main` reads the plain forms itself::

    symbolize lookup --obj|-e|--exe FILE [--json] [--inlines|--no-inlines] [--demangle=MODE]
                     [--search-path DIR]... [--debug-dir DIR]... [--cache-dir DIR] [--no-cache]
                     [--background-index|--no-background-index] [--arch ARCH] [ADDR...]
    symbolize profile IN [-o|--output OUT] [--binary FILE]... [--search-path DIR]... [--debug-dir DIR]...
                      [--demangle MODE] [--no-return-address-adjust] [--json-summary] [--cache-dir DIR]
                      [--no-cache] [--background-index|--no-background-index]

(llvm-symbolizer's spellings first rewritten by :func:`symbolize.cli.spellings.llvm_spellings`, as
for typer) and runs them as ``lookup_command`` and ``profile_command`` in symbolize/cli/app.py run
them: the same calls, output, one-line errors and exit codes. Anything else hands the whole command
line to typer (:func:`symbolize.cli.app.main`), so that typer alone says what a usage error is:
another command or option (``-a``, ``-p``, ``--output-style``, ``--functions``, ``--drop-frames``,
``--help``, ``-h``), a global option (``--debug``, ``--version``), an option given twice or without
its value, a value that starts with ``-`` (stdin and stdout spelled ``-`` included) or is empty,
``--``, not one profile, a ``SYMBOLIZE_BACKGROUND_INDEX`` that is no boolean click reads, or shell
completion's variable. tests/test_cli_entry.py runs command lines both ways and compares stdout,
stderr and the exit code.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from symbolize.cli.spellings import DEMANGLE_MODES, llvm_spellings

if TYPE_CHECKING:
    from symbolize.summary import Summary

# Names of profile files' extensions, kept after ``.symbolized`` in the default output name.
PROFILE_SUFFIXES = (".gz", ".pb", ".pprof", ".prof", ".proto")

# Exit codes (symbolize/cli/app.py's module docstring).
EXIT_INPUT_ERROR = 1
EXIT_INTERNAL_ERROR = 70

# --background-index/--no-background-index's environment variable, read as click reads a boolean
# (an empty value is no value; other spellings are typer's to refuse), and shell completion's.
BACKGROUND_INDEX_VARIABLE = "SYMBOLIZE_BACKGROUND_INDEX"
_BOOLEANS = {"1": True, "true": True, "t": True, "yes": True, "y": True, "on": True,
             "0": False, "false": False, "f": False, "no": False, "n": False, "off": False}  # fmt: skip
_COMPLETION_VARIABLE = "_SYMBOLIZE_COMPLETE"

# click.echo drops ANSI escape sequences from text written to a stream that is not a terminal.
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def error_line(exc: BaseException) -> str:
    """The one line an input's error (a SymbolizeError or OSError) prints; an OSError names its file."""
    message = str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        message = f"{exc.filename}: {(exc.strerror or message).lower()}"  # not "[Errno 2] ..."
    message = message.replace("\n", " ")
    return f"symbolize: error: {message}"


def internal_error_line(exc: BaseException) -> str:
    message = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return f"symbolize: error: internal error: {message} (--debug shows the traceback)"


def standard_output() -> TextIO:
    """``sys.stdout``; a SymbolizeError (one line, exit 1: an output error) when the process was
    started with it closed (``>&-``), where Python leaves ``sys.stdout`` None."""
    if sys.stdout is None:
        from symbolize.errors import SymbolizeError

        raise SymbolizeError("cannot write: closed", "<stdout>")
    return sys.stdout


def iter_stdin_batches(stream: Any) -> Iterator[list[str]]:
    """The lines of ``stream`` (a buffered binary stream), in batches of those already arrived;
    never waits for more.

    ``read1`` returns what is buffered or can be read at once, so a line written to a pipe
    is handed on before the writer sends the next (llvm-symbolizer answers a pipe this way).
    A line longer than a chunk is kept in pieces and joined once, when its newline arrives:
    joining each chunk to all before it made one long line cost its length squared.
    """
    pending: list[bytes] = []
    while chunk := stream.read1(1 << 16):
        if b"\n" not in chunk:
            pending.append(chunk)
            continue
        first, *complete, rest = chunk.split(b"\n")
        pending.append(first)
        lines = [b"".join(pending), *complete]
        pending = [rest] if rest else []
        yield [line.decode("utf-8", "replace").strip() for line in lines]
    if pending:
        yield [b"".join(pending).decode("utf-8", "replace").strip()]


class PlainLookup(NamedTuple):
    """The options of a plain ``lookup`` command line, as typer would hand them to ``lookup_command``."""

    obj: Path
    addresses: list[str]
    as_json: bool = False
    inlines: bool = True
    demangle: str = "full"
    search_paths: tuple[Path, ...] = ()
    debug_dirs: tuple[Path, ...] = ()
    cache_dir: Path | None = None
    no_cache: bool = False
    background_index: bool = True
    arch: str | None = None


class PlainProfile(NamedTuple):
    """The options of a plain ``profile`` command line (files in and out, no ``--drop-frames``), as
    typer would hand them to ``profile_command``."""

    in_path: Path
    out_path: Path | None = None
    binaries: tuple[Path, ...] = ()
    search_paths: tuple[Path, ...] = ()
    debug_dirs: tuple[Path, ...] = ()
    demangle: str = "full"
    no_return_address_adjust: bool = False
    json_summary: bool = False
    cache_dir: Path | None = None
    no_cache: bool = False
    background_index: bool = True


# Option word -> (field, value for a flag; None when the option takes the next word), per command.
_SHARED: dict[str, tuple[str, bool | None]] = {
    "--demangle": ("demangle", None),
    "--search-path": ("search_paths", None),
    "--debug-dir": ("debug_dirs", None),
    "--cache-dir": ("cache_dir", None),
    "--no-cache": ("no_cache", True),
    "--background-index": ("background_index", True),
    "--no-background-index": ("background_index", False),
}
_OPTIONS: dict[str, dict[str, tuple[str, bool | None]]] = {
    "lookup": {
        **_SHARED,
        "--obj": ("obj", None),
        "-e": ("obj", None),
        "--exe": ("obj", None),
        "--json": ("as_json", True),
        "--inlines": ("inlines", True),
        "--no-inlines": ("inlines", False),
        "--arch": ("arch", None),
    },
    "profile": {
        **_SHARED,
        "-o": ("out_path", None),
        "--output": ("out_path", None),
        "--binary": ("binaries", None),
        "--no-return-address-adjust": ("no_return_address_adjust", True),
        "--json-summary": ("json_summary", True),
    },
}
_REPEATABLE = frozenset({"search_paths", "debug_dirs", "binaries"})
_PATHS = frozenset({"obj", "cache_dir", "out_path"})
# Long options that take a value may join it with "=", as click reads them (a short one may not).
_JOINED = frozenset(
    {"--obj", "--exe", "--demangle", "--search-path", "--debug-dir", "--cache-dir", "--arch", "--output", "--binary"}
)


def plain_command(arguments: list[str]) -> PlainLookup | PlainProfile | None:
    """The plain lookup or profile ``arguments`` (already through ``llvm_spellings``) ask for; None
    for anything typer should read (module docstring)."""
    options = _OPTIONS.get(arguments[0]) if arguments else None
    if options is None or _COMPLETION_VARIABLE in os.environ:
        return None
    given: dict[str, Any] = {}
    positionals: list[str] = []
    words = iter(arguments[1:])
    for word in words:
        if not word.startswith("-"):
            positionals.append(word)
            continue
        name, joined, value = word.partition("=")
        if joined and name not in _JOINED:
            return None
        found = options.get(name)
        if found is None:
            return None
        field, flag = found
        if flag is not None:
            if field in given:
                return None
            given[field] = flag
            continue
        if not joined:
            value = next(words, "")
        if not value or value.startswith("-"):
            return None
        if field in _REPEATABLE:
            given.setdefault(field, []).append(Path(value))
        elif field in given:
            return None
        else:
            given[field] = Path(value) if field in _PATHS else value
    if given.get("demangle", "full") not in DEMANGLE_MODES:
        return None
    for field in _REPEATABLE:
        if field in given:
            given[field] = tuple(given[field])
    configured = os.environ.get(BACKGROUND_INDEX_VARIABLE)
    if configured and "background_index" not in given:  # the command line wins over the variable
        background_index = _BOOLEANS.get(configured.strip().lower())
        if background_index is None:
            return None
        given["background_index"] = background_index
    if arguments[0] == "lookup":
        return PlainLookup(addresses=positionals, **given) if "obj" in given else None
    if len(positionals) != 1 or not positionals[0]:
        return None
    return PlainProfile(Path(positionals[0]), **given)


def plain_lookup(arguments: list[str]) -> PlainLookup | None:
    """:func:`plain_command` for a lookup; None for anything else."""
    command = plain_command(arguments)
    return command if isinstance(command, PlainLookup) else None


def run_plain(command: PlainLookup | PlainProfile) -> int:
    """Run ``command`` as ``lookup_command`` or ``profile_command`` runs it; returns the exit code."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            summary = None
            if isinstance(command, PlainLookup):
                _answer(command)
            else:
                summary = _profile(command)
        for warning in caught:
            _echo_error(f"symbolize: warning: {warning.message}")
    except (EOFError, KeyboardInterrupt):
        _echo_error("")  # click's Abort, as typer's standalone mode reports it
        _echo_error("Aborted!")
        return EXIT_INPUT_ERROR
    except Exception as exc:
        from symbolize.errors import SymbolizeError

        if isinstance(exc, SymbolizeError | OSError):
            _echo_error(error_line(exc))
            return EXIT_INPUT_ERROR
        _echo_error(internal_error_line(exc))
        return EXIT_INTERNAL_ERROR
    if summary is None:
        return 0
    # profile_command prints the summary after the rewrite's boundary: a failure here is the
    # program's, as symbolize/cli/app.py's main reports it.
    try:
        if isinstance(command, PlainProfile) and command.json_summary:
            import json

            _echo(standard_output(), json.dumps(summary.to_json(), indent=2))
        else:
            _echo_error(summary.format_text())
    except (EOFError, KeyboardInterrupt):
        _echo_error("")
        _echo_error("Aborted!")
        return EXIT_INPUT_ERROR
    except Exception as exc:
        from symbolize.errors import SymbolizeError

        if isinstance(exc, SymbolizeError):  # stdout closed
            _echo_error(error_line(exc))
            return EXIT_INPUT_ERROR
        print(internal_error_line(exc), file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    return 0


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


def _profile(command: PlainProfile) -> Summary:
    from symbolize.api import symbolize_file

    if command.json_summary:
        standard_output()  # refused before any work
    return symbolize_file(
        command.in_path,
        command.out_path or default_output_path(command.in_path),
        binaries=command.binaries,
        search_paths=command.search_paths,
        debug_dirs=command.debug_dirs or None,
        demangle=command.demangle,  # type: ignore[arg-type]  # one of DEMANGLE_MODES, checked
        adjust_return_addresses=not command.no_return_address_adjust,
        cache_dir=command.cache_dir,
        use_cache=not command.no_cache,
        background_index=command.background_index,
        drop_frames=None,
    )


def _answer(command: PlainLookup) -> None:
    from symbolize.answer_text import PlainStyle
    from symbolize.api import lookup_text_batches

    output = standard_output()  # refused before any work
    # An empty argument is no question (llvm-symbolizer skips it); an empty stdin line is echoed.
    batches: Iterable[list[str]] = [[text for text in command.addresses if text.strip()]]
    if not command.addresses:
        batches = iter_stdin_batches(sys.stdin.buffer)
    answers = lookup_text_batches(
        command.obj,
        batches,
        as_json=command.as_json,
        style=PlainStyle(),
        demangle=command.demangle,  # type: ignore[arg-type]  # one of DEMANGLE_MODES, checked
        inlines=command.inlines,
        search_paths=command.search_paths,
        debug_dirs=command.debug_dirs or None,
        cache_dir=command.cache_dir,
        use_cache=not command.no_cache,
        background_index=command.background_index,
        arch=command.arch,
    )
    for text in answers:
        output.write(text)
        output.flush()


def _echo_error(line: str) -> None:
    """``typer.echo(line, err=True)``."""
    _echo(sys.stderr, line)


def _echo(stream: Any, line: str) -> None:
    """``typer.echo(line)`` to ``stream``."""
    if "\033" in line and not _is_terminal(stream):
        line = _ANSI.sub("", line)
    stream.write(line + "\n")
    stream.flush()


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False


def main() -> None:
    """Console-script entry point."""
    # One run allocates a few hundred thousand small objects (frames, names, pprof lines) that
    # live until exit; the cycle collector would walk them again and again for nothing, in a
    # process that ends when the command does (symbolize/cli/app.py says how much).
    gc.disable()
    try:
        command = plain_command(llvm_spellings(sys.argv[1:]))
        if command is None:
            from symbolize.cli.app import main as typer_main

            typer_main()
            return
        code = run_plain(command)
        if code:
            sys.exit(code)
    finally:
        # The interpreter's shutdown still runs one cycle collection over every object left
        # (symbolize/cli/app.py's main says how much that costs); frozen objects are not walked.
        gc.freeze()

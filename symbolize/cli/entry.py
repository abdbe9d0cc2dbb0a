"""The ``symbolize`` console script and ``python -m symbolize``: a plain ``lookup`` runs without typer.

Importing typer (and the click it carries) and building a command takes 25-30 ms, as long as a warm
lookup of 10,000 addresses. So :func:`main` reads the plain lookup form itself::

    symbolize lookup --obj|-e|--exe FILE [--json] [--inlines|--no-inlines] [--demangle=MODE]
                     [--search-path DIR]... [--debug-dir DIR]... [--cache-dir DIR] [--no-cache]
                     [--background-index|--no-background-index] [--arch ARCH] [ADDR...]

(llvm-symbolizer's spellings first rewritten by :func:`symbolize.cli.spellings.llvm_spellings`, as
for typer) and runs it as ``lookup_command`` in symbolize/cli/app.py runs it: the same calls, output,
one-line errors and exit codes. Anything else hands the whole command line to typer
(:func:`symbolize.cli.app.main`), so that typer alone says what a usage error is: another
command or option (``-a``, ``-p``, ``--output-style``, ``--functions``, ``--help``), a global
option (``--debug``, ``--version``), an option given twice or without its value, a value that
starts with ``-`` or is empty, ``--``, a ``SYMBOLIZE_BACKGROUND_INDEX`` that is no boolean click
reads, or shell completion's variable. tests/test_cli_entry.py runs command lines
both ways and compares stdout, stderr and the exit code.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from symbolize.cli.spellings import DEMANGLE_MODES, llvm_spellings

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


def iter_stdin_batches(stream: Any) -> Iterator[list[str]]:
    """The lines of ``stream`` (a buffered binary stream), in batches of those already arrived;
    never waits for more.

    ``read1`` returns what is buffered or can be read at once, so a line written to a pipe
    is handed on before the writer sends the next (llvm-symbolizer answers a pipe this way).
    """
    pending = b""
    while chunk := stream.read1(1 << 16):
        *complete, pending = (pending + chunk).split(b"\n")
        if complete:
            yield [line.decode("utf-8", "replace").strip() for line in complete]
    if pending:
        yield [pending.decode("utf-8", "replace").strip()]


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


# Option word -> (field, value for a flag; None when the option takes the next word).
_FLAGS: dict[str, tuple[str, bool | None]] = {
    "--obj": ("obj", None),
    "-e": ("obj", None),
    "--exe": ("obj", None),
    "--json": ("as_json", True),
    "--inlines": ("inlines", True),
    "--no-inlines": ("inlines", False),
    "--demangle": ("demangle", None),
    "--search-path": ("search_paths", None),
    "--debug-dir": ("debug_dirs", None),
    "--cache-dir": ("cache_dir", None),
    "--no-cache": ("no_cache", True),
    "--background-index": ("background_index", True),
    "--no-background-index": ("background_index", False),
    "--arch": ("arch", None),
}
_REPEATABLE = frozenset({"search_paths", "debug_dirs"})
_PATHS = frozenset({"obj", "cache_dir"})
# Long options that take a value may join it with "=", as click reads them.
_JOINED = frozenset({"--obj", "--exe", "--demangle", "--search-path", "--debug-dir", "--cache-dir", "--arch"})


def plain_lookup(arguments: list[str]) -> PlainLookup | None:
    """The plain lookup ``arguments`` (already through ``llvm_spellings``) ask for; None for anything
    typer should read (module docstring)."""
    if arguments[:1] != ["lookup"] or _COMPLETION_VARIABLE in os.environ:
        return None
    given: dict[str, Any] = {}
    addresses: list[str] = []
    words = iter(arguments[1:])
    for word in words:
        if not word.startswith("-"):
            addresses.append(word)
            continue
        name, joined, value = word.partition("=")
        if joined and name not in _JOINED:
            return None
        found = _FLAGS.get(name)
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
    if "obj" not in given or given.get("demangle", "full") not in DEMANGLE_MODES:
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
    return PlainLookup(addresses=addresses, **given)


def run_plain_lookup(command: PlainLookup) -> int:
    """Run ``command`` as ``lookup_command`` runs it; returns the exit code."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            _answer(command)
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
    return 0


def _answer(command: PlainLookup) -> None:
    from symbolize.answer_text import PlainStyle
    from symbolize.api import lookup_text_batches

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
        sys.stdout.write(text)
        sys.stdout.flush()


def _echo_error(line: str) -> None:
    """``typer.echo(line, err=True)``."""
    stream = sys.stderr
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
        command = plain_lookup(llvm_spellings(sys.argv[1:]))
        if command is None:
            from symbolize.cli.app import main as typer_main

            typer_main()
            return
        code = run_plain_lookup(command)
        if code:
            sys.exit(code)
    finally:
        # The interpreter's shutdown still runs one cycle collection over every object left
        # (symbolize/cli/app.py's main says how much that costs); frozen objects are not walked.
        gc.freeze()

"""The ``symbolize`` console script and ``python -m symbolize``: plain ``lookup`` and ``profile`` run without typer.

Importing typer (and the click it carries) and building a command takes 25-30 ms, as long as a warm
lookup of 10,000 addresses. So :func:`main` reads the plain forms itself, by the same declarations
typer builds its options from (symbolize/cli/options.py: names, defaults, choices, the environment
variable), after llvm-symbolizer's spellings are rewritten by
:func:`symbolize.cli.spellings.llvm_spellings` as for typer, and runs them as typer's commands do
(symbolize/cli/commands.py). It reads a command line only where click would read it the same way;
anything else hands the whole command line to typer (:func:`symbolize.cli.app.main`), so that typer
alone says what a usage error is: another command, an option only typer reads (``-a``, ``-p``,
``--output-style``, ``--functions``, ``--drop-frames``), ``--help``, ``-h``, a global option
(``--debug``, ``--version``), an option given twice or without its value, a value that starts with
``-`` (stdin and stdout spelled ``-`` included) or is empty, ``--``, not one profile, a value that is
not one of its choices, a ``SYMBOLIZE_BACKGROUND_INDEX`` that is no boolean click reads, or shell
completion's variable. tests/test_cli_entry.py runs command lines both ways and compares stdout,
stderr and the exit code.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symbolize.cli.commands import LookupRequest, echo, lookup_usage_problem, run_lookup
from symbolize.cli.exits import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, internal_error_line
from symbolize.cli.options import LOOKUP_OPTIONS, PROFILE_OPTIONS, CliOption, Kind
from symbolize.cli.spellings import llvm_spellings

if TYPE_CHECKING:
    from symbolize.cli.profile_command import ProfileRequest

# A boolean environment variable, read as click reads one (an empty value is no value; other
# spellings are typer's to refuse), and shell completion's variable.
_BOOLEANS = {"1": True, "true": True, "t": True, "yes": True, "y": True, "on": True,
             "0": False, "false": False, "f": False, "no": False, "n": False, "off": False}  # fmt: skip
_COMPLETION_VARIABLE = "_SYMBOLIZE_COMPLETE"


def _words(options: tuple[CliOption, ...]) -> dict[str, tuple[CliOption, bool | None]]:
    """Option word -> (its declaration, the value a flag or switch word sets; None when it takes the
    next word), for the options the plain path reads."""
    words: dict[str, tuple[CliOption, bool | None]] = {}
    for declared in options:
        if not declared.plain:
            continue
        for name in declared.names:
            words[name] = (declared, None if declared.takes_value else True)
        for name in declared.off_names:
            words[name] = (declared, False)
    return words


def _command(name: str) -> tuple[type[LookupRequest | ProfileRequest], tuple[CliOption, ...]] | None:
    """The request and the declarations of the plain command ``name``; None for another command.
    profile's request comes from its own module, imported only for a profile command line."""
    if name == "lookup":
        return LookupRequest, LOOKUP_OPTIONS
    if name == "profile":
        from symbolize.cli.profile_command import ProfileRequest

        return ProfileRequest, PROFILE_OPTIONS
    return None


def plain_command(arguments: list[str]) -> LookupRequest | ProfileRequest | None:
    """The plain lookup or profile ``arguments`` (already through ``llvm_spellings``) ask for; None
    for anything typer should read (module docstring)."""
    command = _command(arguments[0]) if arguments else None
    if command is None or _COMPLETION_VARIABLE in os.environ:
        return None
    request, options = command
    words = _words(options)
    given: dict[str, Any] = {}
    positionals: list[str] = []
    remaining = iter(arguments[1:])
    for word in remaining:
        if not word.startswith("-"):
            positionals.append(word)
            continue
        name, joined, value = word.partition("=")
        found = words.get(name)
        # Long options that take a value may join it with "=", as click reads them (a short one may not).
        if found is None or (joined and (found[1] is not None or not name.startswith("--"))):
            return None
        declared, flag = found
        if flag is not None:
            if declared.field in given:
                return None
            given[declared.field] = flag
            continue
        if not joined:
            value = next(remaining, "")
        if not value or value.startswith("-"):
            return None
        if declared.repeatable:
            word_value = Path(value) if declared.kind is Kind.PATHS else value
            given[declared.field] = (*given.get(declared.field, ()), word_value)
        elif declared.field in given or (declared.kind is Kind.CHOICE and value not in declared.choices):
            return None
        else:
            given[declared.field] = Path(value) if declared.kind is Kind.PATH else value
    for declared in options:
        configured = os.environ.get(declared.envvar) if declared.envvar else None
        if configured and declared.field not in given:  # the command line wins over the variable
            if declared.kind is Kind.TEXT:  # a value as it is (--index-store's URL)
                given[declared.field] = configured
                continue
            switched = _BOOLEANS.get(configured.strip().lower()) if declared.kind is Kind.SWITCH else None
            if switched is None:
                return None
            given[declared.field] = switched
    for declared in options:
        if declared.kind is Kind.ARGUMENT:  # one word, a path
            if len(positionals) != 1 or not positionals[0]:
                return None
            given[declared.field] = Path(positionals[0])
        elif declared.kind is Kind.ARGUMENTS:
            given[declared.field] = positionals
        elif declared.required and declared.field not in given:
            return None
    built = request(**given)
    if isinstance(built, LookupRequest) and lookup_usage_problem(built) is not None:
        return None  # typer's usage error
    return built


def plain_lookup(arguments: list[str]) -> LookupRequest | None:
    """:func:`plain_command` for a lookup; None for anything else."""
    command = plain_command(arguments)
    return command if isinstance(command, LookupRequest) else None


def run_plain(command: LookupRequest | ProfileRequest) -> int:
    """Run ``command`` as typer's ``lookup`` or ``profile`` runs it; returns the exit code.

    What escapes the commands' error boundary is reported as click and symbolize/cli/app.py's
    main report it: an interrupt as "Aborted!", anything else as an internal error.
    """
    try:
        if isinstance(command, LookupRequest):
            return run_lookup(command, process_ends=True)  # main() leaves at once (leave_now)
        from symbolize.cli.profile_command import run_profile  # imported already by plain_command

        return run_profile(command)
    except (EOFError, KeyboardInterrupt):
        echo("", err=True)
        echo("Aborted!", err=True)
        return EXIT_INPUT_ERROR
    except Exception as exc:
        print(internal_error_line(exc), file=sys.stderr)
        return EXIT_INTERNAL_ERROR


def leave_now(code: int) -> None:
    """End the process with ``code`` without the interpreter's teardown, which frees every object
    of the run one by one (a cold lookup's decoded units, ~3 % of its instructions) and closes
    files the system closes anyway: llvm-symbolizer's -disable-free. What an exit does that
    matters is done first: the ``atexit`` functions, then stdout and stderr flushed; every output
    file is already written and renamed (the commands return only then).

    Returns, for the usual exit, when another thread is alive (the usual exit waits for it) or a
    standard stream does not flush (the usual exit reports it and sets the code).
    """
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def main() -> None:
    """Console-script entry point."""
    # One run allocates a few hundred thousand small objects (frames, names, pprof lines) that
    # live until exit. Python's cycle collector walks them again and again and finds a few
    # hundred cycles in all: on 10,000 warm lookups in the Rust benchmark binary, two full
    # passes over 170,000 objects (~40 ms each) and ~300 young ones, about 0.1 s of 0.7 s, for
    # nothing, in a process that ends when the command does. (An index build frees each unit
    # by reference counting; its peak memory is the same either way.)
    gc.disable()
    try:
        command = plain_command(llvm_spellings(sys.argv[1:]))
        if command is None:
            from symbolize.cli.app import main as typer_main

            typer_main()
            return
        code = run_plain(command)
        leave_now(code)
        if code:
            sys.exit(code)
    finally:
        # The interpreter's shutdown runs one last cycle collection over every object left, the
        # disabled collector or not: 0.07 s of a cold 1,000-address lookup's 0.43 s in libpython.
        # Frozen objects are not walked; they are still freed as the modules are torn down.
        gc.freeze()

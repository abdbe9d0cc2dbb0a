"""What ``lookup`` does once its command line is read, by typer (symbolize/cli/app.py) or without it
(symbolize/cli/entry.py): the same calls of the API, output, one-line errors and exit codes; and what
every command shares (the error boundary, echo, the servers asked). ``profile``'s own part is in
symbolize/cli/profile_command.py.

Nothing here imports typer. The request's defaults are the declarations' (symbolize/cli/options.py).
"""

import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol, TextIO

from symbolize.cli.exits import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, error_line, internal_error_line
from symbolize.cli.options import LOOKUP_OPTIONS, option

if TYPE_CHECKING:
    from symbolize.progress import ProgressReport
    from symbolize.remote.options import RemoteOptions
    from symbolize.remote.progress import DownloadProgress

# IN or OUT spelled ``-``: stdin or stdout, as in most tools.
STDIO_PATH = "-"

# click.echo drops ANSI escape sequences from text written to a stream that is not a terminal.
# A pattern, compiled (and cached by re) when a line first has one: not on every start-up.
_ANSI = r"\033\[[;?0-9]*[a-zA-Z]"


class LookupRequest(NamedTuple):
    """``lookup``'s options, one field per declaration in LOOKUP_OPTIONS, in its order."""

    obj: Path | None = option(LOOKUP_OPTIONS, "obj").default
    addresses: Sequence[str] | None = option(LOOKUP_OPTIONS, "addresses").default
    as_json: bool = option(LOOKUP_OPTIONS, "as_json").default
    inlines: bool = option(LOOKUP_OPTIONS, "inlines").default
    demangle: str = option(LOOKUP_OPTIONS, "demangle").default
    print_addresses: bool = option(LOOKUP_OPTIONS, "print_addresses").default
    pretty: bool = option(LOOKUP_OPTIONS, "pretty").default
    output_style: str = option(LOOKUP_OPTIONS, "output_style").default
    functions: str = option(LOOKUP_OPTIONS, "functions").default
    relative_address: bool = option(LOOKUP_OPTIONS, "relative_address").default
    adjust_vma: str | None = option(LOOKUP_OPTIONS, "adjust_vma").default
    basenames: bool = option(LOOKUP_OPTIONS, "basenames").default
    relativenames: bool = option(LOOKUP_OPTIONS, "relativenames").default
    verbose: bool = option(LOOKUP_OPTIONS, "verbose").default
    context_lines: str | None = option(LOOKUP_OPTIONS, "context_lines").default
    search_paths: Sequence[Path] | None = option(LOOKUP_OPTIONS, "search_paths").default
    debug_dirs: Sequence[Path] | None = option(LOOKUP_OPTIONS, "debug_dirs").default
    cache_dir: Path | None = option(LOOKUP_OPTIONS, "cache_dir").default
    no_cache: bool = option(LOOKUP_OPTIONS, "no_cache").default
    background_index: bool = option(LOOKUP_OPTIONS, "background_index").default
    index_store: str | None = option(LOOKUP_OPTIONS, "index_store").default
    arch: str | None = option(LOOKUP_OPTIONS, "arch").default
    debuginfod: Sequence[str] | None = option(LOOKUP_OPTIONS, "debuginfod").default
    symbol_servers: Sequence[str] | None = option(LOOKUP_OPTIONS, "symbol_servers").default
    remote: bool = option(LOOKUP_OPTIONS, "remote").default
    offline: bool = option(LOOKUP_OPTIONS, "offline").default


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
        end = chunk.rfind(b"\n")
        if end < 0:
            pending.append(chunk)
            continue
        pending.append(chunk[:end])
        # Decoded as one text, then cut and stripped in C: a newline is never part of a UTF-8
        # sequence, so this is each line decoded alone (its bad bytes replaced within it).
        block = b"".join(pending).decode("utf-8", "replace")
        pending = [chunk[end + 1 :]] if end + 1 < len(chunk) else []
        yield list(map(str.strip, block.split("\n")))
    if pending:
        yield [b"".join(pending).decode("utf-8", "replace").strip()]


def echo(line: str, *, err: bool = False) -> None:
    """``typer.echo(line, err=err)``: a line and a flush; ANSI codes dropped unless to a terminal."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # closed (``>&-``): click.echo writes nothing then
        return
    if "\033" in line and not _is_terminal(stream):
        line = re.sub(_ANSI, "", line)
    stream.write(line + "\n")
    stream.flush()


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except Exception:
        return False


def run_guarded(work: Callable[[], None], *, debug: bool = False) -> int:
    """Run ``work`` inside the command line's one error boundary; returns the exit code.

    RuntimeWarnings print as ``symbolize: warning:`` lines once ``work`` is done; an input's error
    (SymbolizeError, OSError) prints one line and gives EXIT_INPUT_ERROR, anything else its own
    line and EXIT_INTERNAL_ERROR, never a traceback unless ``debug`` (``--debug``) asks for one.
    KeyboardInterrupt is no Exception: it goes on up (click's "Aborted!").
    """
    from symbolize.errors import SymbolizeError

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            work()
        for warning in caught:
            echo(f"symbolize: warning: {warning.message}", err=True)
    except (SymbolizeError, OSError) as exc:
        if debug:
            raise
        echo(error_line(exc), err=True)
        return EXIT_INPUT_ERROR
    except Exception as exc:
        if debug:
            raise
        echo(internal_error_line(exc), err=True)
        return EXIT_INTERNAL_ERROR
    return 0


def use_index_store(url: str | None) -> None:
    """Use the index store ``--index-store`` names, in this run and the builders it starts (nothing
    is imported for a run that names none)."""
    if url:
        from symbolize.index_store.config import configure_index_store

        configure_index_store(url)


if TYPE_CHECKING:  # for mypy alone: the plain path's start-up builds no Protocol class for it

    class RemoteRequest(Protocol):
        """What a command's request says about servers (lookup's, profile's and batch's requests)."""

        @property
        def debuginfod(self) -> Sequence[str] | None: ...
        @property
        def symbol_servers(self) -> Sequence[str] | None: ...
        @property
        def remote(self) -> bool: ...
        @property
        def offline(self) -> bool: ...
        @property
        def cache_dir(self) -> Path | None: ...


def requested_remote(request: "RemoteRequest") -> "RemoteOptions | None":
    """The servers and download caches ``request`` asks for (``--debuginfod``, ``--symbol-server``,
    ``--remote``, ``--offline``); None when none. A URL that is not http(s) raises SymbolizeError."""
    from symbolize.api import remote_options

    return remote_options(
        debuginfod_urls=request.debuginfod or (),
        symbol_servers=request.symbol_servers or (),
        from_environment=request.remote,
        offline=request.offline,
        cache_dir=request.cache_dir,
    )


def download_progress(remote: "RemoteOptions | None", bar: "ProgressReport | None" = None) -> "DownloadProgress | None":
    """One line per download on stderr when it is a terminal (in ``bar``'s display, the run's own
    progress bar, when it has one) and servers may be asked; else None."""
    if remote is None or not remote.network:
        return None
    from symbolize.remote.progress import stderr_download_progress

    return stderr_download_progress(bar)


def lookup_usage_problem(request: LookupRequest) -> tuple[str, str] | None:
    """What is wrong with ``request``'s mix of options, as (the option, why); None when nothing is.
    typer's command reports it as a usage error (the plain path hands such a command line to typer)."""
    from symbolize.cli.llvm_input import parse_number

    if request.as_json and (
        request.print_addresses or request.pretty or request.output_style.upper() != "LLVM" or request.verbose
        or request.basenames or request.relativenames or request.context_lines is not None
        or request.relative_address or request.adjust_vma is not None or request.obj is None
    ):  # fmt: skip
        return "--json", (
            "--json has its own shape, for --obj: no -a, -p, -s, --relativenames, --verbose, --relative-address, "
            "--adjust-vma, --print-source-context-lines or --output-style (--output-style=JSON is llvm-symbolizer's "
            "shape)"
        )
    if request.adjust_vma is not None and parse_number(request.adjust_vma) is None:
        return "--adjust-vma", f"expected a number (0x hex, 0 octal or decimal), got {request.adjust_vma!r}"
    if request.context_lines is not None and not request.context_lines.isdecimal():
        return "--print-source-context-lines", f"expected a non-negative integer, got {request.context_lines!r}"
    return None


def run_lookup(request: LookupRequest, *, debug: bool = False, process_ends: bool = False) -> int:
    """``lookup``: the frames at ``request``'s addresses on stdout; returns the exit code.
    ``process_ends``: the process exits right after, without teardown (the session's files are
    left open, its decoded state unfreed: ``Session``'s ``process_ends``).

    The output options' mix is checked before (:func:`lookup_usage_problem`, typer's usage error).
    With ``--obj`` the file is opened before any input is read (an error there exits 1); files that
    input lines name are opened as they come, each once, an error said on stderr and answered as
    llvm-symbolizer answers it.
    """
    from symbolize.answer_text import PlainStyle
    from symbolize.api import Session
    from symbolize.cli.llvm_input import parse_number
    from symbolize.cli.llvm_protocol import LlvmAnswers, LlvmOutput, lookup_answers

    style = PlainStyle(
        gnu=request.output_style.upper() == "GNU",
        addresses=request.print_addresses,
        pretty=request.pretty,
        functions=request.functions != "none",
    )
    output = LlvmOutput(
        obj=None if request.obj is None else str(request.obj),
        as_json=request.output_style.upper() == "JSON",
        style=style,
        inlines=request.inlines,
        show_functions=request.functions != "none",
        symbol_starts=request.functions == "linkage",
        relative_address=request.relative_address,
        adjust_vma=parse_number(request.adjust_vma) or 0 if request.adjust_vma is not None else 0,
        basenames=request.basenames,
        relative_names=request.relativenames,
        verbose=request.verbose,
        context_lines=int(request.context_lines or 0),
        our_json=request.as_json,
    )
    demangle = "short" if request.functions == "short" else request.demangle
    # An empty argument is no question (llvm-symbolizer skips it); an empty stdin line is echoed.
    arguments = [text for text in request.addresses or () if text.strip()]

    def answer() -> None:
        out = standard_output()  # refused before any work
        use_index_store(request.index_store)
        remote = requested_remote(request)
        downloads = download_progress(remote)
        session = Session(
            search_paths=request.search_paths or (),
            debug_dirs=request.debug_dirs or None,
            cache_dir=request.cache_dir,
            use_cache=not request.no_cache,
            background_index=request.background_index,
            demangle=demangle,  # type: ignore[arg-type]  # one of the declared choices
            inlines=request.inlines,
            remote=remote,
            download_progress=downloads,
            process_ends=process_ends,
        )
        try:
            _answer_lookup(session, out)
        finally:
            if downloads is not None:
                downloads.close()  # erased before the report and any error line
        for line in session.download_report:
            echo(line, err=True)

    def _answer_lookup(session: Session, out: TextIO) -> None:
        answers = LlvmAnswers(session, output, request.arch)
        if output.obj is not None:
            answers.open_obj(output.obj)  # its error is the command's (exit 1), before any input
        stdin = iter_stdin_batches(sys.stdin.buffer) if not request.addresses else iter(())
        for text in lookup_answers(answers, arguments if request.addresses else None, stdin):
            # One write a batch: echoing 10,000 lines one by one costs more than looking them up
            # from an index. Not through echo, which scans the whole text for ANSI codes to
            # strip when stdout is not a terminal; there are none. Flushed, for whoever reads
            # through a pipe and waits for this answer before writing the next address.
            out.write(text)
            out.flush()

    return run_guarded(answer, debug=debug)



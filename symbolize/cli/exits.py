"""The command line's exit codes and the one line an error prints (README "Commands": errors).

0 done; 1 an error the input caused (a SymbolizeError or OSError: one line
``symbolize: error: <message>``); 2 a usage error (typer's, or a check of ours reported as one);
70 (sysexits' EX_SOFTWARE) an internal error, any other exception (a bug, or an input that found
one: one line ``symbolize: error: internal error: <type>: <message>``). ``profile``'s gates, once
the output is written: 4 ``--fail-unnamed-above`` (a sample type's unnamed share is above the
limit), 5 ``--require-verified`` (a mapping's binary was matched by file name only); 4 when both
trip. ``audit`` has its own codes besides (symbolize/cli/audit.py). Nothing here imports typer:
the plain lookup and profile (symbolize/cli/entry.py) print the same lines without it.
"""

from __future__ import annotations

EXIT_INPUT_ERROR = 1
EXIT_UNNAMED_ABOVE = 4
EXIT_UNVERIFIED = 5
EXIT_INTERNAL_ERROR = 70


def error_line(exc: BaseException) -> str:
    """The one line an input's error (a SymbolizeError or OSError) prints; an OSError names its file."""
    message = str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        message = f"{exc.filename}: {(exc.strerror or message).lower()}"  # not "[Errno 2] ..."
    message = message.replace("\n", " ")
    return f"symbolize: error: {message}"


def internal_error_line(exc: BaseException) -> str:
    """The one line any other exception prints (``--debug`` shows its traceback instead)."""
    message = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return f"symbolize: error: internal error: {message} (--debug shows the traceback)"

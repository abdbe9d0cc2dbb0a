"""Progress of long work (``symbolize index``, a cold ``profile``) on stderr, drawn only on a terminal.

Building the index of a large binary, or naming a profile's addresses from binaries that have no
index yet, takes seconds to minutes. On a terminal a transient bar (rich's) says what is being done
and how far it got, and is erased when the work ends. Scripts read stderr too (the one error line,
the summary): on a pipe or a file nothing is drawn, not even escape codes.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class ProgressReport:
    """Where long work says how far it got; this one shows nothing (not a terminal, the library)."""

    def start(self, description: str, total: int | None) -> None:
        """A new stage of ``total`` steps (None: unknown), replacing the previous one."""

    def describe(self, description: str) -> None:
        """What the current step is doing (the file being read)."""

    def advance(self, steps: int = 1) -> None:
        """``steps`` more steps done."""

    def reach(self, completed: int) -> None:
        """``completed`` steps of the stage done in all (the steps a stage skipped counted too)."""

    def close(self) -> None:
        """The work is over: whatever was drawn is erased."""


class TerminalProgress(ProgressReport):
    """A transient rich bar on ``stream`` (a terminal): what is done, a bar, counts, elapsed time."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        console = Console(file=stream, force_terminal=True)
        self._progress: Progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task: TaskID | None = None
        self._progress.start()

    def start(self, description: str, total: int | None) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(description, total=total)
        self._progress.refresh()

    def describe(self, description: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, description=description, refresh=True)

    def advance(self, steps: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, steps)

    def reach(self, completed: int) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=completed)

    def close(self) -> None:
        self._progress.stop()

    @property
    def display(self) -> Progress:
        """The live rich display, which other work's lines join (downloads: symbolize/remote/progress.py)."""
        return self._progress


def stderr_progress() -> ProgressReport:
    """A :class:`TerminalProgress` on stderr when it is a terminal, else one that shows nothing."""
    stream = sys.stderr
    if stream is None or not stream.isatty():
        return ProgressReport()
    return TerminalProgress(stream)

"""Progress of downloads: one line per download on a terminal (name, server, bytes), nothing elsewhere.

The Fetcher reports through :class:`DownloadProgress` from its worker threads; the base class
shows nothing (the library, a pipe). :class:`TerminalDownloadProgress` draws a transient rich
line per download on stderr while it runs (the run's summary then says what was fetched). rich
allows one live display per terminal: when the run's own bar (symbolize/progress.py's
TerminalProgress) is live, the download lines are added to it (:func:`stderr_download_progress`);
otherwise the download display is live only while a download is.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from symbolize.progress import ProgressReport


class DownloadProgress:
    """Where downloads say how far they got; this one shows nothing. Called from many threads."""

    def start(self, what: str, server: str) -> int:
        """A download of ``what`` from ``server`` begins; returns its ticket for the calls below."""
        return 0

    def sized(self, ticket: int, url: str, total: int | None) -> None:
        """The server answered ``url`` with a body of ``total`` bytes (None: unknown)."""

    def advance(self, ticket: int, count: int) -> None:
        """``count`` more bytes received."""

    def end(self, ticket: int, *, ok: bool) -> None:
        """The download is over (kept: ``ok``; else failed, refused, or lost the race)."""

    def close(self) -> None:
        """The run is over: whatever was drawn is erased."""


class TerminalDownloadProgress(DownloadProgress):
    """A transient rich line per download on ``stream`` (a terminal): what, from where, bytes, speed.

    With ``shared`` (a live rich Progress, the run's bar), the lines are tasks of that display
    (its columns); else of an own display, started at the first download and stopped when none
    is running, so that it is never live at the same time as another display for long.
    """

    def __init__(self, stream: TextIO, *, shared: Progress | None = None) -> None:
        self._lock = threading.Lock()
        self._shared = shared is not None
        self._progress: Progress = shared if shared is not None else _own_display(stream)
        self._live = self._shared
        self._tasks: dict[int, TaskID] = {}
        self._next = 0

    def start(self, what: str, server: str) -> int:
        with self._lock:
            if not self._live:
                self._progress.start()
                self._live = True
            self._next += 1
            self._tasks[self._next] = self._progress.add_task(f"{what} from {server}", total=None)
            return self._next

    def sized(self, ticket: int, url: str, total: int | None) -> None:
        with self._lock:
            if (task := self._tasks.get(ticket)) is not None:
                self._progress.update(task, total=total, completed=0)

    def advance(self, ticket: int, count: int) -> None:
        with self._lock:
            if (task := self._tasks.get(ticket)) is not None:
                self._progress.advance(task, count)

    def end(self, ticket: int, *, ok: bool) -> None:
        with self._lock:
            if (task := self._tasks.pop(ticket, None)) is not None:
                self._progress.remove_task(task)
            if not self._tasks and self._live and not self._shared:
                self._progress.stop()
                self._live = False

    def close(self) -> None:
        with self._lock:
            for task in self._tasks.values():
                self._progress.remove_task(task)
            self._tasks.clear()
            if self._live and not self._shared:
                self._progress.stop()
                self._live = False


def _own_display(stream: TextIO) -> Progress:
    from rich.console import Console
    from rich.progress import DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    return Progress(
        TextColumn("{task.description}"),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=Console(file=stream, force_terminal=True),
        transient=True,
    )


def stderr_download_progress(run_progress: ProgressReport | None = None) -> DownloadProgress:
    """Download lines on stderr when it is a terminal (inside ``run_progress``'s display when that
    is a live terminal bar), else a progress that shows nothing."""
    from symbolize.progress import TerminalProgress

    if isinstance(run_progress, TerminalProgress):
        return TerminalDownloadProgress(sys.stderr, shared=run_progress.display)
    stream = sys.stderr
    if stream is None or not stream.isatty():
        return DownloadProgress()
    return TerminalDownloadProgress(stream)

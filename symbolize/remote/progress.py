"""Progress of downloads: one line per download on a terminal (name, bytes, server), nothing elsewhere.

The Fetcher reports through :class:`DownloadProgress` from its worker threads; the base class
shows nothing (the library, a pipe). :class:`TerminalDownloadProgress` draws a transient rich
line per download on stderr, erased when it ends (the run's summary then says what was fetched).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


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
    """A transient rich line per download on ``stream`` (a terminal): name, server, bytes, speed."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        self._lock = threading.Lock()
        self._progress: Progress = Progress(
            TextColumn("{task.description}"),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(file=stream, force_terminal=True),
            transient=True,
        )
        self._tasks: dict[int, TaskID] = {}
        self._next = 0
        self._progress.start()

    def start(self, what: str, server: str) -> int:
        with self._lock:
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

    def close(self) -> None:
        with self._lock:
            self._progress.stop()

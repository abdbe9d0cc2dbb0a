"""Downloads shown on ``profile``'s progress line, so that one live display is drawn, not two.

``profile`` draws its bar (symbolize/progress.py) on a terminal while it names addresses, and the
downloads happen in the middle of that work, as each mapping's files are looked for. Two rich live
displays on one stderr would overwrite each other, so while a file is being fetched the bar's
description says so, with the name, the server and the bytes so far ("fetching libc.so.6
debuginfo from https://debuginfod.example: 1.2 MiB"), and says again what it said before once
the download ends. A run fetches one file at a time (its servers race, each attempt reporting):
the line shows the attempt that has received the most.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from symbolize.progress import ProgressReport
from symbolize.remote.progress import DownloadProgress


class BarWithDownloads(ProgressReport):
    """``inner`` as the run's ProgressReport, remembering its description so a download can lend
    the line and give it back; :attr:`downloads` is the DownloadProgress that does."""

    def __init__(self, inner: ProgressReport) -> None:
        self._inner = inner
        self._description = ""
        self._lent: str | None = None
        self._lock = threading.Lock()
        self.downloads = _DownloadsOnTheBar(self)

    def start(self, description: str, total: int | None) -> None:
        with self._lock:
            self._description = description
            self._inner.start(self._lent or description, total)

    def describe(self, description: str) -> None:
        with self._lock:
            self._description = description
            if self._lent is None:
                self._inner.describe(description)

    def advance(self, steps: int = 1) -> None:
        self._inner.advance(steps)

    def reach(self, completed: int) -> None:
        self._inner.reach(completed)

    def close(self) -> None:
        self._inner.close()

    def lend(self, text: str | None) -> None:
        """Show ``text`` on the line; None: the work's own description again."""
        with self._lock:
            self._lent = text
            self._inner.describe(text if text is not None else self._description)


@dataclass
class _Download:
    what: str
    server: str
    received: int = 0
    total: int | None = None


class _DownloadsOnTheBar(DownloadProgress):
    """Each download under way, by ticket; the line shows the one that received the most."""

    def __init__(self, bar: BarWithDownloads) -> None:
        self._bar = bar
        self._lock = threading.Lock()
        self._next = 0
        self._running: dict[int, _Download] = {}

    def start(self, what: str, server: str) -> int:
        with self._lock:
            self._next += 1
            self._running[self._next] = _Download(what, server)
            ticket = self._next
        self._show()
        return ticket

    def sized(self, ticket: int, url: str, total: int | None) -> None:
        with self._lock:
            if (download := self._running.get(ticket)) is not None:
                download.total = total
        self._show()

    def advance(self, ticket: int, count: int) -> None:
        with self._lock:
            if (download := self._running.get(ticket)) is not None:
                download.received += count
        self._show()

    def end(self, ticket: int, *, ok: bool) -> None:
        with self._lock:
            self._running.pop(ticket, None)
        self._show()

    def _show(self) -> None:
        with self._lock:
            leading = max(self._running.values(), key=lambda download: download.received, default=None)
            text = None if leading is None else _line(leading)
        self._bar.lend(text)


def _line(download: _Download) -> str:
    of = f" of {_size(download.total)}" if download.total else ""
    return f"fetching {download.what} from {download.server}: {_size(download.received)}{of}"


def _size(count: int) -> str:
    if count < 1 << 20:
        return f"{count / 1024:.0f} KiB"
    return f"{count / (1 << 20):.1f} MiB"

"""The naming side of the pass-through: one worker thread, one long-lived loader, a bounded queue.

The loader (symbolize/loader.py) is not shared between threads, and naming is CPU work that the
GIL serialises anyway: one worker names every export in turn, with one loader kept for the
server's life, so every index it opened or built stays warm for the next export. The queue
holds at most ``capacity`` exports; a full queue is the server's 429 (back-pressure, not
memory). An export whose sender stopped waiting (the server's naming timeout) is still named
when its turn comes and then dropped: its binaries' indexes are warm when the sender retries.

:data:`NAME_EXPORT` is the one function that names an OTLP export
(:func:`symbolize.otlp.rewrite.rewrite_otlp_payload`).
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from symbolize.otlp.rewrite import rewrite_otlp_payload
from symbolize.serve.diagnostics import log

if TYPE_CHECKING:
    from symbolize.api import Session
    from symbolize.loader import Loader
    from symbolize.rewrite import RewriteOptions
    from symbolize.summary import Summary

ExportNamer = Callable[..., "tuple[bytes, Summary]"]


# The naming function: issue 25's OTLP rewrite, which writes back only what naming changed.
NAME_EXPORT: ExportNamer = rewrite_otlp_payload


@dataclass
class NamingJob:
    """One export to name: its bytes in, then the named bytes or the error out."""

    payload: bytes
    source: str
    done: threading.Event = field(default_factory=threading.Event)
    named: bytes | None = None
    summary: Summary | None = None
    error: BaseException | None = None


class QueueFull(Exception):
    """The naming queue holds ``capacity`` exports already."""


class NamingWorker:
    """Names queued exports on one thread with one loader (module docstring)."""

    def __init__(self, session: Session, rewrite_options: Callable[[Loader], RewriteOptions], capacity: int,
                 namer: ExportNamer = NAME_EXPORT) -> None:  # fmt: skip
        self._session = session
        self._loader = session.loader()
        self._options = rewrite_options(self._loader)
        self._namer = namer
        self._queue: queue.Queue[NamingJob | None] = queue.Queue(maxsize=capacity)
        self._thread = threading.Thread(target=self._run, name="symbolize-naming", daemon=True)
        self.named = 0
        self.failed = 0
        # Locations named, and those left unnamed by reason, over the server's life (/health).
        self._locations: Counter[str] = Counter()
        # Mappings already said unnamed on stderr (once each, a bounded number of them).
        self._said: set[tuple[str, str]] = set()
        self._tally_lock = threading.Lock()
        self._thread.start()

    def locations(self) -> dict[str, int]:
        with self._tally_lock:
            return dict(self._locations)

    def submit(self, job: NamingJob) -> None:
        """Queue ``job``; QueueFull when the queue is at capacity."""
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise QueueFull from None

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    def stop(self, timeout: float) -> None:
        """Name what is queued, then end the worker and close the loader's files."""
        self._queue.put(None)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._session.finish(self._loader, answered=True)

    def _run(self) -> None:
        while (job := self._queue.get()) is not None:
            try:
                job.named, job.summary = self._namer(job.payload, self._options, source=job.source)
                self.named += 1
                self._tally(job.summary)
            except BaseException as exc:  # handed to the waiting request, which answers for it
                job.error = exc
                self.failed += 1
            finally:
                job.done.set()

    def _tally(self, summary: Summary) -> None:
        with self._tally_lock:
            for mapping in summary.mappings:
                self._locations["named"] += mapping.named
                for reason, count in mapping.reasons.items():
                    self._locations[f"unnamed {reason.value}"] += count
        for mapping in summary.mappings:
            if not mapping.reasons or len(self._said) >= _MAX_SAID:
                continue
            commonest = mapping.reasons.most_common(1)[0][0].value
            if (mapping.filename, commonest) not in self._said:
                self._said.add((mapping.filename, commonest))
                log(f"{mapping.filename or '(no file name)'}: {mapping.unnamed} of {mapping.locations} "
                    f"locations unnamed ({commonest}); said once")  # fmt: skip


_MAX_SAID = 256

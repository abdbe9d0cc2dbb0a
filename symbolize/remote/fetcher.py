"""Fetching one debug file: the caches first, then every server raced, the first verified answer kept.

One :class:`Fetcher` per run (the loader owns it). :meth:`Fetcher.fetch` looks the key up in the
store's tiers (each file found verified like a download), then, when the network is allowed,
starts one thread per :class:`Attempt` (one per server; an attempt may issue several GETs, e.g.
symsrv's plain, ``_``-compressed and ``file.ptr`` forms, and post-process into the partial file)
and keeps the first answer that ``verify`` accepts: it is renamed into the store and the other
attempts are cancelled (their sockets shut down). A 404 is recorded as a miss of that server for
``miss_ttl`` seconds and not asked again; a 5xx, a reset or a timeout never is.
:meth:`Fetcher.fetch_many` fetches several keys at once, so N files take about the time of
the slowest, not the sum (bench/remote_fetch.py).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

from symbolize.errors import SymbolizeError
from symbolize.remote.options import RemoteOptions
from symbolize.remote.progress import DownloadProgress
from symbolize.remote.prune import prune_if_due
from symbolize.remote.store import DownloadStore, StoreKey, StoreTier
from symbolize.remote.transfer import (
    Cancellation,
    CancelledError,
    DownloadRefusedError,
    Limits,
    NotOnServerError,
    ServerUnreachableError,
    Session,
    redact,
)
from symbolize.units import human_size

# ``verify(path)``: None when the file is the one asked for, else why not ("build ID 12.. is not 34..").
Verify = Callable[[Path], str | None]
MissReason = Literal["not-on-server", "server-unreachable", "not-in-cache"]
# How long losers of a race (their sockets shut down) are given to clean up before fetch returns.
_LOSER_GRACE = 5.0


class Attempt(Protocol):
    """Getting one file from one server.

    ``server`` names the server (its base URL): the miss record's key and the report's "from".
    ``run`` writes the file into ``sink`` through ``session`` (its capped GETs: ``download``,
    ``get_bytes``) and returns the URL the file came from. It raises
    :class:`~symbolize.remote.transfer.NotOnServerError` when the server says it has no such
    file, the session's other TransferErrors as they come, or a SymbolizeError (e.g. a malformed
    cabinet) for an answer it refuses.
    """

    @property
    def server(self) -> str: ...

    def run(self, session: Session, sink: BinaryIO) -> str: ...


@dataclass(frozen=True)
class GetAttempt:
    """The plain attempt: one GET of ``url`` (debuginfod's ``<server>/buildid/<hex>/debuginfo``)."""

    server: str
    url: str

    def run(self, session: Session, sink: BinaryIO) -> str:
        return session.download(self.url, sink)


@dataclass(frozen=True)
class Fetched:
    """A verified file: ``path`` in a store tier; ``url`` it came from (None: it was cached)."""

    path: Path
    url: str | None
    size: int
    refused: tuple[str, ...] = ()  # "URL: reason" of answers refused on the way

    @property
    def cached(self) -> bool:
        return self.url is None


@dataclass(frozen=True)
class Missed:
    """No verified file. ``reason``: "not-on-server" (every server asked answered 404, or sent
    files that were refused), "server-unreachable" (some server gave no answer: down, stalled,
    5xx, timed out), "not-in-cache" (offline, or no server to ask). ``tried``: the URLs asked
    (a server skipped for a recent 404 is named by its server URL); ``detail``: what each said."""

    reason: MissReason
    tried: tuple[str, ...]
    detail: str
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class FetchRequest:
    """One file for :meth:`Fetcher.fetch_many`; the arguments of :meth:`Fetcher.fetch`."""

    key: StoreKey
    what: str
    attempts: Sequence[Attempt]
    verify: Verify
    tiers: Sequence[StoreTier] = ()


@dataclass
class _Outcome:
    """What one attempt ended with."""

    attempt: Attempt
    tried: list[str] = field(default_factory=list)
    won: Path | None = None
    url: str | None = None
    not_found: NotOnServerError | None = None
    unreachable: str | None = None
    refused: str | None = None
    cancelled: bool = False
    crashed: BaseException | None = None
    partial: Path | None = None  # the attempt's temporary while it exists


@dataclass(frozen=True)
class FetchRecord:
    """A download done in this run, for the report."""

    what: str
    url: str
    server: str
    size: int
    seconds: float


class Fetcher:
    """The run's fetcher: options, store, the downloads it made (for :meth:`report`), cancel."""

    def __init__(self, options: RemoteOptions, *, progress: DownloadProgress | None = None) -> None:
        self.options = options
        self.store = DownloadStore(options.store_root())
        self.progress = progress or DownloadProgress()
        self.fetched: list[FetchRecord] = []
        self.cache_hits = 0
        self._lock = threading.Lock()
        self._cancellation = Cancellation()
        if options.asked:
            prune_if_due(self.store.root)

    def cancel(self) -> None:
        """Cancel every download under way (from any thread); later fetches start cancelled."""
        self._cancellation.cancel()

    def cached(self, key: StoreKey, verify: Verify, tiers: Sequence[StoreTier] = ()) -> Path | None:
        """The first file for ``key`` in the tiers that ``verify`` accepts, or None."""
        for path in self.store.entries(key, tiers):
            try:
                reason = verify(path)
            except SymbolizeError:
                continue
            if reason is None:
                self.store.touch(path)
                return path
        return None

    def fetch(
        self,
        key: StoreKey,
        what: str,
        attempts: Sequence[Attempt],
        verify: Verify,
        *,
        tiers: Sequence[StoreTier] = (),
    ) -> Fetched | Missed:
        """``key``'s verified file: from a tier, else from the first server whose answer ``verify``
        accepts (stored before it is returned). ``what`` names it for progress and the report
        (``libc.so.6 debuginfo``). Never raises for a server's failure; KeyboardInterrupt
        cancels the attempts, removes their partial files and propagates."""
        if (hit := self.cached(key, verify, tiers)) is not None:
            with self._lock:
                self.cache_hits += 1
            return Fetched(hit, None, hit.stat().st_size)
        if not self.options.network or not attempts:
            why = "offline" if self.options.offline else "no server to ask"
            return Missed("not-in-cache", (), f"{what}: not in the caches ({why})")
        ttl = self.options.miss_ttl
        fresh = [a for a in attempts if ttl > 0 and self.store.miss_is_fresh(a.server, key, ttl)]
        asked = [a for a in attempts if a not in fresh]
        skipped = [f"{redact(a.server)}: not found within the last {ttl:g} s (cached miss)" for a in fresh]
        if not asked:
            return Missed("not-on-server", tuple(redact(a.server) for a in fresh), f"{what}: " + "; ".join(skipped))
        outcomes = self._race(key, what, asked, verify, tiers)
        return self._conclude(key, what, outcomes, fresh, skipped)

    def fetch_many(self, requests: Sequence[FetchRequest]) -> list[Fetched | Missed]:
        """:meth:`fetch` of every request, ``options.parallel_fetches`` at a time; results in order."""
        if len(requests) <= 1:
            return [self.fetch(r.key, r.what, r.attempts, r.verify, tiers=r.tiers) for r in requests]
        pool = ThreadPoolExecutor(max_workers=max(1, self.options.parallel_fetches), thread_name_prefix="fetch")
        try:
            futures = [pool.submit(self.fetch, r.key, r.what, r.attempts, r.verify, tiers=r.tiers) for r in requests]
            pending = set(futures)
            while pending:
                # Timed waits, so that a Ctrl-C reaches this thread (an untimed one is not
                # interrupted on Windows, nor by a simulated signal anywhere).
                _, pending = wait(pending, timeout=0.2)
            return [future.result() for future in futures]
        except BaseException:
            self.cancel()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def report(self) -> list[str]:
        """Summary lines: how many files were fetched, how many bytes, from which servers."""
        with self._lock:
            records = list(self.fetched)
            hits = self.cache_hits
        if not records and not hits:
            return []
        by_server: dict[str, int] = {}
        for record in records:
            by_server[record.server] = by_server.get(record.server, 0) + 1
        total = sum(record.size for record in records)
        servers = ", ".join(f"{server} ({count})" for server, count in by_server.items())
        parts = [f"fetched {_files(len(records))} ({human_size(total)}) from {servers}"] if records else []
        parts += [f"{_files(hits)} from the download cache"] if hits else []
        return ["; ".join(parts)]

    # The race.

    def _race(
        self, key: StoreKey, what: str, attempts: Sequence[Attempt], verify: Verify, tiers: Sequence[StoreTier]
    ) -> list[_Outcome]:
        cancellation = Cancellation(self._cancellation)
        tier = self.store.destination_tier(key, tiers)
        destination = key.under(tier.root)
        outcomes = [_Outcome(attempt) for attempt in attempts]
        winner = threading.Lock()
        finished = threading.Semaphore(0)
        started = time.monotonic()
        total = self.options.total_timeout
        limits = Limits(
            stall_timeout=self.options.stall_timeout,
            stall_min_bytes=self.options.stall_min_bytes,
            max_bytes=self.options.max_file_bytes,
            deadline=None if total is None else started + total,
            retry_delay=self.options.retry_delay,
        )

        def run(outcome: _Outcome) -> None:
            try:
                self._attempt(outcome, key, what, verify, destination, limits, cancellation, winner, started)
            finally:
                finished.release()

        threads = [
            threading.Thread(target=run, args=(outcome,), name=f"fetch {what}", daemon=True) for outcome in outcomes
        ]
        try:
            for thread in threads:
                thread.start()
            remaining = len(threads)
            while remaining:
                # A timed wait, so that the main thread sees a Ctrl-C while it waits.
                if finished.acquire(timeout=0.2):
                    remaining -= 1
                    if any(outcome.won is not None for outcome in outcomes):
                        cancellation.cancel()
        except BaseException:
            cancellation.cancel()
            for thread in threads:
                thread.join(_LOSER_GRACE)
            # An attempt still busy after the grace (verifying a large file) is a daemon thread
            # the interpreter's exit ends: its temporary is removed here, not left behind.
            for outcome in outcomes:
                if outcome.partial is not None:
                    with contextlib.suppress(OSError):
                        outcome.partial.unlink()
            self.store.remove_empty_parents(destination, tier)
            raise
        finally:
            cancellation.detach()
        for thread in threads:
            thread.join(_LOSER_GRACE)
        if not any(outcome.won is not None for outcome in outcomes):
            self.store.remove_empty_parents(destination, tier)
        for outcome in outcomes:
            if outcome.crashed is not None:
                raise outcome.crashed
        return outcomes

    def _attempt(
        self,
        outcome: _Outcome,
        key: StoreKey,
        what: str,
        verify: Verify,
        destination: Path,
        limits: Limits,
        cancellation: Cancellation,
        winner: threading.Lock,
        started: float,
    ) -> None:
        attempt = outcome.attempt
        ticket = self.progress.start(what, redact(attempt.server))
        session = Session(
            limits,
            Cancellation(cancellation),
            on_start=lambda url, length: self.progress.sized(ticket, url, length),
            on_bytes=lambda count: self.progress.advance(ticket, count),
            tried=outcome.tried,
        )
        partial: Path | None = None
        try:
            partial, sink = self.store.open_partial(destination)
            outcome.partial = partial
            with sink:
                url = attempt.run(session, sink)
                sink.flush()
            if cancellation.cancelled:
                raise CancelledError("cancelled", url)
            reason = verify(partial)
            if reason is not None:
                outcome.refused = f"{redact(url)}: {reason}"
                return
            with winner:
                if cancellation.cancelled:
                    raise CancelledError("cancelled", url)
                size = partial.stat().st_size
                try:
                    self.store.commit(partial, destination)
                    partial = outcome.partial = None
                except OSError:
                    # Windows refuses to replace a file another process has open: that process
                    # stored the same key meanwhile. Its file serves, once verified (this
                    # attempt's temporary is removed below); else the error stands.
                    if not destination.is_file() or verify(destination) is not None:
                        raise
                outcome.won, outcome.url = destination, redact(url)
                cancellation.cancel()
            with self._lock:
                record = FetchRecord(what, redact(url), redact(attempt.server), size, time.monotonic() - started)
                self.fetched.append(record)
        except NotOnServerError as error:
            outcome.not_found = error
        except ServerUnreachableError as error:
            outcome.unreachable = str(error)
        except CancelledError:
            outcome.cancelled = True
        except DownloadRefusedError as error:
            outcome.refused = str(error)
        except SymbolizeError as error:
            url = outcome.tried[-1] if outcome.tried else redact(attempt.server)
            outcome.refused = f"{url}: {error}"
        except OSError as error:
            # The store cannot be written (disk full, permissions): the download is not kept.
            outcome.refused = f"{redact(attempt.server)}: cannot store {what}: {error.strerror or error}"
        except BaseException as error:  # a bug in an attempt: raised again in the caller's thread
            outcome.crashed = error
        finally:
            self.progress.end(ticket, ok=outcome.won is not None)
            if partial is not None:
                with contextlib.suppress(OSError):
                    partial.unlink()
                outcome.partial = None

    def _conclude(
        self, key: StoreKey, what: str, outcomes: list[_Outcome], fresh: list[Attempt], skipped: list[str]
    ) -> Fetched | Missed:
        refused = tuple(outcome.refused for outcome in outcomes if outcome.refused is not None)
        for outcome in outcomes:
            if outcome.not_found is not None and outcome.not_found.cacheable:
                self.store.record_miss(outcome.attempt.server, key, outcome.not_found.url)
        for outcome in outcomes:
            if outcome.won is not None and outcome.url is not None:
                self.store.forget_miss(outcome.attempt.server, key)
                return Fetched(outcome.won, outcome.url, outcome.won.stat().st_size, refused)
        tried = tuple(url for outcome in outcomes for url in outcome.tried) + tuple(redact(a.server) for a in fresh)
        details = list(skipped)
        for outcome in outcomes:
            if outcome.not_found is not None:
                details.append(str(outcome.not_found))
            elif outcome.unreachable is not None:
                details.append(outcome.unreachable)
            elif outcome.refused is not None:
                details.append(f"refused: {outcome.refused}")
            elif outcome.cancelled:
                details.append(f"{redact(outcome.attempt.server)}: cancelled")
        unreachable = any(outcome.unreachable is not None or outcome.cancelled for outcome in outcomes)
        reason: MissReason = "server-unreachable" if unreachable else "not-on-server"
        return Missed(reason, tried, f"{what}: " + "; ".join(details), refused)


def _files(count: int) -> str:
    return f"{count} debug file{'' if count == 1 else 's'}"

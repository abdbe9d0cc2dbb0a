"""The remote part of one run, which the loader (symbolize/loader.py) holds: its Fetcher, and what
each module's fetches missed or refused, for the summary.

A locator's remote part (symbolize/discovery/elf_locators.py's build ID, the symbol servers')
and a binary source (symbolize/discovery/binary_sources.py) ask :meth:`RemoteRun.fetch` for a
key on behalf of an *owner* (the image whose debug file it is, or the mapping's file name when
the binary itself is asked for). A verified file comes back as its path in a store tier; a miss
is kept for the owner as a :class:`~symbolize.module.RemoteMiss` (``not-on-server`` or
``server-unreachable``, the URLs tried), and the answers refused on the way (another build's
file) as ``"URL: reason"`` refusals, which :func:`symbolize.discovery.modules.module_for` adds to
the module's. Each key is fetched once per run: a second question gets the first answer.

A profile's modules are found one after another, and each would wait for its own downloads, so
N missing files would cost the sum of their times. Within :meth:`RemoteRun.gathering` a fetch is
only noted (and answered None; of each owner's requests the first, the rest being its fallbacks);
leaving it fetches every noted file at once
(:meth:`Fetcher.fetch_many`), and the modules found again afterwards are answered from there: N
files take about the time of the slowest (bench/remote_fetch.py measures both ways). A file needed
to ask for the next (a binary from a server, whose debug file is then asked for by the ID the
binary records) makes a chain: the caller gathers again while a round fetched something, each
round one link of every module's chain (symbolize/rewrite.py's ``_fetch_together``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from symbolize.module import FileIdentity, Reason, RemoteMiss
from symbolize.remote.fetcher import Attempt, Fetched, Fetcher, FetchRequest, Missed, Verify
from symbolize.remote.options import RemoteOptions
from symbolize.remote.progress import DownloadProgress
from symbolize.remote.store import StoreKey, StoreTier

_REASONS = {"not-on-server": Reason.NOT_ON_SERVER, "server-unreachable": Reason.SERVER_UNREACHABLE}


@dataclass
class GatheredRound:
    """One :meth:`RemoteRun.gathering`: how many files it fetched together (0: none, or only one,
    which is fetched when it is asked again)."""

    fetched: int = 0


class RemoteRun:
    """The servers and caches of one run, asked through one Fetcher; see the module docstring."""

    def __init__(
        self,
        options: RemoteOptions,
        identify: Callable[[Path], FileIdentity],
        progress: DownloadProgress | None = None,
    ) -> None:
        self.options = options
        # The loader's: what a downloaded file is, read from its headers (verify callbacks use it).
        self.identify = identify
        self._progress = progress
        self._fetcher: Fetcher | None = None
        self._lock = threading.Lock()
        self._answers: dict[StoreKey, Fetched | Missed] = {}
        self._misses: dict[str, list[RemoteMiss]] = {}
        self._refused: dict[str, list[str]] = {}
        # While gathering (see the module docstring): each owner's first request.
        self._gathered: dict[str, FetchRequest] | None = None

    @property
    def fetcher(self) -> Fetcher:
        """The run's Fetcher, made on first use (it makes the store's directory only then)."""
        with self._lock:
            if self._fetcher is None:
                self._fetcher = Fetcher(self.options, progress=self._progress)
            return self._fetcher

    def fetch(
        self,
        owner: str,
        key: StoreKey,
        what: str,
        attempts: Sequence[Attempt],
        verify: Verify,
        tiers: Sequence[StoreTier] = (),
    ) -> Path | None:
        """The verified file for ``key`` (from a cache, else the first server to give one), or None,
        the miss and the refusals kept for ``owner``."""
        answer = self._answers.get(key)
        if answer is None and self._gathered is not None:
            # Only an owner's first request: those after it are its fallbacks (debuginfo standing
            # in for a missing executable), asked later only if the first one misses.
            self._gathered.setdefault(owner, FetchRequest(key, what, attempts, verify, tiers))
            return None
        if answer is None:
            answer = self._answers[key] = self.fetcher.fetch(key, what, attempts, verify, tiers=tiers)
        self._note_refusals(owner, answer.refused)
        if isinstance(answer, Fetched):
            return answer.path
        reason = _REASONS.get(answer.reason)
        if reason is not None:  # "not-in-cache" (offline, no server) is no server's answer
            detail = answer.detail.removeprefix(f"{what}: ")
            miss = RemoteMiss(what, reason, answer.tried, detail)
            owned = self._misses.setdefault(owner, [])
            if miss not in owned:
                owned.append(miss)
        return None

    @contextmanager
    def gathering(self) -> Iterator[GatheredRound]:
        """Note the fetches asked within, then fetch them all at once (see the module docstring).
        Nothing asked within is answered, nor counted as missed: find the modules again after it.
        The round it yields says, once left, how many files were fetched together."""
        this_round = GatheredRound()
        self._gathered = {}
        try:
            yield this_round
        finally:
            gathered, self._gathered = self._gathered, None
        by_key: dict[StoreKey, FetchRequest] = {}
        for request in gathered.values():
            if request.key not in self._answers:
                by_key.setdefault(request.key, request)
        requests = list(by_key.values())
        # Offline there is nothing to wait for; a lone request is fetched when it is asked again.
        if self.options.network and len(requests) > 1:
            for request, answer in zip(requests, self.fetcher.fetch_many(requests), strict=True):
                self._answers[request.key] = answer
            this_round.fetched = len(requests)

    def misses(self, owner: str) -> list[RemoteMiss]:
        """What the servers did not give for ``owner``, in the order asked."""
        return list(self._misses.get(owner, ()))

    def refusals(self, owner: str) -> list[str]:
        """The servers' answers refused for ``owner``, ``"URL: reason"``."""
        return list(self._refused.get(owner, ()))

    def report(self) -> list[str]:
        """The run's fetch summary lines (what was fetched, from where); empty when nothing was asked."""
        return self._fetcher.report() if self._fetcher is not None else []

    def cancel(self) -> None:
        """Cancel every download under way (Ctrl-C): their partial files are removed."""
        if self._fetcher is not None:
            self._fetcher.cancel()

    def _note_refusals(self, owner: str, refused: Sequence[str]) -> None:
        owned = self._refused.setdefault(owner, [])
        owned.extend(refusal for refusal in refused if refusal not in owned)

"""The local process pool of ``symbolize batch``: one process per shard, each reporting every profile
as it is done.

Not ``concurrent.futures.ProcessPoolExecutor``: it cannot pin a shard to a process (the point of
sharding by debug ID), it hands back a shard's results only when the whole shard is done, and one
process that dies (a crash in compiled code, the OOM killer) breaks the pool and fails every
shard. Here a process that dies fails only the profile it was rewriting (the next one its shard
had not reported), and a new process takes the rest of the shard. Processes are started with
``spawn`` everywhere: what ``fork`` would copy of a parent's threads and open files is no
worker's business, and Windows and macOS have no other.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Sequence
from typing import Any

from symbolize.batch.plan import PlannedProfile
from symbolize.batch.tiers import tier_counts
from symbolize.batch.worker import ProfileOutcome, RewriteSettings, failed_outcome, iter_shard
from symbolize.cli.exits import EXIT_INTERNAL_ERROR, internal_error_line

# How often the parent looks for a process that died without a word, in seconds.
_POLL_SECONDS = 0.2


def _shard_process(
    shard_index: int, profiles: Sequence[PlannedProfile], settings: RewriteSettings, results: Any, parent: int
) -> None:
    """A worker process's body: each outcome on ``results`` as it comes, then the end of the shard with
    what the index tiers did in this process. Stops after the profile at hand when the parent that
    started it (process ``parent``) is gone: nobody would read the rest."""
    # Ctrl-C reaches the whole process group: the parent alone answers it, by ending the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for outcome in iter_shard(profiles, settings):
            if os.getppid() != parent:
                return
            results.put(("outcome", shard_index, outcome))
    except Exception as exc:  # outside any one profile (a bug): every profile left fails with it, no retry
        results.put(("broken", shard_index, internal_error_line(exc)))
    results.put(("end", shard_index, tier_counts()))


def run_local(
    shards: Sequence[Sequence[PlannedProfile]],
    settings: RewriteSettings,
    report: Callable[[ProfileOutcome], None],
) -> tuple[list[ProfileOutcome], list[dict[str, int | str]]]:
    """Every shard in its own process, at once; each outcome to ``report`` as it arrives. Returns the
    outcomes and each process's index tier counts (not those of a process that died)."""
    context = multiprocessing.get_context("spawn")
    results: Any = context.Queue()
    remaining = {index: list(profiles) for index, profiles in enumerate(shards) if profiles}
    processes: dict[int, Any] = {}
    outcomes: list[ProfileOutcome] = []
    counts: list[dict[str, int | str]] = []

    def start(index: int) -> None:
        arguments = (index, remaining[index], settings, results, os.getpid())
        process = context.Process(target=_shard_process, args=arguments, daemon=True)
        process.start()
        processes[index] = process

    def take(outcome: ProfileOutcome) -> None:
        outcomes.append(outcome)
        report(outcome)

    def handle(kind: str, index: int, payload: Any) -> None:
        if kind == "outcome":
            remaining[index].pop(0)
            take(payload)
            return
        if kind == "broken":
            for planned in remaining[index]:
                take(failed_outcome(planned, payload, EXIT_INTERNAL_ERROR))
            remaining[index] = []
            return
        counts.append(payload)
        if index in processes:
            processes.pop(index).join()

    try:
        for index in remaining:
            start(index)
        while processes:
            try:
                handle(*results.get(timeout=_POLL_SECONDS))
                continue
            except queue.Empty:
                pass
            dead = [index for index, process in processes.items() if process.exitcode is not None]
            if not dead:
                continue
            # What they said before they exited is in the queue by now: read it first.
            while True:
                try:
                    handle(*results.get_nowait())
                except queue.Empty:
                    break
            for index in dead:
                process = processes.pop(index, None)
                if process is None:  # its end was in the queue
                    continue
                _died(index, process.exitcode, remaining, take)
                if remaining[index]:
                    start(index)
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.join()
        results.close()
    return outcomes, counts


def _died(
    index: int,
    exitcode: int,
    remaining: dict[int, list[PlannedProfile]],
    take: Callable[[ProfileOutcome], None],
) -> None:
    """The profile a dead worker was rewriting fails; the rest of its shard stays for the next."""
    if not remaining[index]:
        return
    planned = remaining[index].pop(0)
    how = f"signal {-exitcode}" if exitcode < 0 else f"exit code {exitcode}"
    take(failed_outcome(planned, f"the worker process died ({how}) while rewriting it", EXIT_INTERNAL_ERROR))

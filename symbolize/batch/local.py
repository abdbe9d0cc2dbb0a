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
import signal
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from symbolize.batch.plan import PlannedProfile
from symbolize.batch.tiers import tier_counts
from symbolize.batch.worker import ProfileOutcome, RewriteSettings, failed_outcome, iter_shard
from symbolize.cli.exits import EXIT_INTERNAL_ERROR, internal_error_line

# How long the parent waits for a worker that closed its pipe to be reaped, in seconds.
_REAP_SECONDS = 5.0


def _shard_process(
    shard_index: int, profiles: Sequence[PlannedProfile], settings: RewriteSettings, sender: Connection, parent: int
) -> None:
    """A worker process's body: each outcome sent on ``sender`` as it comes, then the end of the shard
    with what the index tiers did in this process. Stops after the profile at hand when the parent
    that started it (process ``parent``) is gone: nobody would read the rest.

    Each worker has its own pipe, written by it alone: a ``multiprocessing.Queue`` shared by the
    workers has one lock for its writers, and a worker killed while holding it (the OOM killer)
    would leave every other worker unable to send, and the batch waiting for ever."""
    del shard_index  # the parent knows which pipe is whose
    # Ctrl-C reaches the whole process group: the parent alone answers it, by ending the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for outcome in iter_shard(profiles, settings):
            if os.getppid() != parent:
                return
            sender.send(("outcome", outcome))
    except Exception as exc:  # outside any one profile (a bug): every profile left fails with it, no retry
        sender.send(("broken", internal_error_line(exc)))
    sender.send(("end", tier_counts()))
    sender.close()


def run_local(
    shards: Sequence[Sequence[PlannedProfile]],
    settings: RewriteSettings,
    report: Callable[[ProfileOutcome], None],
) -> tuple[list[ProfileOutcome], list[dict[str, int | str]]]:
    """Every shard in its own process, at once; each outcome to ``report`` as it arrives. Returns the
    outcomes and each process's index tier counts (not those of a process that died)."""
    context = multiprocessing.get_context("spawn")
    remaining = {index: list(profiles) for index, profiles in enumerate(shards) if profiles}
    processes: dict[int, Any] = {}
    readers: dict[int, Connection] = {}
    outcomes: list[ProfileOutcome] = []
    counts: list[dict[str, int | str]] = []

    def start(index: int) -> None:
        reader, sender = context.Pipe(duplex=False)
        arguments = (index, remaining[index], settings, sender, os.getpid())
        process = context.Process(target=_shard_process, args=arguments, daemon=True)
        process.start()
        sender.close()  # the worker's copy alone remains: its end (or death) is the reader's EOF
        processes[index] = process
        readers[index] = reader

    def take(outcome: ProfileOutcome) -> None:
        outcomes.append(outcome)
        report(outcome)

    def finish(index: int) -> int | None:
        """The worker of shard ``index`` is done with: its pipe closed, its process reaped."""
        readers.pop(index).close()
        process = processes.pop(index)
        process.join(_REAP_SECONDS)
        return process.exitcode  # type: ignore[no-any-return]

    def handle(index: int, kind: str, payload: Any) -> None:
        if kind == "outcome":
            remaining[index].pop(0)
            take(payload)
        elif kind == "broken":
            for planned in remaining[index]:
                take(failed_outcome(planned, payload, EXIT_INTERNAL_ERROR))
            remaining[index] = []
        else:
            counts.append(payload)
            finish(index)

    try:
        for index in remaining:
            start(index)
        while readers:
            shard_of = {id(reader): index for index, reader in readers.items()}
            for ready in wait(list(readers.values())):
                index = shard_of[id(ready)]
                try:
                    message = readers[index].recv()
                except (EOFError, OSError, ValueError, TypeError, AttributeError, ImportError):
                    # Gone without its end (killed, crashed): what it sent before is read already.
                    _died(index, finish(index), remaining, take)
                    if remaining[index]:
                        start(index)
                    continue
                handle(index, *message)
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.join()
        for reader in readers.values():
            reader.close()
    return outcomes, counts


def _died(
    index: int,
    exitcode: int | None,
    remaining: dict[int, list[PlannedProfile]],
    take: Callable[[ProfileOutcome], None],
) -> None:
    """The profile a dead worker was rewriting fails; the rest of its shard stays for the next."""
    if not remaining[index]:
        return
    planned = remaining[index].pop(0)
    error = f"the worker process died ({_how_it_ended(exitcode)}) while rewriting it"
    take(failed_outcome(planned, error, EXIT_INTERNAL_ERROR))


def _how_it_ended(exitcode: int | None) -> str:
    if exitcode is None:  # not reaped within _REAP_SECONDS of closing its pipe
        return "its pipe closed"
    return f"signal {-exitcode}" if exitcode < 0 else f"exit code {exitcode}"

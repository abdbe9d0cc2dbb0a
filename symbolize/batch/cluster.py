"""``symbolize batch --dask SCHEDULER``: the same shards as the local pool, as tasks of a Dask
distributed cluster (the ``scale`` extra: ``pip install 'pprof-symbolize[scale]'``).

One task per shard, so the profiles of a key stay on one worker as they do locally; a shard's
outcomes come back when its task ends. The workers must see the inputs, OUTDIR and the binaries
at the same paths (a shared file system), and an index store that all of them reach is what lets
one worker's index serve another's. A task that fails (its worker lost, past Dask's own retries)
fails each profile of its shard that has no outcome, and the other shards go on.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from symbolize.batch.plan import PlannedProfile
from symbolize.batch.tiers import reset_tier_counts, tier_counts
from symbolize.batch.worker import ProfileOutcome, RewriteSettings, failed_outcome, rewrite_shard
from symbolize.cli.exits import EXIT_INTERNAL_ERROR, internal_error_line
from symbolize.errors import SymbolizeError

SCALE_EXTRA_HINT = "--dask needs Dask distributed: pip install 'pprof-symbolize[scale]'"


def dask_client(scheduler: str, *, timeout: float = 10.0) -> Any:
    """A client of the cluster whose scheduler is at ``scheduler`` (``tcp://HOST:PORT``). Raises
    SymbolizeError when Dask distributed is not installed or the scheduler does not answer within
    ``timeout`` seconds."""
    try:
        import distributed
    except ImportError as exc:
        raise SymbolizeError(SCALE_EXTRA_HINT) from exc
    # Through Any: Dask's hints are partial, and mypy runs where the scale extra is not installed too.
    client_class: Any = distributed.Client
    try:
        return client_class(scheduler, timeout=f"{timeout}s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise SymbolizeError(f"Dask scheduler {scheduler}: {exc}") from exc


def cluster_threads(client: Any) -> int:
    """How many tasks the cluster runs at once: the shards to cut the batch into."""
    threads: dict[str, int] = client.nthreads()
    return max(1, sum(threads.values()))


def run_dask(
    client: Any,
    shards: Sequence[Sequence[PlannedProfile]],
    settings: RewriteSettings,
    report: Callable[[ProfileOutcome], None],
) -> tuple[list[ProfileOutcome], list[dict[str, int | str]]]:
    """Every shard as one task on ``client``'s cluster; each shard's outcomes to ``report`` as its task
    ends. Returns the outcomes and the index tier counts of each worker process (counted from the start
    of the run: a cluster's workers outlive it)."""
    import distributed

    as_completed: Any = distributed.as_completed
    client.run(reset_tier_counts)
    futures = {client.submit(rewrite_shard, list(profiles), settings, pure=False): profiles for profiles in shards}
    outcomes: list[ProfileOutcome] = []
    try:
        for future in as_completed(futures):
            try:
                done: list[ProfileOutcome] = future.result()
            except Exception as exc:  # the task's, never the batch's: KilledWorker, a lost connection
                line = internal_error_line(exc)
                done = [failed_outcome(planned, line, EXIT_INTERNAL_ERROR) for planned in futures[future]]
            for outcome in done:
                outcomes.append(outcome)
                report(outcome)
    except BaseException:
        client.cancel(list(futures))  # Ctrl-C: the cluster outlives this run, its tasks do not
        raise
    # One count per process: the workers of a cluster with processes=False share one.
    by_process: dict[int, dict[str, int | str]] = dict(client.run(_process_counts).values())
    return outcomes, list(by_process.values())


def _process_counts() -> tuple[int, dict[str, int | str]]:
    return os.getpid(), tier_counts()

"""``symbolize batch``'s whole run: plan, shard, rewrite on the local pool or a Dask cluster, count."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from symbolize.batch.metrics import BatchMetrics
from symbolize.batch.plan import plan, shard
from symbolize.batch.worker import ProfileOutcome, RewriteSettings
from symbolize.errors import SymbolizeError


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform has one)."""
    if sys.platform == "linux":
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@dataclass
class BatchResult:
    """Each profile's outcome, in the inputs' order, and the run's figures."""

    outcomes: list[ProfileOutcome]
    metrics: BatchMetrics

    @property
    def failed(self) -> list[ProfileOutcome]:
        return [outcome for outcome in self.outcomes if outcome.failed]


def run_batch(
    inputs: Sequence[Path],
    out_dir: Path,
    settings: RewriteSettings,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    report: Callable[[ProfileOutcome], None] | None = None,
) -> BatchResult:
    """Rewrite every profile of ``inputs`` to ``OUTDIR/<the name symbolize profile gives it>``.

    ``workers`` processes of the local pool (None: one per CPU), or with ``scheduler`` (a Dask
    scheduler's address) the cluster's tasks: as many shards as it runs at once, unless ``workers``
    is given. Each
    outcome goes to ``report`` as it arrives. A profile that fails is an outcome with its error;
    the others go on. Raises SymbolizeError before any work when OUTDIR is not a directory, two
    inputs would write one output, or a binary, search path or debug directory is missing.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise SymbolizeError("output directory is not a directory", out_dir)
    settings.session().close()  # a missing --binary or --search-path is said once, before any work
    planned = plan(inputs, out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    outcomes: list[ProfileOutcome] = []

    def take(outcome: ProfileOutcome) -> None:
        outcomes.append(outcome)
        if report is not None:
            report(outcome)

    started = time.perf_counter()
    if scheduler is not None:
        from symbolize.batch.cluster import cluster_threads, dask_client, run_dask

        with dask_client(scheduler) as client:
            count = workers if workers is not None else cluster_threads(client)
            _, counts = run_dask(client, shard(planned, count), settings, take)
        metrics = BatchMetrics(workers=count, scheduler=f"dask {scheduler}")
    else:
        from symbolize.batch.local import run_local

        count = workers if workers is not None else available_cpus()
        _, counts = run_local(shard(planned, count), settings, take)
        metrics = BatchMetrics(workers=count)
    metrics.seconds = time.perf_counter() - started
    for process_counts in counts:
        metrics.add_tiers(process_counts)
    order = {planned_profile.in_path: position for position, planned_profile in enumerate(planned)}
    outcomes.sort(key=lambda outcome: order[outcome.in_path])
    metrics.count(outcomes)
    return BatchResult(outcomes, metrics)

"""``symbolize batch``: many profiles rewritten as ``symbolize profile`` rewrites each, on a local
process pool or a Dask cluster, sharded by debug ID (symbolize/batch/plan.py) so that each worker
warms few indexes.

Modules: plan.py (outputs, keys, shards), worker.py (a shard's profiles through
:func:`symbolize.api.symbolize_file`), local.py (the process pool), cluster.py (Dask), metrics.py
(the run's figures), run.py (:func:`run_batch`, the whole run). Nothing here imports typer.
"""

from __future__ import annotations

from symbolize.batch.metrics import BatchMetrics
from symbolize.batch.run import BatchResult, run_batch
from symbolize.batch.worker import ProfileOutcome, RewriteSettings

__all__ = ["BatchMetrics", "BatchResult", "ProfileOutcome", "RewriteSettings", "run_batch"]

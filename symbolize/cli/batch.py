"""What ``batch`` does once its command line is read (symbolize/cli/app.py): the run, a line per profile
on stderr as each is done, the run's figures, the exit code. Nothing here imports typer.

Exit codes (symbolize/cli/exits.py's): 0 every profile rewritten and no gate tripped; 1 a profile
failed on its input (each failure one line on stderr; the others were rewritten still), or the
batch could not start (one line); 70 a profile failed on an internal error; else ``profile``'s
gate codes, 4 (``--fail-unnamed-above``) before 5 (``--require-verified``). The highest in that
order wins: 70, 1, 4, 5.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from symbolize.cli.commands import echo, requested_remote, run_guarded, use_index_store
from symbolize.cli.exits import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, EXIT_UNNAMED_ABOVE, EXIT_UNVERIFIED
from symbolize.cli.options import BATCH_OPTIONS, option
from symbolize.cli.profile_command import unnamed_limit

if TYPE_CHECKING:
    from symbolize.batch import BatchResult, ProfileOutcome

# Which exit code wins when profiles end differently (module docstring).
_EXIT_ORDER = (EXIT_INTERNAL_ERROR, EXIT_INPUT_ERROR, EXIT_UNNAMED_ABOVE, EXIT_UNVERIFIED)


class BatchRequest(NamedTuple):
    """``batch``'s options, one field per declaration in BATCH_OPTIONS, in its order."""

    inputs: Sequence[Path]
    out_dir: Path
    workers: str | None = option(BATCH_OPTIONS, "workers").default
    dask: str | None = option(BATCH_OPTIONS, "dask").default
    binaries: Sequence[Path] | None = option(BATCH_OPTIONS, "binaries").default
    search_paths: Sequence[Path] | None = option(BATCH_OPTIONS, "search_paths").default
    debug_dirs: Sequence[Path] | None = option(BATCH_OPTIONS, "debug_dirs").default
    demangle: str = option(BATCH_OPTIONS, "demangle").default
    no_return_address_adjust: bool = option(BATCH_OPTIONS, "no_return_address_adjust").default
    json_summary: bool = option(BATCH_OPTIONS, "json_summary").default
    drop_frames: str | None = option(BATCH_OPTIONS, "drop_frames").default
    cache_dir: Path | None = option(BATCH_OPTIONS, "cache_dir").default
    no_cache: bool = option(BATCH_OPTIONS, "no_cache").default
    background_index: bool = option(BATCH_OPTIONS, "background_index").default
    index_store: str | None = option(BATCH_OPTIONS, "index_store").default
    fail_unnamed_above: str | None = option(BATCH_OPTIONS, "fail_unnamed_above").default
    require_verified: bool = option(BATCH_OPTIONS, "require_verified").default
    keep_hashes: bool = option(BATCH_OPTIONS, "keep_hashes").default
    debuginfod: Sequence[str] | None = option(BATCH_OPTIONS, "debuginfod").default
    symbol_servers: Sequence[str] | None = option(BATCH_OPTIONS, "symbol_servers").default
    remote: bool = option(BATCH_OPTIONS, "remote").default
    offline: bool = option(BATCH_OPTIONS, "offline").default


def worker_count(text: str | None) -> int | None:
    """``--workers N`` as a number; None when not given. ValueError unless N is a whole number from 1
    (typer's command reports it as a usage error before any work)."""
    if text is None:
        return None
    value = int(text)
    if value < 1:
        raise ValueError(f"{text} is not a number of workers")
    return value


def run_batch_command(request: BatchRequest, *, debug: bool = False) -> int:
    """``batch``: every profile rewritten, a line each on stderr as it is done; returns the exit code."""
    from symbolize.batch import RewriteSettings, run_batch
    from symbolize.batch.tiers import configured_index_store

    results: list[BatchResult] = []

    def report(outcome: ProfileOutcome) -> None:
        for warning in outcome.warnings:
            echo(warning, err=True)
        echo(outcome.line(), err=True)

    def work() -> None:
        use_index_store(request.index_store)
        settings = RewriteSettings(
            binaries=tuple(request.binaries or ()),
            search_paths=tuple(request.search_paths or ()),
            debug_dirs=tuple(request.debug_dirs) if request.debug_dirs else None,
            demangle=request.demangle,
            adjust_return_addresses=not request.no_return_address_adjust,
            cache_dir=request.cache_dir,
            use_cache=not request.no_cache,
            build_missing_indexes=request.background_index,
            drop_frames=request.drop_frames,
            keep_hashes=request.keep_hashes,
            remote=requested_remote(request),
            unnamed_above=unnamed_limit(request.fail_unnamed_above),
            require_verified=request.require_verified,
            index_store=configured_index_store(),
        )
        workers = worker_count(request.workers)
        result = run_batch(request.inputs, request.out_dir, settings, workers=workers, scheduler=request.dask,
                           report=report)  # fmt: skip
        results.append(result)

    code = run_guarded(work, debug=debug)
    if code:
        return code
    result = results[0]
    if request.json_summary:
        echo(json.dumps(batch_json(result), indent=2))
    else:
        echo(result.metrics.format_text(), err=True)
    return batch_exit_code(result.outcomes)


def batch_json(result: BatchResult) -> dict[str, object]:
    """``--json-summary``: {"profiles": [{"input", "output", "exit_code", "seconds", "error", "gates",
    "summary"}], "metrics": BatchMetrics.to_json()}, the profiles in the inputs' order; ``summary``
    is ``symbolize profile --json-summary``'s, null for a profile that failed."""
    return {
        "profiles": [
            {
                "input": str(outcome.in_path),
                "output": None if outcome.failed else str(outcome.out_path),
                "exit_code": outcome.exit_code,
                "seconds": round(outcome.seconds, 4),
                "error": outcome.error,
                "gates": list(outcome.gates),
                "summary": outcome.summary,
            }
            for outcome in result.outcomes
        ],
        "metrics": result.metrics.to_json(),
    }


def batch_exit_code(outcomes: Sequence[ProfileOutcome]) -> int:
    """The exit code of a batch whose profiles ended so (module docstring)."""
    codes = {outcome.exit_code for outcome in outcomes}
    return next((code for code in _EXIT_ORDER if code in codes), 0)

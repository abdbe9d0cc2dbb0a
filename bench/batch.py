"""Throughput of ``symbolize batch`` against one ``symbolize profile`` process at a time, cold and warm.

N bare-hex profiles per bench binary (``make_profile.py``, one seed each: different addresses of the
same binary, as a fleet sends them), rewritten

- by ``symbolize profile IN -o OUT`` one process after another (the baseline): **cold** with an empty
  cache and ``--no-background-index`` (every process decodes from the files), **warm** with the
  indexes prebuilt in ``--cache-dir``;
- by ``symbolize batch ALL -o OUTDIR --workers W`` for W = 1 and 2: **cold** with an empty cache (each
  binary's index is built once, by the worker its shard went to, and answers the rest), **warm**
  with the indexes prebuilt; and once cold with ``--no-background-index`` (no index built: the
  worker keeps the decoded files open across a binary's profiles);
- with ``--index-store URL`` (when this ``symbolize`` has it): **warm store**, an empty local cache
  and a store that holds every index (the fleet's steady state: a new worker fetches, never builds).

Each mode is one fresh process tree, timed whole (wall and, through GNU time, the CPU of the tree);
throughput is profiles per wall second. The **share of time indexing** is the CPU of ``symbolize
index`` over each binary (the untimed preparation of the warm modes) over the CPU of the cold
one-worker batch, which builds each index exactly once. Every batch output is compared byte for
byte with the baseline's. Outputs go to stdout as a markdown table; progress to stderr.

    python bench/batch.py [--binary PATH]... [--profiles 6] [--locations 1000] [--timeout 1800]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from make_profile import write_profile
from measure import Measurement, run_measured
from run import default_binaries

# -P: the working directory (often a checkout) is not put first on sys.path, as the console
# script does not put it: the timed package is the installed one (bench/README.md).
SYMBOLIZE = [sys.executable, "-P", "-m", "symbolize"]


@dataclass
class Mode:
    """One timed way of rewriting every profile."""

    name: str
    runs: list[Measurement] = field(default_factory=list)
    identical: int | None = None  # outputs byte-identical to the baseline's, of those compared
    # The batch's own figures (--json-summary's "metrics": index counts per tier, bytes fetched).
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(run.seconds for run in self.runs)

    @property
    def cpu_seconds(self) -> float | None:
        cpu = [run.cpu_seconds for run in self.runs]
        return None if any(value is None for value in cpu) else sum(value or 0.0 for value in cpu)

    @property
    def failure(self) -> str:
        # Not Measurement.ok, which wants stdout: profile and batch write files and talk on stderr.
        bad = next((run for run in self.runs if run.exit_code != 0 or run.timed_out), None)
        if bad is None:
            return ""
        return "timed out" if bad.timed_out else f"exit {bad.exit_code}: {bad.stderr_tail[:100]}"


def _has_index_store() -> bool:
    result = subprocess.run([*SYMBOLIZE, "batch", "--help"], capture_output=True, text=True, check=False)
    return "--index-store" in result.stdout


def _empty_stdin(scratch: Path) -> Path:
    path = scratch / "empty-stdin"
    path.write_bytes(b"")
    return path


def time_profile_one_at_a_time(
    name: str, profiles: list[Path], out_dir: Path, flags: list[str], scratch: Path, timeout: float
) -> Mode:
    mode = Mode(name)
    out_dir.mkdir(parents=True)
    for number, profile in enumerate(profiles, 1):
        print(f"  {name}: profile {number}/{len(profiles)}", file=sys.stderr)
        out = out_dir / profile.name.replace(".pb.gz", ".symbolized.pb.gz")
        argv = [*SYMBOLIZE, "profile", str(profile), "-o", str(out), *flags]
        mode.runs.append(run_measured(argv, _empty_stdin(scratch), scratch, timeout))
    return mode


def time_batch(name: str, profiles: list[Path], out_dir: Path, flags: list[str], scratch: Path, timeout: float) -> Mode:
    print(f"  {name}", file=sys.stderr)
    argv = [*SYMBOLIZE, "batch", *map(str, profiles), "-o", str(out_dir), "--json-summary", *flags]
    run = run_measured(argv, _empty_stdin(scratch), scratch, timeout)
    mode = Mode(name, [run])
    with contextlib.suppress(OSError, ValueError, KeyError):  # a failed run: its note says why
        mode.metrics = json.loads((scratch / "stdout").read_text())["metrics"]
    return mode


def compare(mode: Mode, out_dir: Path, baseline_dir: Path) -> None:
    expected = sorted(baseline_dir.iterdir())
    mode.identical = sum(
        1
        for path in expected
        if (out_dir / path.name).is_file() and (out_dir / path.name).read_bytes() == path.read_bytes()
    )


def _tree_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, action="append", help="bench binary (default: the three of run.py)")
    parser.add_argument("--profiles", type=int, default=6, help="profiles per binary")
    parser.add_argument("--locations", type=int, default=1000, help="distinct addresses per profile")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per timed process")
    parser.add_argument("--keep", type=Path, help="keep the scratch directory here")
    args = parser.parse_args()

    binaries = args.binary or [path for path, _ in default_binaries() if path.is_file()]
    for missing in [path for path, how in default_binaries() if not path.is_file() and not args.binary]:
        print(f"skipped {missing}: missing", file=sys.stderr)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="symbolize-batch-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    env_note = os.environ.pop("SYMBOLIZE_BACKGROUND_INDEX", None)
    if env_note is not None:
        print("SYMBOLIZE_BACKGROUND_INDEX unset for the bench (the batch modes rely on the default)", file=sys.stderr)

    profile_dir = scratch / "profiles"
    profile_dir.mkdir(exist_ok=True)
    profiles: list[Path] = []
    for binary in binaries:
        for seed in range(1, args.profiles + 1):
            out = profile_dir / f"{binary.name}-{seed}.pb.gz"
            write_profile(binary, out, args.locations, seed)
            profiles.append(out)
    print(f"{len(profiles)} profiles of {args.locations} locations, {len(binaries)} binaries", file=sys.stderr)

    # The warm cache, and with it what indexing costs: one `symbolize index` per binary.
    warm_cache = scratch / "warm-cache"
    index_runs = [
        run_measured(
            [*SYMBOLIZE, "index", str(binary), "--cache-dir", str(warm_cache)],
            _empty_stdin(scratch),
            scratch,
            args.timeout,
        )
        for binary in binaries
    ]
    index_cpu = sum(run.cpu_seconds or 0.0 for run in index_runs)
    index_wall = sum(run.seconds for run in index_runs)
    index_bytes = _tree_bytes(warm_cache / "index")

    modes: list[Mode] = []
    out_root = scratch / "out"
    shutil.rmtree(out_root, ignore_errors=True)
    baseline_dir = out_root / "profile-cold"
    cold = ["--no-background-index"]
    modes.append(
        time_profile_one_at_a_time(
            "profile, one process at a time, cold",
            profiles,
            baseline_dir,
            [*cold, "--cache-dir", str(scratch / "cold-profile")],
            scratch,
            args.timeout,
        )
    )
    modes.append(
        time_profile_one_at_a_time(
            "profile, one process at a time, warm",
            profiles,
            out_root / "profile-warm",
            ["--no-background-index", "--cache-dir", str(warm_cache)],
            scratch,
            args.timeout,
        )
    )
    compare(modes[-1], out_root / "profile-warm", baseline_dir)
    batch_modes = []
    for workers in (1, 2):
        batch_modes += [
            (
                f"batch, {workers} worker{'s' if workers > 1 else ''}, cold",
                workers,
                ["--cache-dir", str(scratch / f"cold-batch-{workers}")],
            ),
            (f"batch, {workers} worker{'s' if workers > 1 else ''}, warm", workers, ["--cache-dir", str(warm_cache)]),
        ]
    batch_modes.append(
        ("batch, 2 workers, cold, no index built", 2, ["--no-background-index", "--cache-dir", str(scratch / "none")])
    )
    if _has_index_store():
        for workers in (1, 2):
            batch_modes.append(
                (
                    f"batch, {workers} worker{'s' if workers > 1 else ''}, warm store",
                    workers,
                    ["--cache-dir", str(scratch / f"store-local-{workers}"), "--index-store", str(scratch / "store")],
                )
            )
        publish = [
            *SYMBOLIZE,
            "index",
            *map(str, binaries),
            "--cache-dir",
            str(scratch / "publisher"),
            "--index-store",
            str(scratch / "store"),
        ]
        subprocess.run(publish, capture_output=True, check=False)
    for name, workers, flags in batch_modes:
        out_dir = out_root / name.replace(", ", "-").replace(" ", "-")
        mode = time_batch(name, profiles, out_dir, ["--workers", str(workers), *flags], scratch, args.timeout)
        compare(mode, out_dir, baseline_dir)
        modes.append(mode)

    print_report(modes, profiles, binaries, args, index_cpu, index_wall, index_bytes)
    if args.keep is None:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if any(mode.failure for mode in modes) else 0


def print_report(
    modes: list[Mode],
    profiles: list[Path],
    binaries: list[Path],
    args: argparse.Namespace,
    index_cpu: float,
    index_wall: float,
    index_bytes: int,
) -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{len(profiles)} profiles ({args.profiles} per binary, {args.locations} locations each) of "
        f"{', '.join(binary.name for binary in binaries)}; {os.cpu_count()} CPUs, load {load:.1f} at the end\n"
    )
    print(
        "| mode | wall s | CPU s | profiles/s | profiles/hour | vs profile cold | outputs identical "
        "| indexes built | MiB fetched from the store | note |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    base = modes[0].seconds
    for mode in modes:
        rate = len(profiles) / mode.seconds if mode.seconds else 0.0
        cpu = f"{mode.cpu_seconds:.1f}" if mode.cpu_seconds is not None else "n/a"
        same = "baseline" if mode.identical is None else f"{mode.identical}/{len(profiles)}"
        index = mode.metrics.get("index") or {}
        built = str(index.get("built", "n/a")) if mode.metrics else "n/a"
        fetched = f"{index.get('bytes_fetched', 0) / 2**20:.1f}" if index else "n/a"
        print(
            f"| {mode.name} | {mode.seconds:.1f} | {cpu} | {rate:.2f} | {rate * 3600:,.0f} | "
            f"{base / mode.seconds if mode.seconds else 0:.2f}x | {same} | {built} | {fetched} | {mode.failure} |"
        )
    cold_batch = next(mode for mode in modes if mode.name == "batch, 1 worker, cold")
    share = index_cpu / cold_batch.cpu_seconds if cold_batch.cpu_seconds else float("nan")
    print(
        f"\nIndexing: `symbolize index` of the {len(binaries)} binaries took {index_wall:.1f} s wall, "
        f"{index_cpu:.1f} s CPU, {index_bytes / 2**20:.1f} MiB of indexes; {share:.0%} of the cold one-worker "
        f"batch's CPU ({cold_batch.cpu_seconds or 0:.1f} s)."
    )


if __name__ == "__main__":
    sys.exit(main())

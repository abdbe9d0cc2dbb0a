"""Time ``symbolize index`` of one binary: each run a fresh process into a fresh cache directory.

The index build is the issue's "index build" figure: whole-process wall and CPU time of
``symbolize index BINARY --cache-dir DIR``, with the compiled kernels and, with ``--pure-python``,
on the Python readers alone (``SYMBOLIZE_PURE_PYTHON=1``), so the compiled source's ratio to the
Python reference is measured in the same run.
"""

from __future__ import annotations

import shutil
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from caches import SYMBOLIZE
from measure import Measurement, run_measured

INDEX_HEADER = ["binary", "mode", "median s", "min s", "CPU s", "CPU vs Python", "peak RSS MB", "note"]


@dataclass(frozen=True, slots=True)
class IndexTiming:
    """The runs of one mode (``compiled`` or ``Python only``) of one binary's index build."""

    label: str
    mode: str
    runs: list[Measurement]
    failure: str = ""

    @property
    def median_cpu_seconds(self) -> float | None:
        cpu = [run.cpu_seconds for run in self.runs if run.cpu_seconds is not None]
        return statistics.median(cpu) if cpu else None


def time_index_builds(
    binary: Path, label: str, scratch: Path, repeat: int, pure_python: bool, timeout: float
) -> list[IndexTiming]:
    """``repeat`` builds per mode, the modes alternating so that load drift spreads over both."""
    modes = {"compiled": []} | ({"Python only": ["env", "SYMBOLIZE_PURE_PYTHON=1"]} if pure_python else {})
    runs: dict[str, list[Measurement]] = {mode: [] for mode in modes}
    failures = dict.fromkeys(modes, "")
    empty = scratch / "empty-stdin"
    empty.write_bytes(b"")
    for repetition in range(repeat):
        for mode, prefix in modes.items():
            if failures[mode]:
                continue
            cache_dir = scratch / f"index-{repetition}"
            shutil.rmtree(cache_dir, ignore_errors=True)
            run = run_measured(
                [*prefix, *SYMBOLIZE, "index", str(binary), "--cache-dir", str(cache_dir)], empty, scratch, timeout
            )
            shutil.rmtree(cache_dir, ignore_errors=True)
            if not run.ok:
                failures[mode] = "timed out" if run.timed_out else f"exit {run.exit_code}: {run.stderr_tail}"[:160]
                print(f"  index {mode}: {failures[mode]}", file=sys.stderr)
                continue
            runs[mode].append(run)
            print(f"  index rep {repetition + 1}/{repeat} {mode}: {run.seconds:.3f} s", file=sys.stderr)
    return [IndexTiming(label, mode, runs[mode], failures[mode]) for mode in modes]


def index_rows(timings: list[IndexTiming]) -> list[list[str]]:
    """Rows for INDEX_HEADER; CPU is also given as a ratio to the Python-only build of the same binary."""
    python_cpu = {timing.label: timing.median_cpu_seconds for timing in timings if timing.mode == "Python only"}
    rows = []
    for timing in timings:
        if timing.failure or not timing.runs:
            rows.append([timing.label, timing.mode, "n/a", "n/a", "n/a", "n/a", "n/a", timing.failure or "no runs"])
            continue
        seconds = statistics.median(run.seconds for run in timing.runs)
        fastest = min(run.seconds for run in timing.runs)
        cpu = timing.median_cpu_seconds
        reference = python_cpu.get(timing.label)
        ratio = f"{cpu / reference:.2f}x" if cpu is not None and reference else "n/a"
        sizes = [run.peak_rss_bytes for run in timing.runs if run.peak_rss_bytes is not None]
        rss = f"{max(sizes) / 2**20:.0f}" if sizes else "n/a"
        cpu_text = f"{cpu:.3f}" if cpu is not None else "n/a"
        rows.append([timing.label, timing.mode, f"{seconds:.3f}", f"{fastest:.3f}", cpu_text, ratio, rss, ""])
    return rows

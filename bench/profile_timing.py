"""Time a whole ``symbolize profile`` of a bare-hex profile with many unique locations, cold and warm.

The profile comes from ``make_profile.py``. Each run is a fresh process, ``symbolize profile IN -o
OUT``; cold runs add ``--no-cache`` and warm runs ``--cache-dir`` of a prebuilt index (``caches.py``).
Beside them, when Google's pprof is given (``--pprof``), ``pprof -symbolize=local -proto -output OUT IN``:
pprof driving the llvm-symbolizer on PATH, the issue's yardstick for a whole profile.
A run counts only when it exits 0 and writes OUT; the share of locations that came back with at least
one line shows the run did the work.
"""

from __future__ import annotations

import gzip
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from caches import SYMBOLIZE, Prepared, cold_flags
from make_profile import write_profile
from measure import Measurement, run_measured

from symbolize.proto import profile_pb2

PROFILE_HEADER = [
    "binary", "locations", "samples", "mode", "median s", "min s", "CPU s", "peak RSS MB", "named locations", "note",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class ProfileJob:
    binary: Path
    label: str
    locations: int
    seed: int
    repeat: int
    timeout: float
    # Google's pprof binary, timed on the same profile when set.
    pprof: Path | None = None


PPROF_MODE = "pprof -symbolize=local"


def named_share(out: Path) -> str:
    """Share of the rewritten profile's locations that have at least one line."""
    try:
        data = out.read_bytes()
        profile = profile_pb2.Profile.FromString(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    except (OSError, ValueError) as error:
        return f"unreadable output: {error}"[:80]
    if not profile.location:
        return "no locations"
    named = sum(1 for location in profile.location if len(location.line) > 0)
    return f"{100 * named / len(profile.location):.1f}%"


def _failure(run: Measurement, out: Path) -> str:
    if run.timed_out:
        return "timed out"
    if run.exit_code != 0:
        return f"exit {run.exit_code}: {run.stderr_tail}"[:160]
    if not out.is_file() or out.stat().st_size == 0:
        return "no output profile"
    return ""


def time_profile(
    job: ProfileJob, index: Prepared, cache_dir: Path, scratch: Path
) -> tuple[list[list[str]], dict[str, float]]:
    """Rows for PROFILE_HEADER (cold, warm, then pprof's when given; runs alternating between the
    modes) and each mode's median wall time."""
    profile_in = scratch / "profile-in.pb.gz"
    samples = write_profile(job.binary, profile_in, job.locations, job.seed)

    def symbolize(flags: list[str]) -> Callable[[Path], list[str]]:
        return lambda out: [*SYMBOLIZE, "profile", str(profile_in), "-o", str(out), *flags]

    modes: dict[str, Callable[[Path], list[str]] | None] = {
        "cold": symbolize(cold_flags()),
        "warm": None if index.failure else symbolize(["--cache-dir", str(cache_dir), "--no-background-index"]),
    }
    if job.pprof is not None:
        pprof = str(job.pprof)
        modes[PPROF_MODE] = lambda out: [pprof, "-symbolize=local", "-proto", "-output", str(out), str(profile_in)]
    runs: dict[str, list[Measurement]] = {mode: [] for mode in modes}
    failures = {mode: (index.failure if argv is None else "") for mode, argv in modes.items()}
    shares: dict[str, str] = {}
    empty = scratch / "empty-stdin"
    empty.write_bytes(b"")
    for repetition in range(job.repeat):
        for position, (mode, argv) in enumerate(modes.items()):
            if argv is None or failures[mode]:
                continue
            out = scratch / f"profile-out-{position}.pb.gz"
            out.unlink(missing_ok=True)
            run = run_measured(argv(out), empty, scratch, job.timeout)
            failures[mode] = _failure(run, out)
            if failures[mode]:
                print(f"  profile {mode}: {failures[mode]}", file=sys.stderr)
                continue
            runs[mode].append(run)
            shares.setdefault(mode, named_share(out))
            print(f"  profile rep {repetition + 1}/{job.repeat} {mode}: {run.seconds:.3f} s", file=sys.stderr)

    rows = []
    medians: dict[str, float] = {}
    for mode in modes:
        common = [job.label, str(job.locations), str(samples), mode]
        if failures[mode] or not runs[mode]:
            rows.append([*common, "n/a", "n/a", "n/a", "n/a", "-", failures[mode] or "no runs"])
            continue
        seconds = medians[mode] = statistics.median(run.seconds for run in runs[mode])
        fastest = min(run.seconds for run in runs[mode])
        cpu = [run.cpu_seconds for run in runs[mode] if run.cpu_seconds is not None]
        cpu_text = f"{statistics.median(cpu):.3f}" if cpu else "n/a"
        sizes = [run.peak_rss_bytes for run in runs[mode] if run.peak_rss_bytes is not None]
        rss = f"{max(sizes) / 2**20:.0f}" if sizes else "n/a"
        note = index.note if mode == "warm" else ""
        rows.append([*common, f"{seconds:.3f}", f"{fastest:.3f}", cpu_text, rss, shares.get(mode, "-"), note])
    return rows, medians

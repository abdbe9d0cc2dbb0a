"""Time a whole ``symbolize profile`` of a bare-hex profile with many unique locations, cold and warm.

The profile comes from ``make_profile.py``. Each run is a fresh process, ``symbolize profile IN -o
OUT``; cold runs add ``--no-cache`` and warm runs ``--cache-dir`` of a prebuilt index (``caches.py``).
A run counts only when it exits 0 and writes OUT; the share of locations that came back with at least
one line shows the run did the work.
"""

from __future__ import annotations

import gzip
import statistics
import sys
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


def time_profile(job: ProfileJob, index: Prepared, cache_dir: Path, scratch: Path) -> list[list[str]]:
    """Rows for PROFILE_HEADER: cold then warm, runs alternating between the two."""
    profile_in = scratch / "profile-in.pb.gz"
    samples = write_profile(job.binary, profile_in, job.locations, job.seed)
    modes: dict[str, list[str] | None] = {
        "cold": cold_flags(),
        "warm": None if index.failure else ["--cache-dir", str(cache_dir), "--no-background-index"],
    }
    runs: dict[str, list[Measurement]] = {mode: [] for mode in modes}
    failures = {mode: (index.failure if flags is None else "") for mode, flags in modes.items()}
    shares: dict[str, str] = {}
    empty = scratch / "empty-stdin"
    empty.write_bytes(b"")
    for repetition in range(job.repeat):
        for mode, flags in modes.items():
            if flags is None or failures[mode]:
                continue
            out = scratch / f"profile-out-{mode}.pb.gz"
            out.unlink(missing_ok=True)
            run = run_measured(
                [*SYMBOLIZE, "profile", str(profile_in), "-o", str(out), *flags], empty, scratch, job.timeout
            )
            failures[mode] = _failure(run, out)
            if failures[mode]:
                print(f"  profile {mode}: {failures[mode]}", file=sys.stderr)
                continue
            runs[mode].append(run)
            shares.setdefault(mode, named_share(out))
            print(f"  profile rep {repetition + 1}/{job.repeat} {mode}: {run.seconds:.3f} s", file=sys.stderr)

    rows = []
    for mode in modes:
        common = [job.label, str(job.locations), str(samples), mode]
        if failures[mode] or not runs[mode]:
            rows.append([*common, "n/a", "n/a", "n/a", "n/a", "-", failures[mode] or "no runs"])
            continue
        seconds = statistics.median(run.seconds for run in runs[mode])
        fastest = min(run.seconds for run in runs[mode])
        cpu = [run.cpu_seconds for run in runs[mode] if run.cpu_seconds is not None]
        cpu_text = f"{statistics.median(cpu):.3f}" if cpu else "n/a"
        sizes = [run.peak_rss_bytes for run in runs[mode] if run.peak_rss_bytes is not None]
        rss = f"{max(sizes) / 2**20:.0f}" if sizes else "n/a"
        note = index.note if mode == "warm" else ""
        rows.append([*common, f"{seconds:.3f}", f"{fastest:.3f}", cpu_text, rss, shares.get(mode, "-"), note])
    return rows

"""Prepare, untimed, the caches that the "warm" benchmark rows reuse.

- ``symbolize``: ``symbolize index BINARY --cache-dir DIR`` prebuilds its persistent index; the timed
  runs then pass ``--cache-dir DIR``. Cold runs pass ``--no-cache``. Both flags are recent, so an
  installed ``symbolize`` without an ``index`` command gets plain cold runs and no warm row.
- ``symbolic``: a SymCache file written once by ``symbolic_lookup.py --write-symcache``.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from measure import run_measured

BENCH_DIR = Path(__file__).resolve().parent
# -P: the working directory (often a checkout) is not put first on sys.path, as the console
# script does not put it: the timed package is the installed one (bench/README.md).
SYMBOLIZE = [sys.executable, "-P", "-m", "symbolize"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A cache built before timing: how long it took, or why it could not be built."""

    seconds: float = 0.0
    failure: str = ""

    @property
    def note(self) -> str:
        return self.failure or f"cache built in {self.seconds:.1f} s, untimed"


@functools.cache
def symbolize_has_cache() -> bool:
    """Whether the installed ``symbolize`` has the ``index`` command (and with it the cache flags)."""
    try:
        result = subprocess.run([*SYMBOLIZE, "index", "--help"], capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def cold_flags() -> list[str]:
    return ["--no-cache"] if symbolize_has_cache() else []


def prepare_symbolize_index(binary: Path, cache_dir: Path, scratch: Path, timeout: float) -> Prepared:
    if not symbolize_has_cache():
        return Prepared(failure="this symbolize has no `index` command (no persistent cache yet)")
    cache_dir.mkdir(parents=True, exist_ok=True)
    argv = [*SYMBOLIZE, "index", str(binary), "--cache-dir", str(cache_dir)]
    return _prepare(argv, scratch, timeout, "symbolize index", lambda: any(cache_dir.iterdir()))


def prepare_symcache(binary: Path, symcache: Path, scratch: Path, timeout: float) -> Prepared:
    argv = [
        sys.executable,
        str(BENCH_DIR / "symbolic_lookup.py"),
        "--obj",
        str(binary),
        "--write-symcache",
        str(symcache),
    ]
    return _prepare(argv, scratch, timeout, "building the SymCache", symcache.exists)


def _prepare(argv: list[str], scratch: Path, timeout: float, what: str, produced: Callable[[], bool]) -> Prepared:
    empty = scratch / "empty-stdin"
    empty.write_bytes(b"")
    result = run_measured(argv, empty, scratch, timeout)
    if result.timed_out:
        return Prepared(failure=f"{what} timed out")
    if result.exit_code != 0 or not produced():
        return Prepared(failure=f"{what} failed: {result.stderr_tail or result.exit_code}"[:160])
    return Prepared(seconds=result.seconds)

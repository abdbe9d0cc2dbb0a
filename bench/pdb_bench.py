"""Benchmark `symbolize lookup` on a 20 MB PDB against llvm-symbolizer, and check their answers agree.

The image is ``bench/work/pdbgen.exe`` with its ``pdbgen.pdb`` (``build_pdb.sh``, generated C++ for
x86_64-pc-windows-msvc, clang + lld-link), built on demand when missing. N addresses (default
1,000, fixed seed) are drawn as ``bench/addresses.py`` draws them from ELF symbols, here from the
PDB's publics (each reaching the next public): a random function, then a random byte inside it.
Each repetition runs, one after another so that drift in machine load spreads over all of them:

- ``llvm-symbolizer --obj=EXE --inlines --demangle --output-style=JSON`` (it finds the PDB by the
  executable's CodeView record, as we do);
- ``symbolize lookup --obj EXE --json --no-cache`` (cold: the PDB read from scratch);
- ``symbolize lookup --obj EXE --json --cache-dir DIR --no-background-index`` (warm, after one
  ``symbolize index EXE --cache-dir DIR``, whose wall and CPU time are printed beside the table).

Each row gives the median wall time and the median CPU time (user + sys of the process tree) over
the repetitions, and the ratio to llvm-symbolizer's median. Then the answers of the first runs are
compared frame by frame (function, file, line, column, innermost first) under the differential
tests' written rules (``tests/test_windows_differential.py``): the only allowed difference is the
line of an inlined frame, where llvm-symbolizer 14 reads the next annotation row; every other
difference is counted and listed.

    python bench/pdb_bench.py                  # 1,000 addresses, 5 repetitions
    python bench/pdb_bench.py --count 1000 --repeat 3 --markdown
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / "work"
EXE = WORK_DIR / "pdbgen.exe"
PDB = WORK_DIR / "pdbgen.pdb"
# -P: the working directory (often a checkout) is not put first on sys.path, as the console
# script does not put it: the timed package is the installed one (bench/README.md).
SYMBOLIZE = [sys.executable, "-P", "-m", "symbolize"]
MIN_PDB_BYTES = 20 * 10**6

sys.path.insert(0, str(REPO))  # the differential tests' rule for inlined lines
from symbolize.formats.pdb import PdbFile  # noqa: E402
from symbolize.formats.pe.file import PeFile  # noqa: E402
from tests.test_windows_differential import llvm14_inline_line  # noqa: E402

FrameKey = tuple[str | None, str | None, int, int]


class Timing(NamedTuple):
    wall: float
    cpu: float
    output: bytes


def ensure_built() -> None:
    if not (EXE.exists() and PDB.exists()):
        subprocess.run([str(BENCH_DIR / "build_pdb.sh")], check=True)
    if PDB.stat().st_size < MIN_PDB_BYTES:
        sys.exit(f"{PDB} is {PDB.stat().st_size} bytes, under the 20 MB this benchmark is about")


def sample_addresses(count: int, seed: int) -> list[int]:
    image = PeFile(EXE)
    with PdbFile(PDB, image_base=image.image_base) as pdb:
        functions = [symbol for symbol in pdb.symbols() if symbol.size > 0]
    rng = random.Random(seed)
    return [(function := rng.choice(functions)).vaddr + rng.randrange(function.size) for _ in range(count)]


def timed(argv: list[str], stdin: bytes) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(argv, input=stdin, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu, result.stdout)


def ours(output: bytes) -> dict[int, list[FrameKey]]:
    answers = {}
    for line in output.splitlines():
        entry = json.loads(line)
        answers[int(entry["address"], 16)] = [
            (f["function"], f["file"], f["line"], f["column"]) for f in entry["frames"] if f["function"] or f["file"]
        ]
    return answers


def theirs(output: bytes) -> dict[int, list[FrameKey]]:
    answers = {}
    for line in output.splitlines():
        entry: dict[str, Any] = json.loads(line)
        frames = [
            (
                None if f["FunctionName"] in ("", "??") else f["FunctionName"],
                f["FileName"] or None,
                f["Line"],
                f["Column"],
            )
            for f in entry["Symbol"]
        ]
        answers[int(entry["Address"], 16)] = [] if frames == [(None, None, 0, 0)] else frames
    return answers


def classify(pdb: PdbFile, vaddr: int, mine: list[FrameKey], llvm: list[FrameKey]) -> str:
    """ "same", "llvm14 inline line" (the written rule), or "DIFFERENT"."""
    if mine == llvm:
        return "same"
    sites = pdb.inline_sites_at(vaddr)
    if not (len(mine) == len(llvm) == len(sites) + 1 and mine[-1] == llvm[-1]):
        return "DIFFERENT"
    for ours_frame, theirs_frame, (low, first, site_annotations) in zip(mine, llvm, sites, strict=False):
        if (ours_frame[0], ours_frame[1], ours_frame[3]) != (theirs_frame[0], theirs_frame[1], theirs_frame[3]):
            return "DIFFERENT"
        if theirs_frame[2] != llvm14_inline_line(site_annotations, vaddr - low, first):
            return "DIFFERENT"
    return "llvm14 inline line"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    ensure_built()
    llvm_symbolizer = shutil.which("llvm-symbolizer")
    if llvm_symbolizer is None:
        sys.exit("llvm-symbolizer is not on PATH")
    # As pip install would: no bytecode compilation inside the timed runs.
    compileall.compile_dir(str(REPO / "formats"), quiet=1)
    compileall.compile_dir(str(REPO / "symbolize"), quiet=1)
    vaddrs = sample_addresses(args.count, args.seed)
    stdin = "".join(f"0x{vaddr:x}\n" for vaddr in vaddrs).encode()
    lookup = [*SYMBOLIZE, "lookup", "--obj", str(EXE), "--json"]
    with tempfile.TemporaryDirectory(prefix="pdb-bench-") as scratch:
        cache_dir = Path(scratch) / "cache"
        index_run = timed([*SYMBOLIZE, "index", str(EXE), "--cache-dir", str(cache_dir)], b"")
        index_bytes = sum(path.stat().st_size for path in cache_dir.rglob("*") if path.is_file())
        tools = {
            "llvm-symbolizer": [llvm_symbolizer, f"--obj={EXE}", "--inlines", "--demangle", "--output-style=JSON"],
            "symbolize (cold)": [*lookup, "--no-cache"],
            "symbolize (warm)": [*lookup, "--cache-dir", str(cache_dir), "--no-background-index"],
        }
        runs: dict[str, list[Timing]] = {name: [] for name in tools}
        for repetition in range(args.repeat):
            for name, argv in tools.items():
                runs[name].append(timed(argv, stdin))
                print(f"run {repetition + 1}/{args.repeat} {name}: {runs[name][-1].wall:.2f} s", file=sys.stderr)
    baseline_wall = statistics.median(t.wall for t in runs["llvm-symbolizer"])
    baseline_cpu = statistics.median(t.cpu for t in runs["llvm-symbolizer"])
    llvm = theirs(runs["llvm-symbolizer"][0].output)
    image = PeFile(EXE)
    pdb = PdbFile(PDB, image_base=image.image_base)
    load = os.getloadavg()
    print(f"PDB {PDB.stat().st_size:,} B, image {EXE.stat().st_size:,} B; {args.count} addresses, seed {args.seed}; "
          f"repeat {args.repeat}; load average {load[0]:.1f} / {load[1]:.1f}; "
          f"index built in {index_run.wall:.1f} s wall, {index_run.cpu:.1f} s CPU (once, not in the table), "
          f"{index_bytes:,} B")  # fmt: skip
    print()
    print("| tool | wall (median) | vs llvm | CPU (median) | vs llvm | answers |")
    print("|---|---|---|---|---|---|")
    for name, timings in runs.items():
        wall = statistics.median(t.wall for t in timings)
        cpu = statistics.median(t.cpu for t in timings)
        if name == "llvm-symbolizer":
            verdict = "truth"
        else:
            mine = ours(timings[0].output)
            outcomes = [
                classify(pdb, vaddr, mine.get(vaddr, []), llvm.get(vaddr, [])) for vaddr in dict.fromkeys(vaddrs)
            ]
            different = [hex(v) for v, o in zip(dict.fromkeys(vaddrs), outcomes, strict=True) if o == "DIFFERENT"]
            verdict = (
                f"{outcomes.count('same')} same, {outcomes.count('llvm14 inline line')} llvm14 inline line, "
                f"{len(different)} different"
            )
            if different:
                print(f"{name} differs at: {' '.join(different[:20])}", file=sys.stderr)
        print(
            f"| {name} | {wall:.3f} s | {wall / baseline_wall:.2f}x | {cpu:.3f} s | {cpu / baseline_cpu:.2f}x "
            f"| {verdict} |"
        )


if __name__ == "__main__":
    main()

"""Benchmark `symbolize lookup` against llvm-symbolizer, addr2line and Sentry's symbolic.

For each batch size N, samples N object-file addresses inside functions of the binary (fixed seed),
feeds them on stdin to each tool as a fresh process, and records whole-process wall time and peak
RSS. Runs alternate between tools within each repetition so that drift in machine load (the bench
machine may be shared) spreads over all tools instead of landing on one.

    python bench/run.py                                  # the large binary (bench/build_large.sh)
    python bench/run.py --binary fixtures/bin/<x> --sizes 100,1000 --repeat 3
    python bench/run.py --markdown >> bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from addresses import FunctionRange, SamplingError, function_ranges, sample_vaddrs
from environment import describe_environment
from measure import Measurement, run_measured
from outputs import Stacks, agreement, parse_stacks

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
LARGE_BINARY = BENCH_DIR / "work" / "large"
BASELINE = "llvm-symbolizer"
DEFAULT_SEED = 1234


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    argv: list[str] | None
    unavailable: str = ""


@dataclass
class Cell:
    """All runs of one tool at one batch size."""

    runs: list[Measurement] = field(default_factory=list)
    failure: str = ""
    stacks: Stacks | None = None

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(run.seconds for run in self.runs) if self.runs else None

    @property
    def peak_rss_mb(self) -> float | None:
        sizes = [run.peak_rss_bytes for run in self.runs if run.peak_rss_bytes is not None]
        return max(sizes) / 2**20 if sizes else None


def make_tools(binary: Path, symcache: Path, symcache_ready: str) -> list[Tool]:
    python = sys.executable
    symbolic_script = str(BENCH_DIR / "symbolic_lookup.py")
    llvm_symbolizer = shutil.which("llvm-symbolizer")
    addr2line = shutil.which("addr2line")
    return [
        Tool("symbolize", [python, "-m", "symbolize", "lookup", "--obj", str(binary), "--json"]),
        Tool(
            BASELINE,
            [llvm_symbolizer, f"--obj={binary}", "--inlines", "--demangle"] if llvm_symbolizer else None,
            "llvm-symbolizer not on PATH",
        ),
        Tool(
            "addr2line",
            [addr2line, "-f", "-i", "-C", "-e", str(binary)] if addr2line else None,
            "addr2line not on PATH",
        ),
        Tool("symbolic (cold)", [python, symbolic_script, "--obj", str(binary)]),
        Tool(
            "symbolic (warm)",
            None if symcache_ready else [python, symbolic_script, "--obj", str(binary), "--symcache", str(symcache)],
            symcache_ready,
        ),
    ]


def prepare_symcache(binary: Path, symcache: Path, scratch: Path, timeout: float) -> str:
    """Write the SymCache the warm runs reuse (untimed). Returns why it failed, or ''."""
    empty = scratch / "empty"
    empty.write_bytes(b"")
    argv = [sys.executable, str(BENCH_DIR / "symbolic_lookup.py"), "--obj", str(binary)]
    result = run_measured([*argv, "--write-symcache", str(symcache)], empty, scratch, timeout)
    if result.exit_code != 0 or not symcache.exists():
        return f"building the SymCache failed: {result.stderr_tail or result.exit_code}"
    return ""


def describe_failure(run: Measurement) -> str:
    if run.timed_out:
        return "timed out"
    if run.exit_code != 0:
        return f"exit {run.exit_code}: {run.stderr_tail}"[:160]
    return "no output"


def benchmark(
    tools: Sequence[Tool], functions: list[FunctionRange], sizes: Sequence[int], args: argparse.Namespace
) -> dict[tuple[str, int], Cell]:
    cells: dict[tuple[str, int], Cell] = {(tool.name, n): Cell() for tool in tools for n in sizes}
    for tool in tools:
        if tool.argv is None:
            for n in sizes:
                cells[tool.name, n].failure = tool.unavailable
    with tempfile.TemporaryDirectory(prefix="symbolize-bench-") as scratch_name:
        scratch = Path(scratch_name)
        for n in sizes:
            addresses = scratch / f"addresses-{n}.txt"
            vaddrs = sample_vaddrs(functions, n, args.seed)
            addresses.write_text("".join(f"0x{vaddr:x}\n" for vaddr in vaddrs), encoding="ascii")
            repeat = args.repeat or (3 if n >= 10_000 else 5)
            for repetition in range(repeat):
                for tool in tools:
                    cell = cells[tool.name, n]
                    if tool.argv is None or cell.failure:
                        continue
                    run = run_measured(tool.argv, addresses, scratch, args.timeout)
                    if not run.ok:
                        # One failure is enough: a tool still being written should not cost K timeouts.
                        cell.failure = describe_failure(run)
                        print(f"  {tool.name} N={n}: {cell.failure}", file=sys.stderr)
                        continue
                    cell.runs.append(run)
                    if len(cell.runs) == 1 and run.stdout_path is not None:
                        text = run.stdout_path.read_text(encoding="utf-8", errors="replace")
                        cell.stacks = parse_stacks(tool.name, text)
                    print(
                        f"  N={n} rep {repetition + 1}/{repeat} {tool.name}: {run.seconds:.3f} s",
                        file=sys.stderr,
                    )
    return cells


def table_rows(tools: Sequence[Tool], sizes: Sequence[int], cells: dict[tuple[str, int], Cell]) -> list[list[str]]:
    rows = []
    for n in sizes:
        baseline = cells.get((BASELINE, n))
        baseline_seconds = baseline.median_seconds if baseline else None
        baseline_stacks = baseline.stacks if baseline else None
        for tool in tools:
            cell = cells[tool.name, n]
            seconds = cell.median_seconds
            if seconds is None or cell.failure:
                rows.append([tool.name, str(n), "n/a", "n/a", "n/a", "-", cell.failure or "no runs"])
                continue
            ratio = f"{seconds / baseline_seconds:.2f}x" if baseline_seconds else "n/a"
            rss = cell.peak_rss_mb
            agree = agreement(cell.stacks, baseline_stacks)
            rows.append(
                [tool.name, str(n), f"{seconds:.3f}", ratio, f"{rss:.0f}" if rss is not None else "n/a", agree, ""]
            )
    return rows


HEADER = ["tool", "N", "median s", f"vs {BASELINE}", "peak RSS MB", "same frames", "note"]


def format_plain(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in [HEADER, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def format_markdown(rows: list[list[str]], environment: list[tuple[str, str]]) -> str:
    lines = [f"- {key}: {value}" for key, value in environment]
    lines += ["", "| " + " | ".join(HEADER) + " |", "|" + "|".join(["---"] * len(HEADER)) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--sizes wants comma-separated integers, got {text!r}") from error
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"--sizes wants positive integers, got {text!r}")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, default=LARGE_BINARY, help="ELF binary with DWARF")
    parser.add_argument("--sizes", type=parse_sizes, default=[100, 1000, 10_000], help="e.g. 100,1000,10000")
    parser.add_argument("--repeat", type=int, default=0, help="runs per tool and N (default 5; 3 for N>=10000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="address sampling seed")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before one run is killed")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown section for RESULTS.md")
    args = parser.parse_args()

    binary: Path = args.binary.resolve()
    if not binary.is_file():
        hint = f"build it with: {BENCH_DIR.relative_to(REPO_DIR)}/build_large.sh" if args.binary == LARGE_BINARY else ""
        print(f"error: no binary at {binary}. {hint}".rstrip(), file=sys.stderr)
        return 2
    try:
        functions = function_ranges(binary)
    except SamplingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="symbolize-bench-cache-") as cache_dir_name:
        cache_dir = Path(cache_dir_name)
        symcache = cache_dir / "binary.symcache"
        symcache_failure = prepare_symcache(binary, symcache, cache_dir, args.timeout)
        tools = make_tools(binary, symcache, symcache_failure)
        print(f"{binary}: {len(functions)} functions; sizes {args.sizes}", file=sys.stderr)
        cells = benchmark(tools, functions, args.sizes, args)

    rows = table_rows(tools, args.sizes, cells)
    if args.markdown:
        print(format_markdown(rows, describe_environment(binary, len(functions), args)))
    else:
        print(format_plain(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

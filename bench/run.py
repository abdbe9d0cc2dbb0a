"""Benchmark `symbolize lookup` against llvm-symbolizer, addr2line, gimli's addr2line, blazesym and Sentry's symbolic.

For each binary and batch size N, samples N object-file addresses inside functions of the binary
(fixed seed), feeds them on stdin to each tool as a fresh process, and records whole-process wall time
and peak RSS. Runs alternate between tools within each repetition so that drift in machine load (the
bench machine may be shared) spreads over all tools instead of landing on one. `symbolize` and
`symbolic` run cold (no cache) and warm (a cache built before timing). Then a whole `symbolize profile`
of a 10,000-location bare-hex profile of the first binary is timed, cold and warm, beside pprof
driving llvm-symbolizer; each binary's `symbolize index` is timed; and a last table sets the figures
beside the compiled core's goals (goals.py).

    python bench/run.py                                  # libpython, bench/work/rustgen, bench/work/cppcheck
    python bench/run.py --binary fixtures/bin/<x> --sizes 100,1000 --repeat 3
    python bench/run.py --markdown                       # a section for bench/RESULTS.md
    python bench/run.py --sizes 1000 --pure-python       # cold with and without the compiled kernels
    python bench/run.py --output-style json              # symbolize and llvm-symbolizer both print JSON

`symbolize lookup` and llvm-symbolizer print the same layout in one run (llvm-symbolizer's text by
default, its JSON with ``--output-style json``): a ratio between a tool printing JSON and one printing
text times the printing as much as the lookup (at 10k llvm-symbolizer's JSON is slower than its text).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import re
import shutil
import statistics
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from addresses import FunctionRange, SamplingError, function_ranges, sample_vaddrs
from caches import SYMBOLIZE, Prepared, cold_flags, prepare_symbolize_index, prepare_symcache
from environment import describe_environment, git_revision, rust_peer
from goals import GOALS_HEADER, Figures, lookup_goal_rows, parse_index_before, profile_goal_rows
from index_timing import INDEX_HEADER, index_rows, time_index_builds
from measure import Measurement, run_measured
from outputs import Stacks, agreement, parse_stacks
from profile_timing import PPROF_MODE, PROFILE_HEADER, ProfileJob, time_profile

BENCH_DIR = Path(__file__).resolve().parent
WORK_DIR = BENCH_DIR / "work"
BASELINE = "llvm-symbolizer"
DEFAULT_SEED = 1234


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    argv: list[str] | None
    # Why the tool cannot run when argv is None; otherwise shown beside its rows (cache build time).
    note: str = ""


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
    def min_seconds(self) -> float | None:
        return min(run.seconds for run in self.runs) if self.runs else None

    @property
    def median_cpu_seconds(self) -> float | None:
        cpu = [run.cpu_seconds for run in self.runs if run.cpu_seconds is not None]
        return statistics.median(cpu) if cpu else None

    @property
    def peak_rss_mb(self) -> float | None:
        sizes = [run.peak_rss_bytes for run in self.runs if run.peak_rss_bytes is not None]
        return max(sizes) / 2**20 if sizes else None


def default_binaries() -> list[tuple[Path, str]]:
    """The issue's three binaries, each with how to get it when it is missing."""
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    library = sysconfig.get_config_var("LDLIBRARY") or ""
    return [
        (Path(libdir) / library, "this Python has no shared libpython (build it with --enable-shared)"),
        (WORK_DIR / "rustgen", "build it with: bench/build_rust.sh"),
        (WORK_DIR / "cppcheck", "build it with: bench/build_cppcheck.sh"),
    ]


def newest_llvm_symbolizer() -> Path | None:
    """The llvm-symbolizer of the newest LLVM installed beside the baseline (Debian's
    /usr/lib/llvm-N/bin), when it is not the baseline itself."""
    baseline = shutil.which(BASELINE)
    found = []
    for candidate in Path("/usr/lib").glob("llvm-*/bin/llvm-symbolizer"):
        version = re.fullmatch(r"llvm-(\d+)", candidate.parent.parent.name)
        if version and candidate.is_file():
            found.append((int(version.group(1)), candidate))
    if not found:
        return None
    newest = max(found)[1]
    return None if baseline and Path(baseline).resolve() == newest.resolve() else newest


def rust_peer_tools(binary: Path) -> list[Tool]:
    """gimli's addr2line and blazesym's CLI, the field's Rust symbolizers, on the same addresses.

    blazecli takes addresses as arguments, not on stdin: ``sh -c`` hands it the batch (one
    shell start-up, about a millisecond, counted in its time).
    """
    gimli = rust_peer("SYMBOLIZE_GIMLI_ADDR2LINE", "addr2line")
    blazecli = rust_peer("SYMBOLIZE_BLAZECLI", "blazecli")
    hint = "build it with: bench/build_peers.sh"
    return [
        Tool(
            "addr2line (gimli)",
            [str(gimli), "-e", str(binary), "-f", "-i", "-C", "--llvm"] if gimli else None,
            "" if gimli else hint,
        ),
        Tool(
            "blazecli",
            ["sh", "-c", 'exec "$0" symbolize elf --path "$1" $(cat)', str(blazecli), str(binary)]
            if blazecli
            else None,
            "" if blazecli else hint,
        ),
    ]


def newer_llvm_name(path: Path) -> str:
    version = re.fullmatch(r"llvm-(\d+)", path.parent.parent.name)
    return f"{BASELINE} {version.group(1)}" if version else f"{BASELINE} ({path})"


def make_tools(
    binary: Path,
    cache_dir: Path,
    index: Prepared,
    symcache: Path,
    symcache_ready: Prepared,
    pure_python: bool,
    warm_only: bool = False,
    newer_llvm: Path | None = None,
    output_style: str = "llvm",
) -> list[Tool]:
    python = sys.executable
    symbolic_script = str(BENCH_DIR / "symbolic_lookup.py")
    llvm_symbolizer = shutil.which("llvm-symbolizer")
    addr2line = shutil.which("addr2line")
    # symbolize and llvm-symbolizer print the same layout: llvm-symbolizer's text or its JSON.
    style = [f"--output-style={output_style.upper()}"]
    lookup = [*SYMBOLIZE, "lookup", "--obj", str(binary), *style]
    # The same cold run on the Python readers alone, without the compiled kernels (native/).
    pure = [Tool("symbolize (cold, Python only)", ["env", "SYMBOLIZE_PURE_PYTHON=1", *lookup, *cold_flags()])]
    warm_lookup = [*lookup, "--cache-dir", str(cache_dir), "--no-background-index"]
    # The same warm run on the Python path alone: the warm kernel's own effect, in the same run.
    warm_pure = Tool(
        "symbolize (warm, Python only)",
        None if index.failure else ["env", "SYMBOLIZE_PURE_PYTHON=1", *warm_lookup],
        index.note,
    )
    tools = [
        Tool("symbolize (cold)", [*lookup, *cold_flags()]),
        *(pure if pure_python else []),
        Tool("symbolize (warm)", None if index.failure else warm_lookup, index.note),
        *([warm_pure] if pure_python else []),
        Tool(
            BASELINE,
            [llvm_symbolizer, f"--obj={binary}", "--inlines", "--demangle", *style] if llvm_symbolizer else None,
            "" if llvm_symbolizer else "llvm-symbolizer not on PATH",
        ),
        *(
            [Tool(newer_llvm_name(newer_llvm), [str(newer_llvm), f"--obj={binary}", "--inlines", "--demangle", *style])]
            if newer_llvm
            else []
        ),
        Tool(
            "addr2line",
            [addr2line, "-f", "-i", "-C", "-e", str(binary)] if addr2line else None,
            "" if addr2line else "addr2line not on PATH",
        ),
        *rust_peer_tools(binary),
        Tool("symbolic (cold)", [python, symbolic_script, "--obj", str(binary)]),
        Tool(
            "symbolic (warm)",
            None
            if symcache_ready.failure
            else [python, symbolic_script, "--obj", str(binary), "--symcache", str(symcache)],
            symcache_ready.note,
        ),
    ]
    if warm_only:
        tools = [tool for tool in tools if "(cold" not in tool.name]
    return tools


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
                cells[tool.name, n].failure = tool.note
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
                        cell.stacks = parse_stacks(tool.name, text, args.output_style)
                    print(
                        f"  N={n} rep {repetition + 1}/{repeat} {tool.name}: {run.seconds:.3f} s",
                        file=sys.stderr,
                    )
    return cells


def table_rows(
    label: str, tools: Sequence[Tool], sizes: Sequence[int], cells: dict[tuple[str, int], Cell]
) -> list[list[str]]:
    rows = []
    for n in sizes:
        baseline = cells.get((BASELINE, n))
        baseline_seconds = baseline.median_seconds if baseline else None
        baseline_stacks = baseline.stacks if baseline else None
        for tool in tools:
            cell = cells[tool.name, n]
            seconds = cell.median_seconds
            if seconds is None or cell.failure:
                rows.append([label, tool.name, str(n), *["n/a"] * 6, "-", cell.failure or "no runs"])
                continue
            ratio = f"{seconds / baseline_seconds:.2f}x" if baseline_seconds else "n/a"
            cpu, baseline_cpu = cell.median_cpu_seconds, baseline.median_cpu_seconds if baseline else None
            cpu_text = f"{cpu:.3f}" if cpu is not None else "n/a"
            cpu_ratio = f"{cpu / baseline_cpu:.2f}x" if cpu is not None and baseline_cpu else "n/a"
            rss = cell.peak_rss_mb
            agree = agreement(cell.stacks, baseline_stacks)
            rss_text = f"{rss:.0f}" if rss is not None else "n/a"
            rows.append([
                label, tool.name, str(n), f"{seconds:.3f}", f"{cell.min_seconds:.3f}", ratio, cpu_text, cpu_ratio,
                rss_text, agree, tool.note,
            ])  # fmt: skip
    return rows


HEADER = [
    "binary", "tool", "N", "median s", "min s", f"vs {BASELINE}", "CPU s", "CPU vs", "peak RSS MB", "same frames",
    "note",
]  # fmt: skip


def format_plain(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in [header, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def format_markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
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


def binary_label(binary: Path) -> str:
    return binary.name


def find_binaries(requested: list[Path] | None) -> tuple[list[Path], list[str]]:
    """Existing binaries to measure, and one message per binary that is missing."""
    candidates = [(path, "") for path in requested] if requested else default_binaries()
    found, missing = [], []
    for path, hint in candidates:
        if path.is_file():
            found.append(path.resolve())
        else:
            missing.append(f"no binary at {path}. {hint}".rstrip())
    return found, missing


@dataclass
class BinaryResult:
    """What one binary's measurement gives: table rows and the figures the goals are checked on."""

    rows: list[list[str]]
    index_rows: list[list[str]]
    profile_rows: list[list[str]]
    goal_rows: list[list[str]]


def figures_of(label: str, cells: dict[tuple[str, int], Cell], index_cpu: dict[str, float]) -> Figures:
    seconds = {key: cell.median_seconds for key, cell in cells.items() if not cell.failure}
    rss = {key: cell.peak_rss_mb for key, cell in cells.items() if not cell.failure}
    return Figures(
        label,
        {key: value for key, value in seconds.items() if value is not None},
        {key: value for key, value in rss.items() if value is not None},
        index_cpu,
    )


def measure_binary(
    binary: Path, functions: list[FunctionRange], args: argparse.Namespace, profile: bool
) -> BinaryResult:
    """Lookup and index rows for one binary, profile rows when ``profile`` is set, and its goal rows."""
    label = binary_label(binary)
    with tempfile.TemporaryDirectory(prefix="symbolize-bench-cache-") as cache_name:
        cache_root = Path(cache_name)
        scratch = cache_root / "scratch"
        scratch.mkdir()
        symbolize_cache = cache_root / "symbolize"
        symcache = cache_root / "binary.symcache"
        print(f"{binary}: {len(functions)} functions; preparing caches (untimed)", file=sys.stderr)
        index = prepare_symbolize_index(binary, symbolize_cache, scratch, args.timeout)
        symcache_ready = prepare_symcache(binary, symcache, scratch, args.timeout)
        tools = make_tools(
            binary, symbolize_cache, index, symcache, symcache_ready, args.pure_python, args.warm_only,
            args.newer_llvm, args.output_style,
        )  # fmt: skip
        cells = benchmark(tools, functions, args.sizes, args)
        rows = table_rows(label, tools, args.sizes, cells)
        timings = []
        if args.index_repeat > 0:
            print(f"{binary}: symbolize index, {args.index_repeat} runs per mode", file=sys.stderr)
            timings = time_index_builds(binary, label, scratch, args.index_repeat, args.pure_python, args.timeout)
        index_cpu = {timing.mode: cpu for timing in timings if (cpu := timing.median_cpu_seconds) is not None}
        goal_rows = lookup_goal_rows(figures_of(label, cells, index_cpu), dict(args.index_before))
        profile_rows: list[list[str]] = []
        if profile:
            print(f"{binary}: symbolize profile, {args.profile_locations} locations", file=sys.stderr)
            job = ProfileJob(
                binary, label, args.profile_locations, args.seed, args.profile_repeat, args.timeout, args.pprof
            )
            profile_rows, medians = time_profile(job, index, symbolize_cache, scratch)
            goal_rows += profile_goal_rows(label, medians, PPROF_MODE)
    return BinaryResult(rows, index_rows(timings), profile_rows, goal_rows)


def default_pprof() -> Path | None:
    """Google's pprof: $SYMBOLIZE_PPROF (as the test suite finds it), else pprof on PATH."""
    named = os.environ.get("SYMBOLIZE_PPROF") or shutil.which("pprof")
    return Path(named) if named and Path(named).is_file() else None


def compile_bytecode() -> None:
    """Write the bytecode of the packages under test, as ``pip install`` does.

    An editable install, or PYTHONDONTWRITEBYTECODE in the environment, would
    otherwise leave every timed run compiling the toolkit from source (about
    0.1 s a run), a cost no installed copy pays.
    """
    for package in ("symbolize", "symbolize.formats"):
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(location, quiet=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--binary", type=Path, action="append", help="ELF binary with DWARF; repeat for several (default: the three)"
    )
    parser.add_argument("--sizes", type=parse_sizes, default=[100, 1000, 10_000], help="e.g. 100,1000,10000")
    parser.add_argument("--repeat", type=int, default=0, help="runs per tool and N (default 5; 3 for N>=10000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="address sampling seed")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before one run is killed")
    parser.add_argument(
        "--profile-locations",
        type=int,
        default=10_000,
        help="unique locations in the profile of the first binary; 0 skips",
    )
    parser.add_argument("--profile-repeat", type=int, default=3, help="runs per mode of `symbolize profile`")
    parser.add_argument(
        "--pprof",
        type=Path,
        default=default_pprof(),
        help="Google's pprof, timed on the same profile with -symbolize=local (default $SYMBOLIZE_PPROF, else PATH; "
        "build it with fixtures/build_pprof.sh)",
    )
    parser.add_argument(
        "--newer-llvm",
        type=Path,
        default=newest_llvm_symbolizer(),
        help="a newer llvm-symbolizer to time beside the baseline (default: the newest /usr/lib/llvm-N)",
    )
    parser.add_argument("--index-repeat", type=int, default=3, help="`symbolize index` runs per binary; 0 skips")
    parser.add_argument(
        "--index-before",
        type=parse_index_before,
        action="append",
        default=[],
        metavar="LABEL=SECONDS",
        help="CPU seconds of an earlier index build of the binary named LABEL, for the 5x goal (repeat per binary)",
    )
    parser.add_argument(
        "--output-style",
        choices=["llvm", "json"],
        default="llvm",
        help="the layout symbolize and llvm-symbolizer both print: llvm-symbolizer's text (default) or its JSON",
    )
    parser.add_argument("--markdown", action="store_true", help="print a Markdown section for RESULTS.md")
    parser.add_argument(
        "--warm-only", action="store_true", help="skip the cold rows (symbolize and symbolic without a cache)"
    )
    parser.add_argument(
        "--pure-python",
        action="store_true",
        help="add cold and warm rows with SYMBOLIZE_PURE_PYTHON=1 (no compiled kernels)",
    )
    args = parser.parse_args()

    start_revision = git_revision()
    compile_bytecode()
    binaries, missing = find_binaries(args.binary)
    for message in missing:
        print(f"warning: {message}", file=sys.stderr)
    measured: list[tuple[Path, int]] = []
    results: list[BinaryResult] = []
    for binary in binaries:
        try:
            functions = function_ranges(binary)
        except SamplingError as error:
            print(f"error: {error}", file=sys.stderr)
            missing.append(str(error))
            continue
        wants_profile = args.profile_locations > 0 and not measured
        results.append(measure_binary(binary, functions, args, wants_profile))
        measured.append((binary, len(functions)))
    if not measured:
        print("error: nothing to measure", file=sys.stderr)
        return 2

    tables = [
        (HEADER, [row for result in results for row in result.rows]),
        (INDEX_HEADER, [row for result in results for row in result.index_rows]),
        (PROFILE_HEADER, [row for result in results for row in result.profile_rows]),
        (GOALS_HEADER, [row for result in results for row in result.goal_rows]),
    ]
    if args.markdown:
        environment = describe_environment(measured, args, start_revision)
        lines = [f"- {key}: {value}" for key, value in environment]
        lines += [f"- missing: {message}" for message in missing]
        print("\n".join(lines))
    for position, (header, table) in enumerate(tables):
        if table:
            text = format_markdown_table(header, table) if args.markdown else format_plain(header, table)
            print(("\n" if position or args.markdown else "") + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

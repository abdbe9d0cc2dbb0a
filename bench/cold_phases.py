"""Where a cold lookup's wall time goes, phase by phase: what a change to the cold path can win.

Each repetition runs ``symbolize lookup --obj BINARY --no-cache`` on the addresses in a fresh
process, as ``bench/run.py`` does, with a probe in front of it (this file, ``--probe``) that times
the steps of the lookup from inside: the probe wraps a few of the toolkit's own functions with a
clock, runs the command's ``main()``, and reports what each took when the command exits. The steps:

- **interpreter**: the process's wall time outside the probe's clock (start-up to the probe's first
  line, and exit), measured as the child's wall time minus the in-process total;
- **imports**: importing the modules the lookup imports (those of a first, untimed run, imported
  first in the timed ones: many are imported on first use, inside the steps below);
- **symbol table**: the ELF reader's function symbols and their address index
  (``ElfFile._function_entries``, ``ElfFile._symbol_index``);
- **unit list**: each DWARF unit's header and root DIE (``DwarfInfo._load_units``);
- **units decoded**: a unit's runs made ready for lookups, the compiled lazy unit where built
  (``DwarfSymbolAnswers.lookup_runs``);
- **frames found**: the rest of finding each address's run (``AnswerLookup.frames_many``: a compiled
  lazy unit's spans, built as addresses land in them, and the batch's sorting into units);
- **frames named**: a compiled unit's runs made frames, each chain head named once
  (``_CompiledLazyRuns._rows_frames``, Python);
- **text**: writing the answers (``AnswerText._render_reference``);
- **other**: the rest of the in-process time (arguments, finding the file, its headers, mappings).

The steps are those of an ELF file with DWARF: for another format the reader's own steps fall in
**other**. Each step is timed without the timed steps it calls (the units decoded are not counted
again in the frames, nor the frames in the text), wherever the command calls it from. The wrapped
names are private: when one is renamed the probe stops with an AttributeError, and this file
follows the rename. Timings are medians over the repetitions.

    python bench/cold_phases.py BINARY ADDRESSES [--repeat 7]
"""

from __future__ import annotations

import time

# The probe's clock starts here, before any other import: what the command imports is its own.
_STARTED = time.perf_counter()

import os  # noqa: E402  (os and sys are loaded with the interpreter: importing them costs nothing)
import sys  # noqa: E402

_AT_START = set(sys.modules)

# Annotations only (the probe must not import typing: the command's imports are what it measures).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

# The steps the probe times: (what it reports, module, class, method).
_TIMED = (
    ("symbol_rows", "symbolize.formats.elf.file", "ElfFile", "_function_entries"),
    ("symbol_index", "symbolize.formats.elf.file", "ElfFile", "_symbol_index"),
    ("unit_list", "symbolize.formats.dwarf.info", "DwarfInfo", "_load_units"),
    ("units_decoded", "symbolize.formats.dwarf.answers", "DwarfSymbolAnswers", "lookup_runs"),
    ("find_frames", "symbolize.formats.answers", "AnswerLookup", "frames_many"),
    ("name_frames", "symbolize.formats.dwarf.answers", "_CompiledLazyRuns", "_rows_frames"),
    ("render", "symbolize.answer_text", "AnswerText", "_render_reference"),
)


def probe(argv: list[str]) -> None:
    """Run ``symbolize`` with ``argv`` (after ``--preload NAMES``, where given: the modules to import
    first), each step of :data:`_TIMED` timed; at exit, one line on stderr: seconds per step,
    ``imports`` and ``in_process`` (from the file's first line), and ``modules``: what the process
    imported that it had not at the probe's start."""
    from importlib import import_module

    preload = argv[1].split(",") if argv[:1] == ["--preload"] else []
    argv = argv[2:] if preload else argv
    for name in ["symbolize.cli.entry", *preload]:
        import_module(name)
    from symbolize.cli import entry

    start = _STARTED
    spent: dict[str, float] = {"imports": time.perf_counter() - start}
    for step, module_name, class_name, method in _TIMED:
        owner = getattr(import_module(module_name), class_name)
        setattr(owner, method, _timed(getattr(owner, method), step, spent))
    real_exit = os._exit

    def report_and_exit(code: int) -> None:
        # The command leaves through os._exit (no interpreter teardown): the probe reports there.
        spent["in_process"] = time.perf_counter() - start
        # Written as plain text: importing json here would be timed as the interpreter's exit.
        report = [f"{step}={seconds!r}" for step, seconds in spent.items()]
        print(" ".join([*report, "modules=" + ",".join(sorted(set(sys.modules) - _AT_START))]), file=sys.stderr,
              flush=True)  # fmt: skip
        real_exit(code)

    os._exit = report_and_exit
    sys.argv = ["symbolize", *argv]
    entry.main()


def _timed(function: Callable[..., Any], step: str, spent: dict[str, float]) -> Callable[..., Any]:
    """``function``, its time added to ``spent[step]`` less that of the timed steps it calls: each
    step's own time, wherever the command calls it from."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        _NESTED.append(0.0)
        try:
            return function(*args, **kwargs)
        finally:
            took = time.perf_counter() - began
            own = took - _NESTED.pop()
            spent[step] = spent.get(step, 0.0) + own
            if _NESTED:
                _NESTED[-1] += took

    return timed


# Per timed call under way, innermost last: the time of the timed calls it has made.
_NESTED: list[float] = []


def run_once(binary: Path, addresses: bytes, preload: str = "") -> tuple[dict[str, float], str]:
    """One probed lookup in a fresh process, importing the modules of ``preload`` first: its steps'
    seconds with its whole wall time, and the modules it imported."""
    import subprocess
    from pathlib import Path

    probe = [sys.executable, "-P", str(Path(__file__).resolve()), "--probe"]
    probe += ["--preload", preload] if preload else []
    began = time.perf_counter()
    done = subprocess.run([*probe, "lookup", "--obj", str(binary), "--no-cache"], input=addresses,
                          capture_output=True, check=True)  # fmt: skip
    wall = time.perf_counter() - began
    items = dict(item.partition("=")[::2] for item in done.stderr.decode().strip().splitlines()[-1].split())
    modules = items.pop("modules")
    spent = {step: float(seconds) for step, seconds in items.items()}
    spent["wall"] = wall
    return spent, modules


def phases(spent: dict[str, float]) -> dict[str, float]:
    """The table's phases from one run's steps (see the module docstring)."""
    own = {step: spent.get(step, 0.0) for step, *_ in _TIMED}
    return {
        "interpreter": spent["wall"] - spent["in_process"],
        "imports": spent["imports"],
        "symbol table": own["symbol_rows"] + own["symbol_index"],
        "unit list": own["unit_list"],
        "units decoded": own["units_decoded"],
        "frames found": own["find_frames"],
        "frames named": own["name_frames"],
        "text": own["render"],
        "other": spent["in_process"] - spent["imports"] - sum(own.values()),
        "wall": spent["wall"],
    }


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        probe(sys.argv[2:])
        return
    import argparse
    import statistics
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", type=Path)
    parser.add_argument("addresses", type=Path, help="a file of addresses, one a line")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    addresses = args.addresses.read_bytes()
    # A first run: the file and the modules in the page cache, and the list of the modules the lookup
    # imports, which the timed runs import first, so that their imports count as imports wherever
    # the command makes them (many are made on first use, inside the steps).
    _, modules = run_once(args.binary, addresses)
    runs = [phases(run_once(args.binary, addresses, modules)[0]) for _ in range(args.repeat)]
    count = len(addresses.splitlines())
    print(f"{args.binary.name}, {count} addresses, cold, median of {args.repeat} runs\n")
    print("| phase | ms | share |")
    print("|---|---:|---:|")
    wall = statistics.median(run["wall"] for run in runs)
    for phase in runs[0]:
        median = statistics.median(run[phase] for run in runs)
        print(f"| {phase} | {median * 1e3:.1f} | {median / wall:.0%} |")


if __name__ == "__main__":
    main()

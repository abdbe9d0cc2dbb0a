"""The compiled line-program decoder against its Python twin, on every line program of a binary.

Two levels, each timed both ways over the same programs, in alternation (the machine may be shared):
``_run_program`` alone (the state machine: what the kernel replaces) and ``decode_line_table``
(plus the program header and file names, still Python). Rows and tables are compared first; a
difference stops the run. Prints rows/s both ways and the ratio, medians over the repetitions.

    python bench/line_kernel.py                         # this Python's libpython
    python bench/line_kernel.py --binary bench/work/cppcheck --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from symbolize.formats.dwarf import DwarfInfo, lines
from symbolize.formats.dwarf.lines import LineTable
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.elf import ElfFile
from symbolize.formats.native import kernels, status


def default_binary() -> Path:
    return Path(sysconfig.get_config_var("LIBDIR") or "") / (sysconfig.get_config_var("LDLIBRARY") or "")


def line_units(path: Path) -> list[Unit]:
    with ElfFile(path) as elf:
        info = DwarfInfo(elf.section_data, path, address_size=elf.address_size, little_endian=elf.little_endian)
        units = [state.unit for state in info._load_units() if state.unit.stmt_list is not None]
        # Read every section now: ElfFile maps them lazily and closes with the file.
        for unit in units:
            _ = unit.sections.line
    return units


def captured_programs(units: list[Unit]) -> list[tuple[tuple[Any, ...], bool]]:
    """The arguments decode_line_table passes _run_program, for each of the units' programs."""
    captured: list[tuple[tuple[Any, ...], bool]] = []
    reference = lines._run_program

    def capture(table: LineTable, *program: Any, keep_every_row: bool) -> bool:
        captured.append((program, keep_every_row))
        return reference(table, *program, keep_every_row=keep_every_row)

    saved = lines.kernels, lines._run_program
    lines.kernels, lines._run_program = None, capture  # type: ignore[assignment]
    try:
        for unit in units:
            assert unit.stmt_list is not None
            lines.decode_line_table(unit, unit.stmt_list)
    finally:
        lines.kernels, lines._run_program = saved
    return captured


def table_state(table: LineTable) -> tuple[object, ...]:
    return (table.files, table.addresses, table.file_indexes, table.lines, table.columns, table.sequences)


def timed(work: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, default=default_binary())
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if kernels is None:
        print(f"error: {status()}", file=sys.stderr)
        return 2
    units = line_units(args.binary)
    programs = captured_programs(units)

    def run_all(run: Callable[..., object]) -> list[tuple[object, ...]]:
        tables = []
        for program, keep_every_row in programs:
            table = LineTable(files=[])
            run(table, *program, keep_every_row=keep_every_row)
            tables.append(table_state(table))
        return tables

    def decode_all(compiled: bool) -> list[tuple[object, ...]]:
        lines.kernels = kernels if compiled else None
        try:
            return [table_state(lines.decode_line_table(unit, unit.stmt_list)) for unit in units if unit.stmt_list]
        finally:
            lines.kernels = kernels

    reference_tables = run_all(lines._run_program)
    if run_all(kernels.run_line_program) != reference_tables or decode_all(True) != decode_all(False):
        print("error: the kernel's rows differ from the reference's", file=sys.stderr)
        return 1
    rows = sum(len(state[1]) for state in reference_tables)  # type: ignore[arg-type]
    program_bytes = sum(program[3] - program[2] for program, _ in programs)
    timings: dict[str, list[float]] = {name: [] for name in ("python", "kernel", "decode python", "decode kernel")}
    for _ in range(args.repeat):
        timings["python"].append(timed(lambda: run_all(lines._run_program))[0])
        timings["kernel"].append(timed(lambda: run_all(kernels.run_line_program))[0])
        timings["decode python"].append(timed(lambda: decode_all(False))[0])
        timings["decode kernel"].append(timed(lambda: decode_all(True))[0])
    median = {name: statistics.median(values) for name, values in timings.items()}
    print(f"{args.binary}: {len(units)} units, {len(programs)} program decodes, {program_bytes:,} program bytes, "
          f"{rows:,} rows (identical both ways); medians of {args.repeat}")
    for level, python, kernel in (("_run_program", "python", "kernel"),
                                  ("decode_line_table", "decode python", "decode kernel")):
        print(f"  {level}: Python {median[python]:.4f} s ({rows / median[python] / 1e6:.2f} M rows/s), "
              f"kernel {median[kernel]:.4f} s ({rows / median[kernel] / 1e6:.2f} M rows/s), "
              f"{median[python] / median[kernel]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

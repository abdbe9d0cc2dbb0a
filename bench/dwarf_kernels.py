"""The compiled DIE walk, range decoders and whole-unit sweep against their Python twins, on a binary.

Times, in one process and in alternation (the machine may be shared), each side over the same
units: the whole-unit scan (``scan_unit(unit, whole=True)``: the walk with every subtree entered,
what the index builder does), the lazy scan with every deferred subtree expanded afterwards (what
cold lookups do, one subtree at a time), every unit's runs (``DwarfSymbolAnswers.answers``, with
and without the sweep's kernel, the walk's kernels on both ways) and ``_node_ranges`` over every
node the scan found; and the per-unit work of a cold lookup: the lazy scan alone (top-level DIEs,
scope names read by the walk's kernel), every abbreviation table with one shape memo (as
``DwarfInfo`` parses them), every skipper's per-code tables, every line program header's file
names. Results are compared first; a difference stops the run. Prints min / median over the
repetitions and the ratio of medians.

    python bench/dwarf_kernels.py                         # this Python's libpython
    python bench/dwarf_kernels.py --binary bench/work/cppcheck --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from symbolize.formats.dwarf import DwarfInfo, abbrev, lines, ranges, scan, skip
from symbolize.formats.dwarf import answers as dwarf_answers
from symbolize.formats.dwarf.scan import SharedTables, scan_unit
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.elf import ElfFile
from symbolize.formats.native import kernels, status

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.kernel_twins import index_state, kernels_in, scan_kernels  # noqa: E402


def default_binary() -> Path:
    return Path(sysconfig.get_config_var("LIBDIR") or "") / (sysconfig.get_config_var("LDLIBRARY") or "")


def units_of(path: Path) -> list[Unit]:
    with ElfFile(path) as elf:
        info = DwarfInfo(elf.section_data, path, address_size=elf.address_size, little_endian=elf.little_endian)
        units = [state.unit for state in info._load_units() if state.error is None and state.unit.dwo_name is None]
        for unit in units:
            _ = unit.sections.info  # read now: ElfFile maps sections lazily and closes with the file
    return units


def whole_scans(units: list[Unit], keep: bool = False) -> list[Any]:
    """Each unit scanned whole; the indexes are dropped as the index builder drops them, unless ``keep``
    (a heap of 146 kept indexes makes the garbage collector's passes the largest cost of both sides)."""
    shared = SharedTables()
    indexes = []
    for unit in units:
        index = scan_unit(unit, True, shared)
        if keep:
            indexes.append(index_state(index))
    return indexes


def lazy_scans(units: list[Unit], keep: bool = False) -> list[Any]:
    shared = SharedTables()
    indexes = []
    for unit in units:
        index = scan_unit(unit, False, shared)
        while index.deferred:
            index._expand(next(iter(index.deferred)))
        if keep:
            indexes.append(index_state(index))
    return indexes


def top_scans(units: list[Unit]) -> list[Any]:
    """The lazy scan alone, as a cold lookup's first visit to a unit does it."""
    shared = SharedTables()
    return [scan_unit(unit, False, shared).scope_name for unit in units]


def abbrev_tables(units: list[Unit]) -> list[Any]:
    shapes: abbrev.ShapeBytes = {}
    tables = dict.fromkeys((id(unit.sections.abbrev), unit.abbrev_offset) for unit in units)
    section = units[0].sections.abbrev
    return [abbrev.parse_abbrev_table(section, offset, shapes) for _, offset in tables]


def skip_tables(units: list[Unit]) -> list[Any]:
    shared: dict[Any, Any] = {}
    if skip.kernels is None:
        return [skip._skip_tables(unit, shared) for unit in units]
    return [skip.kernels.skip_tables(unit.abbrevs, *unit.encoding) for unit in units]


def header_arguments(units: list[Unit]) -> list[tuple[Unit, tuple[Any, ...]]]:
    """The arguments of every ``lines.file_names`` call the units' line tables make."""
    captured: list[tuple[Unit, tuple[Any, ...]]] = []
    reference = lines.file_names

    def capture(unit: Unit, *arguments: Any) -> list[str | None]:
        captured.append((unit, arguments))
        return reference(unit, *arguments)

    lines.file_names = capture  # type: ignore[assignment]
    try:
        for unit in units:
            if unit.stmt_list is not None:
                lines.decode_line_table(unit, unit.stmt_list)
    finally:
        lines.file_names = reference
    return captured


def file_names(headers: list[tuple[Unit, tuple[Any, ...]]]) -> list[Any]:
    return [lines.file_names(unit, *arguments) for unit, arguments in headers]


def module_kernels(value: Any) -> AbstractContextManager[None]:
    """``value`` as the kernels of abbrev.py, lines.py and the walk's (scan.py, ranges.py, skip.py)."""
    return kernels_in(value, abbrev, lines, scan, ranges, skip)


def node_ranges(cases: list[tuple[Unit, dict[int, Any]]]) -> object:
    return [scan._node_ranges(unit, values) for unit, values in cases]


def unit_answers(path: Path) -> int:
    """Every unit's runs (``DwarfSymbolAnswers.answers``), as an index build asks for them."""
    with ElfFile(path) as elf:
        keys = dict.fromkeys(region.key for region in elf.answer_regions() if region.key >= 0)
        return sum(len(elf.answers(key)) for key in keys)


def sweep_kernels(value: Any) -> AbstractContextManager[None]:
    """``value`` as the kernels of answers.py alone (the walk's and ranges' kernels stay on)."""
    return kernels_in(value, dwarf_answers)


def timed(repeat: int, sides: dict[str, Callable[[], object]], swap: Any = None) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(repeat):
        for name, run in sides.items():
            with (swap or scan_kernels)(kernels if name == "kernel" else None):
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
    return times


def report(what: str, times: dict[str, list[float]]) -> None:
    python, kernel = times["python"], times["kernel"]
    print(f"{what:<34} python {min(python):7.3f} / {statistics.median(python):7.3f} s   "
          f"kernel {min(kernel):7.3f} / {statistics.median(kernel):7.3f} s   "
          f"ratio {statistics.median(python) / statistics.median(kernel):5.1f}x (min {min(python) / min(kernel):.1f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", type=Path, default=default_binary())
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    if kernels is None:
        print(f"no kernels to compare: {status()}", file=sys.stderr)
        return 1
    units = units_of(arguments.binary)
    with scan_kernels(None):
        reference = whole_scans(units, keep=True)
        lazy_reference = lazy_scans(units, keep=True)
    with scan_kernels(kernels):
        assert whole_scans(units, keep=True) == reference
        assert lazy_scans(units, keep=True) == lazy_reference
    cases = [(unit, values) for unit, state in zip(units, reference, strict=True) for values in
             (dict(attributes) for attributes in state[6])]
    with scan_kernels(None):
        expected = node_ranges(cases)
    with scan_kernels(kernels):
        assert node_ranges(cases) == expected
    nodes = sum(len(state[0]) for state in reference)
    del reference, lazy_reference
    gc.collect()
    print(f"{arguments.binary}: {len(units)} units, {nodes} nodes, {len(cases)} node range decodes; "
          f"identical both ways; {status()}")
    report("scan_unit, whole", timed(arguments.repeat, {"python": lambda: whole_scans(units),
                                                       "kernel": lambda: whole_scans(units)}))
    report("scan_unit, lazy + every expansion", timed(arguments.repeat, {"python": lambda: lazy_scans(units),
                                                                       "kernel": lambda: lazy_scans(units)}))
    with sweep_kernels(None):
        expected_runs = unit_answers(arguments.binary)
    assert unit_answers(arguments.binary) == expected_runs
    report(f"unit runs, whole ({expected_runs} runs)",
           timed(arguments.repeat, {"python": lambda: unit_answers(arguments.binary),
                                    "kernel": lambda: unit_answers(arguments.binary)}, sweep_kernels))
    report("_node_ranges, every node", timed(arguments.repeat, {"python": lambda: node_ranges(cases),
                                                               "kernel": lambda: node_ranges(cases)}))
    headers = header_arguments(units)
    for what, run in (("scan_unit, lazy, top level only", lambda: top_scans(units)),
                      ("abbreviation tables, one memo", lambda: abbrev_tables(units)),
                      ("skip tables, every unit", lambda: skip_tables(units)),
                      (f"line header file names ({len(headers)})", lambda: file_names(headers))):
        with module_kernels(None):
            expected_result = run()
        with module_kernels(kernels):
            assert run() == expected_result, what
        report(what, timed(arguments.repeat, {"python": run, "kernel": run}, module_kernels))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Running a compiled kernel and its Python twin on the same input, for tests and the fuzz target.

Each ``*_outcome`` function runs one side (``compiled`` True: the kernel where the dispatcher
offers it; False: the Python reference alone) and returns what it produced, or the exception it
raised as (type, message) together with whatever it had appended by then. The two sides must give
equal outcomes on any input (``tests/test_native_walk.py``, ``fuzz/fuzz_kernels.py``).

The switch between the two is one place for every test, fuzz target and bench: each reader module
with a compiled twin dispatches on its module-level ``kernels`` (``formats/native.py``: the loaded
module, or None for the Python reference); ``kernels_in`` sets it for the length of a ``with``, and
``kernel_environment`` sets ``SYMBOLIZE_PURE_PYTHON`` for a subprocess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from symbolize.formats.answers import RunTable
from symbolize.formats.dwarf import DwarfInfo, ranges, scan, skip
from symbolize.formats.dwarf import answers as dwarf_answers
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers, compiled_runs
from symbolize.formats.dwarf.scan import SharedTables, UnitIndex, scan_unit
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.slices import list_slices
from symbolize.formats.native import PURE_PYTHON_VARIABLE

DWARF_SECTIONS = ("debug_info", "debug_abbrev", "debug_str", "debug_line_str", "debug_str_offsets", "debug_addr",
                  "debug_line", "debug_ranges", "debug_rnglists", "debug_aranges")


def file_units(path: Path, keep: Callable[[Any], bool]) -> list[Unit]:
    """The units whose state (formats/dwarf/info.py's _UnitState) ``keep`` keeps, of every slice
    of ``path`` (an ELF file or a Mach-O, fat or thin)."""
    if path.read_bytes()[:4] == b"\x7fELF":
        readers: list[ElfFile | MachOFile] = [ElfFile(path)]
    else:
        readers = [MachOFile(path, arch=piece.arch) for piece in list_slices(path)]
    units = []
    for reader in readers:
        with reader:
            sections = {name: bytes(data) for name in DWARF_SECTIONS if (data := reader.section_data(name)) is not None}
            info = DwarfInfo(sections.get, path, address_size=reader.address_size, little_endian=reader.little_endian)
        units += [state.unit for state in info._load_units() if keep(state)]
    return units


def object_units(path: Path) -> list[Unit]:
    """The units of every slice of ``path`` whose DIEs are in the file itself (not a .dwo)."""
    return file_units(path, lambda state: state.error is None and state.unit.dwo_name is None)


def with_info(unit: Unit, info: bytes) -> Unit:
    """``unit`` reading its DIEs from ``info`` in place of its own .debug_info."""
    return replace(unit, sections=replace(unit.sections, info=info), abbrevs=dict(unit.abbrevs))


class RecordingWalk:
    """Stands for the kernels module in scan.py; records what ``walk_dies`` returned."""

    def __init__(self, kernels: Any) -> None:
        self._kernels = kernels
        self.WalkPlans = kernels.WalkPlans
        self.PlanCache = kernels.PlanCache
        self.skip_tables = kernels.skip_tables
        self.node_ranges = kernels.node_ranges
        self.decode_ranges = kernels.decode_ranges
        self.returned: list[bool] = []

    def walk_dies(self, *args: Any) -> bool:
        returned: bool = self._kernels.walk_dies(*args)
        self.returned.append(returned)
        return returned


@contextmanager
def kernels_in(kernels: Any, *modules: ModuleType) -> Iterator[None]:
    """``kernels`` as what each of ``modules`` dispatches on (None: the Python reference alone)."""
    namespaces = [vars(module) for module in modules]
    saved = [namespace["kernels"] for namespace in namespaces]
    for namespace in namespaces:
        namespace["kernels"] = kernels
    try:
        yield
    finally:
        for namespace, value in zip(namespaces, saved, strict=True):
            namespace["kernels"] = value


def kernel_environment(environment: Mapping[str, str], pure_python: bool) -> dict[str, str]:
    """``environment`` for a subprocess on the Python reference alone, or with the kernels where built."""
    switched = {name: value for name, value in environment.items() if name != PURE_PYTHON_VARIABLE}
    if pure_python:
        switched[PURE_PYTHON_VARIABLE] = "1"
    return switched


def scan_kernels(kernels: Any) -> AbstractContextManager[None]:
    """``kernels`` in the DIE walk's modules: scan.py, ranges.py and skip.py."""
    return kernels_in(kernels, scan, ranges, skip)


def index_state(index: UnitIndex) -> tuple[object, ...]:
    """Everything a scan leaves in ``index`` (attribute dicts with their order)."""
    return (
        index.node_ranges, index.node_parent, index.node_first, index.node_end, index.node_next, index.node_die,
        [list(attributes.items()) for attributes in index.node_attrs], list(index.deferred.items()),
        index.function_ranges, index.function_lows, index.function_max_high, index.scope_start, index.scope_end,
        index.scope_name, index.scope_parent, index.scope_is_namespace, index.top_end, sorted(index.failed.items()),
    )


def scan_outcome(unit: Unit, whole: bool, kernels: Any) -> tuple[object, ...]:
    """Scan ``unit`` (``whole`` or lazily) and expand every deferred subtree, with ``kernels`` in scan.py.

    An expansion that fails does not stop the others (the index builder goes on past it, see
    ``UnitRuns.all_runs``): what each raised is part of the outcome, with ``UnitIndex.failed``.
    """
    index: UnitIndex | None = None
    expansions: list[tuple[int, type, str]] = []
    with scan_kernels(kernels):
        try:
            index = scan_unit(unit, whole, SharedTables())
            while index.deferred:
                node = next(iter(index.deferred))
                try:
                    index._expand(node)
                except Exception as error:  # any type: the two sides must raise the same one
                    expansions.append((node, type(error), str(error)))
        except Exception as error:  # any type: the two sides must raise the same one
            return ("raised", type(error), str(error), index_state(index) if index is not None else None)
    return ("scanned", index_state(index), expansions)


def ranges_outcome(unit: Unit, form: Any, value: Any, kernels: Any) -> tuple[object, ...]:
    """``decode_ranges_attribute`` with ``kernels`` in ranges.py: the ranges, or what it raised."""
    with scan_kernels(kernels):
        try:
            return ("decoded", ranges.decode_ranges_attribute(unit, form, value))
        except Exception as error:  # any type: the two sides must raise the same one
            return ("raised", type(error), str(error))


def node_ranges_outcome(unit: Unit, values: dict[int, tuple[int, Any]], kernels: Any) -> tuple[object, ...]:
    """``scan._node_ranges`` with ``kernels`` in scan.py and ranges.py: the ranges, or what it raised."""
    with scan_kernels(kernels):
        try:
            return ("decoded", scan._node_ranges(unit, values))
        except Exception as error:  # any type: the two sides must raise the same one
            return ("raised", type(error), str(error))


def table_answers(table: RunTable) -> tuple[object, ...]:
    """What a table answers: each run's bounds and frames, and its broken spans with their errors."""
    runs = [(table.lows[i], table.highs[i], table.frames(i)) for i in range(len(table))]
    return runs, [(low, high, str(error)) for low, high, error in table.broken]


def reference_runs(source: DwarfSymbolAnswers, key: int) -> tuple[object, ...]:
    """Unit ``key``'s runs by the Python reference alone: ("answered", runs, broken spans) or
    ("raised", message)."""
    with kernels_in(None, dwarf_answers):
        try:
            table = source.answers(key)
        except MalformedInputError as error:
            return ("raised", str(error))
    return ("answered", *table_answers(table))


def compiled_unit_runs(source: DwarfSymbolAnswers, key: int) -> tuple[object, ...] | None:
    """Unit ``key``'s runs by the compiled source alone (``DwarfUnits.unit_runs``), as
    :func:`reference_runs` gives them; None where it leaves the unit to the reference (or the unit's
    header is broken, which the reference answers without asking it)."""
    units = source._compiled_units()
    assert units is not None, "the compiled kernels are not loaded"
    state = source.dwarf._load_units()[key]
    if state.error is not None:
        return None
    columns = units.unit_runs(state.unit.offset, source.functions_only)
    if columns is None:
        return None
    return ("answered", *table_answers(compiled_runs(columns, source.symbols)))

"""Running the compiled side and the Python reference on the same input, for tests and fuzz targets.

The switch between the two is one place for every test, fuzz target and bench: each reader module
with a compiled twin (or the compiled DWARF source) dispatches on its module-level ``kernels``
(``formats/native.py``: the loaded module, or None for the Python reference); ``kernels_in`` sets
it for the length of a ``with``, and ``kernel_environment`` sets ``SYMBOLIZE_PURE_PYTHON`` for a
subprocess. :func:`reference_runs` and :func:`compiled_unit_runs` give a DWARF unit's runs each
way, as ``tests/test_compiled_dwarf.py`` and ``fuzz/fuzz_compiled_dwarf.py`` compare them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from symbolize.formats.answers import RunTable
from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import answers as dwarf_answers
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers, compiled_runs
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.slices import list_slices
from symbolize.formats.native import PURE_PYTHON_VARIABLE
from tests.fixtures_data import FIXTURES

# ELF files and Mach-O files (thin, universal, dSYM DWARF files and objects): every reader of DWARF.
MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
OBJECT_FILES = sorted(path for path in FIXTURES.rglob("*") if path.is_file() and path.read_bytes()[:4] in MAGICS)

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

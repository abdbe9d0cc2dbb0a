"""Differential fuzz target: each compiled DWARF kernel against its Python twin, errors included.

``python fuzz/fuzz_kernels.py [libFuzzer options] [corpus dir]``. An input is a fixture's DWARF
with some sections replaced: byte 0 picks the template (one of :data:`TEMPLATES`), then
``.debug_abbrev``, ``.debug_line`` and the unit's range list section (``.debug_rnglists`` or
``.debug_ranges``), each as a little-endian u16 length and that many bytes (length 0xFFFF: the
template's own), then the rest of the input is ``.debug_info``. The seeds are the templates
themselves, built at start from the fixtures (nothing copied into ``fuzz/seeds``).

For every unit of the input (the first :data:`MAX_UNITS`) the target runs both sides and compares
what they leave and what they raise (type and message): the DIE walk (``scan_unit``, lazily and
whole, every deferred subtree expanded), ``_node_ranges`` of every node found, and the line
program (``decode_line_table``). A difference raises AssertionError, which the harness reports as a
finding; an input the reader refuses as a whole (a SymbolizeError) is fine.
"""

from __future__ import annotations

import struct
import sys
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.harness import KEEP_SECTION, REPO, Target, checked, replaced_sections

# The last: Cargo's split-debuginfo = "packed" skeletons, each with DW_AT_GNU_ranges_base (the base of
# its split unit's range lists, not of its own DW_AT_ranges) and [0x1,0x1) tombstones in .debug_ranges.
TEMPLATES = (
    "cdemo-gcc-dwarf4-pie", "cdemo-clang-dwarf5-pie", "cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf4-pie",
    "rs-cargo-packed",
)  # fmt: skip
SECTIONS = ("debug_abbrev", "debug_line", "ranges")
KEEP = KEEP_SECTION
MAX_UNITS = 4


@cache
def template_sections(index: int) -> dict[str, bytes]:
    from symbolize.formats.elf import ElfFile
    from tests.kernel_twins import DWARF_SECTIONS

    with ElfFile(REPO / "fixtures" / "bin" / TEMPLATES[index]) as elf:
        return {name: bytes(data) for name in DWARF_SECTIONS if (data := elf.section_data(name)) is not None}


def seeds() -> list[bytes]:
    found = []
    for index in range(len(TEMPLATES)):
        sections = template_sections(index)
        found.append(bytes([index]) + struct.pack("<HHH", KEEP, KEEP, KEEP) + sections["debug_info"])
        abbrev = sections["debug_abbrev"]
        found.append(bytes([index]) + struct.pack("<H", len(abbrev)) + abbrev + struct.pack("<HH", KEEP, KEEP)
                     + sections["debug_info"])
    return found


def sections_of(data: bytes) -> dict[str, bytes] | None:
    """The input's sections, or None for an input too short to say."""
    if not data:
        return None
    return replaced_sections(template_sections(data[0] % len(TEMPLATES)), data, SECTIONS)


def _line_outcome(unit: Any, kernels: Any) -> tuple[object, ...]:
    from symbolize.formats.dwarf import lines
    from tests.kernel_twins import kernels_in

    try:
        with kernels_in(kernels, lines):
            table = lines.decode_line_table(unit, unit.stmt_list)
        return ("decoded", table.files, list(table.addresses), list(table.file_indexes), list(table.lines),
                list(table.columns), table.sequences)
    except Exception as error:  # any type: the two sides must raise the same one
        return ("raised", type(error), str(error))


def compare(sections: dict[str, bytes]) -> int:
    """Both sides on every unit of ``sections``; the number of units compared."""
    from symbolize.formats.dwarf import DwarfInfo
    from symbolize.formats.native import kernels
    from tests.kernel_twins import node_ranges_outcome, scan_outcome

    info = DwarfInfo(sections.get, REPO / "fuzz-input", address_size=8, little_endian=True)
    units = [state.unit for state in info._load_units() if state.error is None and state.unit.dwo_name is None]
    for unit in units[:MAX_UNITS]:
        for whole in (True, False):
            reference = scan_outcome(unit, whole, None)
            compiled = scan_outcome(unit, whole, kernels)
            if compiled != reference:
                raise AssertionError(f"DIE walk of the unit at {unit.offset:#x} (whole={whole}) differs: "
                                     f"{str(compiled)[:300]} against the reference's {str(reference)[:300]}")
        state = reference[1] if reference[0] == "scanned" else (reference[3] or [None] * 7)
        for attributes in state[6] or ():  # type: ignore[index]
            values = dict(attributes)
            expected = node_ranges_outcome(unit, values, None)
            found = node_ranges_outcome(unit, values, kernels)
            if found != expected:
                raise AssertionError(f"_node_ranges({values}) differs: {found} against the reference's {expected}")
        if unit.stmt_list is not None:
            expected = _line_outcome(unit, None)
            found = _line_outcome(unit, kernels)
            if found != expected:
                raise AssertionError(f"line program of the unit at {unit.offset:#x} differs: "
                                     f"{str(found)[:300]} against the reference's {str(expected)[:300]}")
    return len(units)


def make_target() -> Target:
    from symbolize.formats.native import kernels, status

    if kernels is None:
        raise SystemExit(f"fuzz_kernels: nothing to compare ({status()})")

    def one_input(data: bytes) -> object:
        sections = sections_of(data)
        return compare(sections) if sections is not None else None

    return one_input


def main(argv: list[str]) -> None:
    import tempfile

    import atheris

    with atheris.instrument_imports(include=["symbolize", "tests"]):
        import tests.kernel_twins  # noqa: F401

        target = make_target()
    options = [arg for arg in argv[1:] if arg.startswith("-")]
    corpora = [arg for arg in argv[1:] if not arg.startswith("-")]
    if not corpora or not Path(corpora[0]).is_file():
        corpus = Path(corpora[0]) if corpora else Path(tempfile.mkdtemp(prefix="fuzz-kernels-"))
        corpus.mkdir(parents=True, exist_ok=True)
        for number, seed in enumerate(seeds()):
            (corpus / f"seed-{number}").write_bytes(seed)
        corpora = [str(corpus), *corpora[1:]]
    biggest = max(len(seed) for seed in seeds())
    defaults = ["-timeout=20", "-rss_limit_mb=3072", "-print_final_stats=1", f"-max_len={biggest + 64}"]
    atheris.Setup([argv[0], *defaults, *options, *corpora], checked(target))
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)

# The compiled kernels of native/ (Rust, PyO3): each takes what its Python twin takes.
from symbolize.formats.dwarf.lines import LineTable
from symbolize.formats.dwarf.unit import Unit

def run_line_program(table: LineTable, data: bytes, offset: int, position: int, end: int, unit: Unit,
                     min_length: int, line_base: int, line_range: int, opcode_base: int,
                     standard_lengths: list[int], *, keep_every_row: bool) -> bool | None: ...

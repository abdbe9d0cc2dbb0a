# The compiled kernels of native/ (Rust, PyO3): each takes what its Python twin takes.
from collections.abc import Callable

from symbolize.formats.dwarf.lines import LineTable
from symbolize.formats.dwarf.unit import Unit

def run_line_program(table: LineTable, data: bytes, offset: int, position: int, end: int, unit: Unit,
                     min_length: int, line_base: int, line_range: int, opcode_base: int,
                     standard_lengths: list[int], *, keep_every_row: bool) -> bool | None: ...

# The warm lookup kernel (native/src/warm.rs), the twin of symbolize/answer_text.py's AnswerText.

INDEXED_RUNS_ARRAYS: list[str]

class IndexInconsistentError(Exception): ...

def crc32(data: bytes, start: int, length: int) -> int: ...

class IndexedRuns:
    def __init__(self, data: bytes, arrays: dict[str, tuple[str, int, int]], error_details: list[str]) -> None: ...

def render_lookup_answers(texts: list[str], sources: list[IndexedRuns], *, as_json: bool, inlines: bool,
                          demangle_mode: str, shown: Callable[[str, str | None], str],
                          parse_address: Callable[[str], int | None], unnamed_reason: str) -> str | None: ...

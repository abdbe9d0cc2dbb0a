# The compiled kernels of native/ (Rust, PyO3): each takes what its Python twin takes.
from collections.abc import Callable, Sequence
from typing import Literal

# Where the abbreviation table at ``offset`` ends, and where its last entry of ``code`` starts after
# the code (native/src/abbrev.rs), for abbrev.lazy_abbrev_table; None: the reference must parse it.
def abbrev_table_extent(data: bytes, offset: int, code: int) -> tuple[int, int | None] | None: ...

# The entries of a serialized pprof Profile, counted up to one past ``limit``
# (native/src/profile_entries.rs), twin of pprof._count_entries.
def count_profile_entries(data: bytes, limit: int) -> int: ...

# The symbol table's bounds, for the compiled DWARF source's runs (native/src/dwarf/runs.rs).

class SymbolBounds:
    def __init__(self, starts: list[int], stops: list[int]) -> None: ...

# The compiled DWARF answer source (native/src/dwarf/): a whole unit's runs, as UnitRuns.all_runs
# builds them, or None where the Python reference must decide.

class CompiledDwarfError(Exception): ...

class UnitColumns:
    lows: bytes  # native-endian u64 arrays
    highs: bytes
    files: bytes  # native-endian i64 arrays
    lines: bytes
    columns: bytes
    heads: bytes  # indexes of head_keys
    discriminators: bytes  # native-endian i64 array
    file_names: list[str | None]
    # Per head: (chain id or -1 for no function, symbol index or -1).
    head_keys: list[tuple[int, int]]
    # Chain ``chain``: (innermost function, its decl line, decl file and entry, calling frames
    # innermost first as (function, file, line, column, start_line, start_file, start_address,
    # discriminator)); built when asked, one chain at a time.
    def chain(self, chain: int) -> tuple[str | None, int, str | None, int | None, list[
        tuple[str | None, str | None, int, int, int, str | None, int | None, int]]]: ...

# The persistent index's interned tables (native/src/dwarf/index.rs), twin of symbolize/index/indexed.py's
# _Builder: the same ids in the same order. IndexTablesDeferred: the reference must build the index.
class IndexTablesDeferred(Exception): ...

class IndexTables:
    def __init__(self) -> None: ...
    # indexed._narrowest of native-endian 64-bit integers (int64 where signed, else uint64).
    @staticmethod
    def narrowest_column(data: bytes, signed: bool) -> tuple[Literal["B", "H", "I", "Q"], bytes]: ...
    def intern_all(self, texts: Sequence[str | None]) -> list[int]: ...
    # The string ids chains and frames name functions by, sorted, 0 left out, each with its text.
    def names(self) -> list[tuple[int, str]]: ...
    def reserve_chains(self, count: int) -> None: ...
    def add_error_text(self, text: str) -> None: ...
    # Heads as ChainHead tuples; a compiled unit's heads named with the symbol table's Symbols.
    def chains(self, heads: Sequence[tuple[object, ...]]) -> list[int]: ...
    def unit_chains(self, columns: UnitColumns, symbols: Sequence[object]) -> list[int]: ...
    # name -> (type code, native-endian bytes), each array narrowed as indexed._narrowest narrows.
    def arrays(self) -> dict[str, tuple[Literal["B", "H", "I", "Q"], bytes]]: ...

# Raised by LazyUnit where the Python reference must answer the unit (the reason is the message).
class CompiledDwarfDeferred(Exception): ...

# A unit kept decoded for a cold lookup: the runs of the span holding an address, built when asked.
class LazyUnit:
    file_names: list[str | None]
    # (low, high, file, line, column, discriminator, chain id or -1, symbol index or -1), None: no run.
    def run_at(self, vaddr: int) -> tuple[int, int, int, int, int, int, int, int] | None: ...
    # run_at of each vaddr, in order; where run_at would raise, the list ends with that exception.
    def runs_at(self, vaddrs: list[int]) -> list[tuple[int, int, int, int, int, int, int, int] | Exception | None]: ...
    def chain(self, chain: int) -> tuple[str | None, int, str | None, int | None, list[
        tuple[str | None, str | None, int, int, int, str | None, int | None, int]]]: ...

class DwarfUnits:
    def __init__(self, sections: dict[str, bytes], little_endian: bool, address_size: int,
                 symbols: SymbolBounds) -> None: ...
    def unit_runs(self, unit_offset: int, functions_only: bool) -> UnitColumns | None: ...
    # The unit kept decoded for a cold lookup; None where the reference must decide.
    def lazy_unit(self, unit_offset: int, functions_only: bool) -> LazyUnit | None: ...
    # Why unit_runs leaves the unit to the reference (None: it answers it).
    def deferral(self, unit_offset: int, functions_only: bool) -> str | None: ...

# The warm lookup kernel (native/src/warm.rs), the twin of symbolize/answer_text.py's AnswerText.

INDEXED_RUNS_ARRAYS: list[str]

class IndexInconsistentError(Exception): ...

def crc32(data: bytes, start: int, length: int) -> int: ...
def gather(table: list[int], indexes: bytes) -> bytes | None: ...

class IndexedRuns:
    def __init__(self, data: bytes, arrays: dict[str, tuple[str, int, int]], error_details: list[str]) -> None: ...
    def strings(self, ids: list[int]) -> list[bytes | None]: ...

def render_lookup_answers(texts: list[str], sources: list[IndexedRuns], *, as_json: bool, inlines: bool,
                          demangle_mode: str, shown: Callable[[str, str | None], str],
                          parse_address: Callable[[str], int | None], unnamed_reason: str) -> str | None: ...

# The warm profile rewrite's lookups (native/src/warm_frames.rs), the twin of Module.lookup over
# indexed sources, answers as ids (symbolize/indexed_lines.py).

class ProfileAnswers:
    results: list[int]
    broken: list[tuple[int, int]]
    answers: list[list[int]]
    frames: list[tuple[int, int, int]]
    functions: list[tuple[int, int, int, int, int]]
    flags: list[int]
    function_order: list[int]
    fits: bool
    def line_bytes(self, function_ids: list[int]) -> list[bytes]: ...

def profile_answers(sources: list[IndexedRuns], vaddrs: list[int]) -> ProfileAnswers: ...

# A PDB module stream decoded for lookups (native/src/pdb_module.rs), twin of formats/pdb/module_stream.py's
# PythonModule; raises symbolize.formats.pdb.codeview.CodeViewError as the reference does.

class PdbModule:
    def locate(self, vaddr: int) -> tuple[int | None, tuple[int, int, int] | None, list[tuple[int, int, int]]]: ...
    def locate_many(
        self, vaddrs: list[int]
    ) -> list[tuple[int | None, tuple[int, int, int] | None, list[tuple[int, int, int]]]]: ...
    def procedure(self, position: int) -> tuple[int, int, bytes] | None: ...
    def procedure_count(self) -> int: ...
    def checksums(self) -> list[tuple[int, int]]: ...
    def cut_points(self) -> list[int]: ...

def decode_pdb_module(stream: bytes, symbols_size: int, c11_size: int, c13_size: int, section_rvas: list[int],
                      image_base: int) -> PdbModule: ...

# native/src/cabinet.rs: the one file of a single-file cabinet, at most max_bytes + 1 bytes of it;
# ValueError where it does not decode.
def cab_extract_single(data: bytes, max_bytes: int) -> bytes: ...

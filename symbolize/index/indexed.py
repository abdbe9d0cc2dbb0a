"""A symbol source whose lookups are answered from its persistent index.

:func:`build_index_arrays` asks any symbol source for its regions and runs
(``answer_regions``, ``answers``: see symbolize/formats/types.py), flattens them
with :func:`symbolize.formats.answers.flatten_answers` into one sorted list of
disjoint runs with the regions' precedence already applied, and stores that as
flat arrays. :class:`IndexedObject` answers ``frames_at`` by one bisection over
the run lows: it decides nothing, so indexed and uncached answers agree by
construction, whatever the source's format.

Layout (every array narrowed to the smallest unsigned type that holds it):

- runs: ``run_low`` sorted; run ``i`` covers ``[run_low[i], run_low[i + 1])``
  (the last one ends the index); ``run_chain`` 0 marks a gap. The innermost
  frame's place is the run's own: ``run_file`` (string id), ``run_line``,
  ``run_column``, ``run_discriminator``.
- chains (what runs share, by chain id; ids 1 to ``len(error_text)`` stand for
  broken regions, whose error they raise): ``chain_name``, ``chain_start_line``,
  ``chain_start_file`` (string id), ``chain_start_address`` (the entry + 1; 0 for none),
  ``chain_file`` (the innermost file when the run has none) and ``chain_outer``,
  the calling frames as a slice ``outer_begin[o]:outer_begin[o + 1]`` of
  ``outer_frames``.
- frames: ``frame_name``, ``frame_file``, ``frame_line``, ``frame_column``,
  ``frame_start_line``, ``frame_start_file``, ``frame_start_address`` (+ 1, as the chains'),
  ``frame_discriminator``.
- strings: ``str_blob`` and ``str_offsets`` (id 0 is None); ``name_full[id]``
  is the string id of the full demangling of the name with string id ``id``.

Names are stored as the source records them, each beside its full demangling:
frames keep the raw name, as every source's do, and the demangled one goes to
the demangler's memo, so a warm lookup never runs the demangler.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from symbolize.demangle import demangle, remember
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.native import kernels
from symbolize.formats.types import (
    AnswerRegion,
    AnswerRun,
    DebugHint,
    DebugId,
    DebugInfoSummary,
    Frame,
    Image,
    SectionSource,
    Symbol,
    SymbolSource,
    frames_or_errors,
)
from symbolize.index.store import IndexDamagedError, IndexFile

if TYPE_CHECKING:
    from symbolize.formats.answers import Block, ChainHead, RunTable

# The arrays an index holds and what they mean; part of every index's key (symbolize/cache.py).
SCHEMA_VERSION = 6

_WHOLE_SPACE = 1 << 64
_ARRAYS = (
    "run_low", "run_file", "run_line", "run_column", "run_chain",
    "chain_name", "chain_start_line", "chain_file", "chain_outer",
    "outer_begin", "outer_frames",
    "frame_name", "frame_file", "frame_line", "frame_column", "frame_start_line",
    "error_text", "name_full", "facts",
    "run_discriminator", "chain_start_file", "chain_start_address",
    "frame_start_file", "frame_start_address", "frame_discriminator",
)  # fmt: skip
# The interned tables' arrays (_Builder.table_arrays), besides the strings.
_TABLE_ARRAYS = (
    "chain_name", "chain_start_line", "chain_file", "chain_outer", "outer_begin", "outer_frames",
    "frame_name", "frame_file", "frame_line", "frame_column", "frame_start_line", "error_text",
    "chain_start_file", "chain_start_address", "frame_start_file", "frame_start_address", "frame_discriminator",
)  # fmt: skip


# What every run of a chain shares (IndexedObject._head): the innermost function, its default file,
# its start line, the calling frames, its start file and entry.
_Head = tuple[str | None, str | None, int, tuple[Frame, ...], str | None, int | None]

# What indexing needs of a symbol source: all of it, the optional capabilities with their defaults
# (its index key reads ``index_kind``, ``format``, ``arch``, ``load_base`` and ``answer_inputs``).
IndexableSource = SymbolSource


class _Strings:
    """Interned strings; id 0 stands for None."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.blob = bytearray()
        self.offsets = array("Q", [0, 0])
        self.texts: list[str] = [""]  # by id; id 0 is None's

    def intern(self, text: str | None) -> int:
        if text is None:
            return 0
        found = self.ids.get(text)
        if found is None:
            self.blob += text.encode("utf-8", "surrogateescape")
            self.offsets.append(len(self.blob))
            found = self.ids[text] = len(self.offsets) - 2
            self.texts.append(text)
        return found


class _Builder:
    """Interns chains and frames and lays the flattened runs out as arrays: the reference of the
    compiled tables (``kernels.IndexTables``, :class:`_CompiledTables`), which give the same ids."""

    def __init__(self) -> None:
        self.strings = _Strings()
        self.out: dict[str, list[int]] = {name: [] for name in _ARRAYS}
        self.frame_ids: dict[Frame, int] = {}
        self.outer_ids: dict[tuple[int, ...], int] = {}
        self.chain_ids: dict[tuple[int, int, int, int, int, int], int] = {}
        self.out["outer_begin"].append(0)
        self.errors: dict[str, int] = {}
        self.run_columns: dict[str, array[int]] = {}
        self._frame_appends = tuple(self.out[name].append for name in (
            "frame_name", "frame_file", "frame_line", "frame_column", "frame_start_line", "frame_start_file",
            "frame_start_address", "frame_discriminator"))  # fmt: skip

    def frame(self, frame: Frame) -> int:
        found = self.frame_ids.get(frame)
        if found is None:
            found = self.frame_ids[frame] = len(self.frame_ids)
            # Unpacked, and the columns' appends bound once: a large file has tens of thousands of frames.
            function, file, line, column, start_line, start_file, start_address, discriminator = frame
            intern = self.strings.intern
            names, files, lines, columns, start_lines, start_files, start_addresses, discriminators = (
                self._frame_appends
            )
            names(intern(function))
            files(intern(file))
            lines(line)
            columns(column)
            start_lines(start_line)
            start_files(intern(start_file) if start_file is not None else 0)
            start_addresses(0 if start_address is None else start_address + 1)  # _stored_address
            discriminators(discriminator)
        return found

    def chains(self, heads: Sequence[ChainHead]) -> list[int]:
        """The chain id of each of ``heads`` (one table's), in order.

        A large file has tens of thousands of heads, so this is one loop with its lookups bound
        once. Outer tuples are remembered by identity (a source shares one tuple among the heads
        under one call), which holds while ``heads`` keeps them alive.
        """
        intern, frame = self.strings.intern, self.frame
        chain_ids = self.chain_ids
        outer_by_identity: dict[int, int] = {}
        found: list[int] = []
        for function, start_line, outer, default_file, start_file, start_address in heads:
            outer_id = outer_by_identity.get(id(outer))
            if outer_id is None:
                outer_id = outer_by_identity[id(outer)] = self._outer_id(tuple(map(frame, outer)))
            key = (intern(function), start_line, intern(default_file), outer_id,
                   intern(start_file) if start_file is not None else 0,
                   0 if start_address is None else start_address + 1)  # _stored_address, inline
            chain = chain_ids.get(key)
            found.append(self._chain_id(key) if chain is None else chain)
        return found

    def _outer_id(self, frame_ids: tuple[int, ...]) -> int:
        found = self.outer_ids.get(frame_ids)
        if found is None:
            found = self.outer_ids[frame_ids] = len(self.outer_ids)
            self.out["outer_frames"].extend(frame_ids)
            self.out["outer_begin"].append(len(self.out["outer_frames"]))
        return found

    def _chain_id(self, key: tuple[int, int, int, int, int, int]) -> int:
        found = self.chain_ids.get(key)
        if found is None:
            found = self.chain_ids[key] = len(self.out["chain_name"])
            name, start_line, default_file, outer, start_file, start_address = key
            self.out["chain_name"].append(name)
            self.out["chain_start_line"].append(start_line)
            self.out["chain_file"].append(default_file)
            self.out["chain_outer"].append(outer)
            self.out["chain_start_file"].append(start_file)
            self.out["chain_start_address"].append(start_address)
        return found

    def reserve_chains(self, count: int) -> None:
        """Chain ids 0 (the gap) to ``count - 1`` (the errors, numbered as found): no frames."""
        outer = self._outer_id(())
        for name in ("chain_name", "chain_start_line", "chain_file", "chain_start_file", "chain_start_address"):
            self.out[name].extend([0] * count)
        self.out["chain_outer"].extend([outer] * count)

    def add_blocks(self, blocks: Iterable[Block]) -> None:
        # Typed arrays, extended from the tables' own arrays: a large file has a million runs.
        run_low, run_file, run_line = array("Q"), array("Q"), array("q")
        run_column, run_chain, run_discriminator = array("q"), array("Q"), array("Q")
        translations: dict[int, tuple[list[int], Sequence[int]]] = {}
        end = -1
        for block in blocks:
            if block.low >= _WHOLE_SPACE:
                break
            if end != block.low and end >= 0:
                _add_gap(run_low, run_file, run_line, run_column, run_chain, end)
                run_discriminator.append(0)
            table = block.table
            if table is None:
                _add_gap(run_low, run_file, run_line, run_column, run_chain, block.low)
                run_discriminator.append(0)
                run_chain[-1] = self._error_chain(block)
            else:
                translation = translations.get(id(table))
                if translation is None:
                    files = [self.intern(name) for name in table.file_names] + [0]
                    heads = self.table_chains(table)
                    translation = translations[id(table)] = (files, heads)
                files, heads = translation
                first, stop = block.first, block.end
                run_low.append(block.low)
                run_low += table.lows[first + 1 : stop]
                filled = len(run_file)
                try:
                    run_file.extend(map(files.__getitem__, table.files[first:stop]))
                except IndexError:  # a file index no table entry has (-1 is "none": the 0 at the end)
                    del run_file[filled:]
                    run_file.extend(files[file] if 0 <= file < len(files) else 0 for file in table.files[first:stop])
                run_line += table.lines[first:stop]
                run_column += table.columns[first:stop]
                run_discriminator += table.discriminators[first:stop]
                run_chain.extend(map(heads.__getitem__, table.heads[first:stop]))
            end = block.high
        if 0 <= end < _WHOLE_SPACE:
            _add_gap(run_low, run_file, run_line, run_column, run_chain, end)
            run_discriminator.append(0)
        self.run_columns = {
            "run_low": run_low, "run_file": run_file, "run_line": run_line, "run_column": run_column,
            "run_chain": run_chain, "run_discriminator": run_discriminator,
        }  # fmt: skip

    def _error_chain(self, block: Block) -> int:
        text = _error_text(block)
        found = self.errors.get(text)
        if found is None:
            found = self.errors[text] = len(self.errors) + 1
            self.add_error_text(text)
        return found

    # What the compiled tables do their own way ---------------------------------------------

    def intern(self, text: str | None) -> int:
        return self.strings.intern(text)

    def table_chains(self, table: RunTable) -> Sequence[int]:
        return self.chains(table.chain_heads)

    def add_error_text(self, text: str) -> None:
        self.out["error_text"].append(self.strings.intern(text))

    def name_ids(self) -> list[int]:
        """The string ids the chains and frames name functions by, sorted, 0 left out."""
        names = set(self.out["chain_name"]) | set(self.out["frame_name"])
        names.discard(0)
        return sorted(names)

    def text(self, string_id: int) -> str | None:
        return self.strings.texts[string_id] if string_id else None

    def string_count(self) -> int:
        return len(self.strings.texts)

    def narrowest(self, values: array[int]) -> array[int]:
        """A run column (64-bit) as the index stores it: :func:`_narrowest`."""
        return _narrowest(values)

    def table_arrays(self) -> dict[str, array[int] | bytes]:
        """The interned tables as the index stores them, each array narrowed (the lists go as
        their arrays come)."""
        arrays: dict[str, array[int] | bytes] = {}
        for name in _TABLE_ARRAYS:
            arrays[name] = _narrowest(self.out.pop(name))
        arrays["str_blob"] = bytes(self.strings.blob)
        arrays["str_offsets"] = _narrowest(self.strings.offsets)
        return arrays


class _CompiledTables(_Builder):
    """:class:`_Builder` with its tables interned in compiled memory (``kernels.IndexTables``): a
    large file has a million calling frames, and a compiled unit's are named and interned there
    without a Python object each (``IndexTables.unit_chains``)."""

    def __init__(self, tables: Any) -> None:
        super().__init__()
        self.tables = tables
        self.intern = tables.intern  # type: ignore[method-assign]
        self.add_error_text = tables.add_error_text  # type: ignore[method-assign]
        self.text = tables.text  # type: ignore[method-assign]
        self.string_count = tables.string_count  # type: ignore[method-assign]
        self.name_ids = tables.name_ids  # type: ignore[method-assign]
        self.reserve_chains = tables.reserve_chains  # type: ignore[method-assign]

    def table_chains(self, table: RunTable) -> Sequence[int]:
        from symbolize.formats.answers import CompiledChainHeads  # building only, as flatten_answers

        heads = table.chain_heads
        if isinstance(heads, CompiledChainHeads):
            return heads.compiled_chain_ids(self.tables)
        found: list[int] = self.tables.chains(heads)
        return found

    def table_arrays(self) -> dict[str, array[int] | bytes]:
        return {name: data if code == "B" and name == "str_blob" else _from_bytes(code, data)
                for name, (code, data) in self.tables.arrays().items()}  # fmt: skip

    def narrowest(self, values: array[int]) -> array[int]:
        return _from_bytes(*self.tables.narrowest_column(values.tobytes(), values.typecode == "q"))


def _from_bytes(code: _UnsignedCode, data: bytes) -> array[int]:
    values = array(code)
    values.frombytes(data)
    return values


def _add_gap(
    run_low: array[int], run_file: array[int], run_line: array[int], run_column: array[int], run_chain: array[int],
    low: int,
) -> None:
    run_low.append(low)
    run_file.append(0)
    run_line.append(0)
    run_column.append(0)
    run_chain.append(0)


def _stored_address(address: int | None) -> int:
    """An entry as the index stores it: + 1, so that 0 stands for none."""
    return 0 if address is None else address + 1


def _loaded_address(stored: int) -> int | None:
    return stored - 1 if stored else None


def _error_text(block: Block) -> str:
    return block.error.reason if block.error is not None else "broken region"


def build_index_arrays(source: IndexableSource) -> dict[str, array[int] | bytes]:
    """Every answer ``source`` gives, as named flat arrays (see the module docstring)."""
    from symbolize.formats.answers import flatten_answers  # building only: a warm run reads

    regions = source.answer_regions()
    blocks = flatten_answers(regions, source.answers)
    builder = _Builder()
    if kernels is not None:
        try:
            builder = _CompiledTables(kernels.IndexTables())
            arrays = _laid_out(builder, blocks)
        except kernels.IndexTablesDeferred:  # what only the reference keeps exact (hostile strings, numbers)
            builder = _Builder()
            arrays = _laid_out(builder, blocks)
    else:
        arrays = _laid_out(builder, blocks)
    summary = source.debug_info()
    facts = [
        int(summary.has_symbols),
        int(summary.has_dwarf),
        int(summary.has_line_info),
        int(summary.has_inline_info),
        int(summary.split_dwarf),
        *summary.dwarf_versions,
    ]
    arrays["facts"] = _narrowest(facts)
    return {name: arrays[name] for name in (*_ARRAYS, "str_blob", "str_offsets")}


def _laid_out(builder: _Builder, blocks: list[Block]) -> dict[str, array[int] | bytes]:
    """The runs of ``blocks``, the tables they name and the full names, as the index stores them
    (but ``facts``)."""
    builder.reserve_chains(1 + len({_error_text(block) for block in blocks if block.table is None}))
    builder.add_blocks(blocks)
    name_full = _full_names(builder)
    arrays: dict[str, array[int] | bytes] = builder.table_arrays()
    arrays["name_full"] = _narrowest(name_full)
    for name, values in builder.run_columns.items():
        arrays[name] = builder.narrowest(values)
    return arrays


def _full_names(builder: _Builder) -> list[int]:
    """``name_full[id]``: the string id of the full demangling of the name with string id ``id``
    (0 for strings that are not names), so that warm lookups need not demangle."""
    full_ids = {name: builder.intern(demangle(builder.text(name) or "", "full")) for name in builder.name_ids()}
    name_full = [0] * builder.string_count()
    for name, full in full_ids.items():
        name_full[name] = full
    return name_full


_UnsignedCode = Literal["B", "H", "I", "Q"]
# The unsigned types narrower than 64 bits, each with the first value it cannot hold.
_NARROW_CODES: tuple[tuple[_UnsignedCode, int], ...] = (("B", 1 << 8), ("H", 1 << 16), ("I", 1 << 32))


def _narrowest(values: Sequence[int]) -> array[int]:
    """``values`` in the smallest unsigned type that holds them: a smaller file to map and check.

    A value that fits no 64-bit unsigned slot (a line number that hostile debug
    info pushed below 0 or past 2^64) is clamped: it names nothing real.
    """
    largest = max(values, default=0)
    unsigned = isinstance(values, array) and values.typecode in _UNSIGNED
    smallest = 0 if unsigned else min(values, default=0)
    if smallest < 0 or largest >= _WHOLE_SPACE:
        values = [min(max(value, 0), _WHOLE_SPACE - 1) for value in values]
        largest = min(largest, _WHOLE_SPACE - 1)
    code: _UnsignedCode = next((code for code, limit in _NARROW_CODES if largest < limit), "Q")
    if isinstance(values, array):
        return values if values.typecode == code else _narrowed(values, code)
    return array(code, values)


def _narrowed(values: array[int], code: _UnsignedCode) -> array[int]:
    """``values``, none negative and each below the limit of ``code``, as an array of ``code``.

    The run columns hold hundreds of thousands of items: on a little-endian machine the low
    bytes of each item are the narrower item, so one strided copy in C does what a conversion
    per item would.
    """
    narrowed = array(code)
    if sys.byteorder == "little" and values.itemsize > narrowed.itemsize:
        step = values.itemsize // narrowed.itemsize
        narrowed.frombytes(memoryview(values).cast("B").cast(code)[::step].tobytes())
        return narrowed
    return array(code, values)


# Arrays that describe one thing each (a run, a chain, a frame) and so are equally long.
_GROUPS = (
    ("run_low", "run_file", "run_line", "run_column", "run_chain"),
    ("chain_name", "chain_start_line", "chain_file", "chain_outer"),
    ("frame_name", "frame_file", "frame_line", "frame_column", "frame_start_line"),
)
# The arrays of what llvm-symbolizer's verbose and JSON frames add, which the compiled lookup
# kernel does not read (nor check): each is checked by check_start_arrays, however the rest was.
_START_GROUPS = (
    ("run_low", "run_discriminator"),
    ("chain_name", "chain_start_file", "chain_start_address"),
    ("frame_name", "frame_start_file", "frame_start_address", "frame_discriminator"),
)
_START_STRING_IDS = ("chain_start_file", "frame_start_file")
# Arrays of string ids: each below the number of strings (len(name_full)).
_STRING_IDS = ("run_file", "chain_name", "chain_file", "frame_name", "frame_file", "error_text", "name_full")
# The type codes the builder writes (_narrowest): an array of another type was not written by it.
_UNSIGNED = frozenset("BHIQ")
# has_symbols, has_dwarf, has_line_info, has_inline_info, split_dwarf (then DWARF versions).
_FACTS = 5


def check_index_arrays(arrays: Mapping[str, Sequence[int]], blob_length: int, path: Path) -> None:
    """Raise :class:`IndexDamagedError` unless the arrays hold together as the builder lays them
    out, so that no lookup meets an id past its array (the twin of ``Layout::validate`` in
    native/src/warm_index.rs, check for check): the arrays that describe one thing are equally
    long, the offset tables run from 0 to their array's end, every id is below the length of
    the array it indexes. A file with right checksums can still fail this (written by another
    build, or crafted): it is given up as a damaged one is.
    """

    def damaged(what: str) -> IndexDamagedError:
        return IndexDamagedError(f"index {what}", path)

    for group in _GROUPS:
        for name in group[1:]:
            if len(arrays[name]) != len(arrays[group[0]]):
                raise damaged(f"array {name} has {len(arrays[name])} items, {group[0]} has {len(arrays[group[0]])}")
    strings = len(arrays["name_full"])
    if len(arrays["str_offsets"]) != strings + 1:
        raise damaged(f"array str_offsets has {len(arrays['str_offsets'])} items for {strings} strings")
    if len(arrays["chain_name"]) <= len(arrays["error_text"]):
        chains, errors = len(arrays["chain_name"]), len(arrays["error_text"])
        raise damaged(f"has {chains} chains for {errors} broken regions and the gap")
    for name, end in (("outer_begin", len(arrays["outer_frames"])), ("str_offsets", blob_length)):
        offsets = arrays[name]
        if not offsets or offsets[0] != 0 or offsets[-1] != end:
            raise damaged(f"array {name} does not run from 0 to {end}")
    bounds = [
        ("run_chain", len(arrays["chain_name"])),
        ("chain_outer", len(arrays["outer_begin"]) - 1),
        ("outer_frames", len(arrays["frame_name"])),
        *((name, strings) for name in _STRING_IDS),
    ]
    for name, bound in bounds:
        values = arrays[name]
        if values and max(values) >= bound:
            raise damaged(f"array {name} holds an id past {bound}")


def check_start_arrays(arrays: Mapping[str, Sequence[int]], path: Path) -> None:
    """:func:`check_index_arrays` for the arrays of :data:`_START_GROUPS`: as long as their group,
    string ids below the number of strings."""
    for group in _START_GROUPS:
        for name in group[1:]:
            if len(arrays[name]) != len(arrays[group[0]]):
                raise IndexDamagedError(
                    f"index array {name} has {len(arrays[name])} items, {group[0]} has {len(arrays[group[0]])}", path
                )
    strings = len(arrays["name_full"])
    for name in _START_STRING_IDS:
        values = arrays[name]
        if values and max(values) >= strings:
            raise IndexDamagedError(f"index array {name} holds an id past {strings}", path)


# Arrays read on every lookup that become lists when bound if they have up to _LIST_LIMIT items
# (IndexedObject._bind): a list is bisected and indexed about twice as fast as a mapped array.
_LISTED = frozenset({"run_low", "run_chain", "error_text"})
_LIST_LIMIT = 1 << 16


class IndexedObject:
    """``source`` with ``frames_at`` answered from ``index``; everything else is the source's own.

    A symbol source itself (``answer_regions``/``answers`` give the stored runs
    back); what a symbol source declares besides its answers is the source's: the index knows no
    format.
    """

    run_low: Sequence[int]
    run_file: Sequence[int]
    run_line: Sequence[int]
    run_column: Sequence[int]
    run_chain: Sequence[int]
    chain_name: Sequence[int]
    chain_start_line: Sequence[int]
    chain_file: Sequence[int]
    chain_outer: Sequence[int]
    outer_begin: Sequence[int]
    outer_frames: Sequence[int]
    frame_name: Sequence[int]
    frame_file: Sequence[int]
    frame_line: Sequence[int]
    frame_column: Sequence[int]
    frame_start_line: Sequence[int]
    run_discriminator: Sequence[int]
    chain_start_file: Sequence[int]
    chain_start_address: Sequence[int]
    frame_start_file: Sequence[int]
    frame_start_address: Sequence[int]
    frame_discriminator: Sequence[int]
    error_text: Sequence[int]
    name_full: Sequence[int]
    facts: Sequence[int]
    _blob: memoryview
    _offsets: memoryview

    def __init__(self, source: IndexableSource, index: IndexFile) -> None:
        self.file = source
        self.index = index
        self.path: Path = source.path
        self.debug_id: DebugId | None = source.debug_id
        self.format: str = source.format
        self.arch: str = source.arch
        self.load_base: int = source.load_base
        self._strings: dict[int, str] = {}
        self._names: dict[int, str | None] = {}
        facts = index.array("facts")
        if facts.format not in _UNSIGNED or len(facts) < _FACTS:
            raise IndexDamagedError(f"index has {len(facts)} facts, not {_FACTS} or more", index.path)
        self._summary = DebugInfoSummary(
            has_symbols=bool(facts[0]),
            has_dwarf=bool(facts[1]),
            has_line_info=bool(facts[2]),
            has_inline_info=bool(facts[3]),
            dwarf_versions=tuple(facts[5:]),
            split_dwarf=bool(facts[4]),
        )
        self._damaged = False
        self._bound = False
        # Whether the arrays were found to hold together (check_index_arrays), by Python or by
        # the compiled kernel, which makes the same checks.
        self._validated = False
        # The compiled kernel's view of the index (compiled_runs): None until asked, False when
        # the kernels are not built or do not read this index.
        self._compiled: Any = None
        # str() of the error frames_at raises for each broken region, by error number - 1 (read
        # with the compiled view).
        self.error_details: list[str] = []
        # What runs of a chain share (_head), and frames by id: one Frame object per distinct frame, which
        # the layers above memoize on (symbolize/module.py's PerFrame).
        self._heads: dict[int, _Head] = {}
        self._frames: dict[int, Frame] = {}

    # The source's declared capabilities ---------------------------------------------------

    @property
    def index_kind(self) -> str:
        return self.file.index_kind

    def bind_image(self, image: Image) -> None:
        self.file.bind_image(image)
        self.load_base = self.file.load_base

    def answer_inputs(self) -> str:
        return self.file.answer_inputs()

    def lines_missing_reason(self) -> str | None:
        return self.file.lines_missing_reason()

    def needs(self) -> Sequence[DebugHint]:
        return self.file.needs()

    def supply(self, hint: DebugHint, found: SectionSource | None) -> None:
        self.file.supply(hint, found)

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        return frames_or_errors(self.frames_at, vaddrs)

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        """The source's, read from its debug info when asked (``--relativenames`` alone asks): the
        index keeps the names as the frames give them."""
        return self.file.relative_file_names(vaddr)

    def __repr__(self) -> str:
        return f"IndexedObject({self.file!r}, {str(self.index.path)!r})"

    # The source's own ---------------------------------------------------------------------

    def symbols(self) -> Sequence[Symbol]:
        return self.file.symbols()

    def debug_info(self) -> DebugInfoSummary:
        return self._summary

    def close(self) -> None:
        self.index.close()
        self.file.close()

    # Answers ------------------------------------------------------------------------------

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return [AnswerRegion(0, _WHOLE_SPACE, 0)]

    def answers(self, key: int) -> Sequence[AnswerRun]:
        """The stored runs (key 0, the one region), gaps and broken parts left out, as a table
        made from the index's columns: a chain head per stored chain, a file per stored string,
        no run or frame object per run (a large index holds a million runs)."""
        from symbolize.formats.answers import ChainHead, RunTable

        self._bind()
        file_names: list[str | None] = []
        heads: list[ChainHead] = []
        table = RunTable(file_names, heads)
        file_ids: dict[int, int] = {}
        head_ids: dict[int, int] = {}
        lows, chains, errors = self.run_low, self.run_chain, len(self.error_text)
        ends = len(lows) - 1
        for position, chain in enumerate(chains):
            if chain <= errors:
                continue  # the gap, or a broken region's addresses
            head = head_ids.get(chain)
            if head is None:
                head = head_ids[chain] = len(heads)
                name, default_file, start_line, outer, start_file, start_address = self._shared(chain)
                heads.append(ChainHead(name, start_line, outer, default_file, start_file, start_address))
            string = self.run_file[position]
            file = file_ids.get(string)
            if file is None:
                file = file_ids[string] = len(file_names)
                file_names.append(self._string(string))
            high = lows[position + 1] if position < ends else _WHOLE_SPACE
            table.append(lows[position], high, file, self.run_line[position], self.run_column[position], head,
                         self.run_discriminator[position])
        return table

    def runs(self) -> list[AnswerRun]:
        self._bind()
        runs = []
        lows, chains = self.run_low, self.run_chain
        for position in range(len(lows) - 1):
            chain = chains[position]
            if chain > len(self.error_text):
                runs.append(AnswerRun(lows[position], lows[position + 1], tuple(self._frames_of(position, chain))))
        if lows and chains[len(lows) - 1] > len(self.error_text):
            runs.append(AnswerRun(lows[-1], _WHOLE_SPACE, tuple(self._frames_of(len(lows) - 1, chains[-1]))))
        return runs

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first, as the source answers them; [] when none does.

        An array found damaged on first use ends the index's service: the file
        is deleted (a later run that finds it missing builds it again, as does
        ``symbolize index``) and the source answers from then on.
        """
        if self._damaged:
            return self.file.frames_at(vaddr)
        try:
            if not self._bound:
                self._bind()
            position = bisect_right(self.run_low, vaddr) - 1
            if position < 0:
                return []
            chain = self.run_chain[position]
            if chain == 0:
                return []
            if chain <= len(self.error_text):
                raise MalformedInputError(self._string(self.error_text[chain - 1]) or "", self.path)
            return self._frames_of(position, chain)
        except IndexDamagedError:
            self.give_up_index()
            return self.file.frames_at(vaddr)

    def give_up_index(self) -> None:
        """Stop answering from the index, found damaged: it is deleted (a later run that finds
        it missing builds it again, as does ``symbolize index``) and the source answers."""
        self._damaged = True
        self._compiled = False
        self.index.path.unlink(missing_ok=True)

    def compiled_runs(self) -> Any:
        """The index as the compiled lookup kernel reads it (``symbolize.formats._kernels.IndexedRuns``,
        used by symbolize/answer_text.py); None without the kernels or once the index is given up.

        The file is read whole and each array the kernel reads checked against its CRC32, as
        :meth:`_bind` checks the arrays it maps.
        """
        if self._compiled is None:
            self._compiled = self._load_compiled() or False
        return self._compiled or None

    def _load_compiled(self) -> Any:
        if kernels is None or self._damaged:
            return None
        try:
            data, places = self.index.checked_contents(kernels.INDEXED_RUNS_ARRAYS, kernels.crc32)
            # Checks that the arrays hold together (Layout::validate, check_index_arrays' twin).
            runs = kernels.IndexedRuns(data, places)
        except (IndexDamagedError, kernels.IndexInconsistentError):
            self.give_up_index()
            return None
        self._validated = True
        details: list[str] = []
        if places["error_text"][2]:  # broken regions: their messages, made as frames_at makes them
            try:
                self._bind()
            except IndexDamagedError:
                self.give_up_index()
                return None
            details = [str(MalformedInputError(self._string(text) or "", self.path)) for text in self.error_text]
            runs.set_error_details(details)
        self.error_details = details
        return runs

    def _bind(self) -> None:
        """Map every array once (checking its CRC32 and, unless the compiled kernel has, that the
        arrays hold together: check_index_arrays): lookups then read plain attributes."""
        if self._bound:
            return
        views = {name: self.index.array(name) for name in (*_ARRAYS, "str_blob", "str_offsets")}
        for name, view in views.items():
            if view.format not in _UNSIGNED or (name == "str_blob" and view.format != "B"):
                raise IndexDamagedError(f"index array {name} has type {view.format!r}", self.path)
        arrays: dict[str, Sequence[int]] = {
            name: view.tolist() if name in _LISTED and len(view) <= _LIST_LIMIT else view
            for name, view in views.items()
        }
        if not self._validated:
            check_index_arrays(arrays, len(views["str_blob"]), self.path)
            self._validated = True
        check_start_arrays(arrays, self.path)
        for name in _ARRAYS:
            setattr(self, name, arrays[name])
        self._blob = views["str_blob"]
        self._offsets = views["str_offsets"]
        self._bound = True

    def _frames_of(self, position: int, chain: int) -> list[Frame]:
        head = self._heads.get(chain)  # not through _shared: one call less on every warm lookup
        if head is None:
            head = self._heads[chain] = self._head(chain)
        name, default_file, start_line, outer, start_file, start_address = head
        file = self._string(self.run_file[position]) or default_file
        return [Frame(name, file, self.run_line[position], self.run_column[position], start_line, start_file,
                      start_address, self.run_discriminator[position]), *outer]

    def _shared(self, chain: int) -> _Head:
        head = self._heads.get(chain)
        if head is None:
            head = self._heads[chain] = self._head(chain)
        return head

    def _head(self, chain: int) -> _Head:
        """What every run of ``chain`` shares: the innermost function, its default file and
        start line, the calling frames, and the function's start file and entry."""
        outer_id = self.chain_outer[chain]
        begin, end = self.outer_begin[outer_id], self.outer_begin[outer_id + 1]
        outer = tuple(self._frame(frame) for frame in self.outer_frames[begin:end])
        name = self._name(self.chain_name[chain])
        return (name, self._string(self.chain_file[chain]), self.chain_start_line[chain], outer,
                self._string(self.chain_start_file[chain]), _loaded_address(self.chain_start_address[chain]))

    def _frame(self, frame_id: int) -> Frame:
        frame = self._frames.get(frame_id)
        if frame is None:
            frame = self._frames[frame_id] = Frame(
                self._name(self.frame_name[frame_id]),
                self._string(self.frame_file[frame_id]),
                self.frame_line[frame_id],
                self.frame_column[frame_id],
                self.frame_start_line[frame_id],
                self._string(self.frame_start_file[frame_id]),
                _loaded_address(self.frame_start_address[frame_id]),
                self.frame_discriminator[frame_id],
            )
        return frame

    def _string(self, string_id: int) -> str | None:
        if string_id == 0:
            return None
        text = self._strings.get(string_id)
        if text is None:
            start, end = self._offsets[string_id], self._offsets[string_id + 1]
            text = self._strings[string_id] = bytes(self._blob[start:end]).decode("utf-8", "surrogateescape")
        return text

    def _name(self, string_id: int) -> str | None:
        """A function name; its full demangling, stored beside it, goes to the demangler's memo."""
        name = self._names.get(string_id)
        if name is None and string_id:
            name = self._names[string_id] = self._string(string_id)
            full = self.name_full[string_id]
            if name is not None and full:
                remember(name, self._string(full) or name)
        return name

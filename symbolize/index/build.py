"""Building an index: every answer a symbol source gives, as the flat arrays
symbolize/index/indexed.py lays out (its docstring) and :class:`~symbolize.index.indexed.IndexedObject`
reads.

:func:`build_index_arrays` asks the source for its regions and runs, flattens them with
:func:`symbolize.formats.answers.flatten_answers` into one sorted list of disjoint runs (the
regions' precedence applied), and interns what the runs share: chains, calling frames, strings.
The interning runs in compiled memory where the kernels are built (``kernels.IndexTables``), else
here (:class:`_Builder`, the reference). A warm lookup never imports this module.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Literal

from symbolize.demangle import demangle_names
from symbolize.formats.native import kernels
from symbolize.formats.types import Frame
from symbolize.index.indexed import INDEX_ARRAYS, UNSIGNED_CODES, WHOLE_SPACE, IndexableSource

if TYPE_CHECKING:
    from symbolize.formats.answers import Block, ChainHead, RunTable

    # What a run column is joined from: a table's own column (a view of its runs), ids gathered.
    _Piece = bytes | memoryview | array[int]

# The interned tables' arrays (_Builder.table_arrays), besides the strings.
_TABLE_ARRAYS = (
    "chain_name", "chain_start_line", "chain_file", "chain_outer", "outer_begin", "outer_frames",
    "frame_name", "frame_file", "frame_line", "frame_column", "frame_start_line", "error_text",
    "chain_start_file", "chain_start_address", "frame_start_file", "frame_start_address", "frame_discriminator",
)  # fmt: skip

_UnsignedCode = Literal["B", "H", "I", "Q"]
_Code = Literal["B", "H", "I", "Q", "q"]
# The run columns, each with the type its 64 bits hold before it is narrowed (lines and columns
# are a table's signed columns).
_RUN_CODES: dict[str, _Code] = {
    "run_low": "Q", "run_file": "Q", "run_line": "q", "run_column": "q", "run_chain": "Q", "run_discriminator": "Q",
}  # fmt: skip


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
        self.out: dict[str, list[int]] = {name: [] for name in INDEX_ARRAYS}
        self.frame_ids: dict[Frame, int] = {}
        self.outer_ids: dict[tuple[int, ...], int] = {}
        self.chain_ids: dict[tuple[int, int, int, int, int, int], int] = {}
        self.out["outer_begin"].append(0)
        self.errors: dict[str, int] = {}
        self.run_columns: dict[str, array[int]] = {}  # narrowed (add_blocks)
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

    def add_blocks(self, blocks: list[Block]) -> None:
        """Lay the runs of ``blocks`` out as the run columns, consuming ``blocks`` (left empty)."""
        # Consumed so that a table goes with its last block: every unit's table waits in ``blocks``
        # for its turn, and a compiled unit's holds its chains (in its heads) until then, which
        # the index's tables hold again once interned (with its columns held once, rustgen's
        # index build peaked at 349 MB, not 412).
        blocks.reverse()
        # Each run column (64-bit) joined at once from its pieces: each block's runs as views of
        # the tables' own arrays (no slice copied first), a gap's or error's run as its 8 bytes;
        # then narrowed, one column at a time. A large file has a million runs: arrays grown
        # block by block were reallocated time and again, and arrays of their final length were
        # zero-filled, then copied out again to be narrowed.
        columns: dict[str, list[_Piece]] = {name: [] for name in _RUN_CODES}
        low_pieces, file_pieces, line_pieces, column_pieces, chain_pieces, discriminator_pieces = columns.values()
        # By table: its string ids of its file names, chain ids of its heads, and views of its
        # columns (and of its file and chain id per run, where the compiled tables made them at once).
        # By id: every table is alive as the layout starts, so no two share one.
        translations: dict[int, tuple[list[int], Sequence[int], list[memoryview], list[memoryview | None]]] = {}
        views: list[memoryview] = []
        end = -1
        try:
            while blocks:
                block = blocks.pop()
                if block.low >= WHOLE_SPACE:
                    break
                if end != block.low and end >= 0:
                    _add_bare_run(columns, end)  # a gap: no file, line, column, chain, discriminator (all 0)
                table = block.table
                if table is None:
                    _add_bare_run(columns, block.low, self._error_chain(block))
                    end = block.high
                    continue
                translation = translations.get(id(table))
                if translation is None:
                    files = [*self.intern_all(table.file_names), 0]
                    heads = self.table_chains(table)
                    table_views = [memoryview(column) for column in (table.lows, table.lines, table.columns,
                                                                     table.discriminators)]  # fmt: skip
                    translated = (self.translated(files, table.files), self.translated(heads, table.heads))
                    id_views = [memoryview(ids).cast("Q") if ids is not None else None for ids in translated]
                    translation = translations[id(table)] = (files, heads, table_views, id_views)
                    views += table_views + [view for view in id_views if view is not None]
                files, heads, (lows, lines, columns_of_table, discriminators), (run_files, run_chains) = translation
                first, stop = block.first, block.end
                low_pieces += (_item_bytes(block.low), lows[first + 1 : stop])
                if run_files is not None:
                    file_pieces.append(run_files[first:stop])
                else:
                    try:
                        file_pieces.append(array("Q", map(files.__getitem__, table.files[first:stop])))
                    except IndexError:  # a file index no table entry has (-1 is "none": the 0 at the end)
                        file_pieces.append(array(
                            "Q", (files[file] if 0 <= file < len(files) else 0 for file in table.files[first:stop])
                        ))  # fmt: skip
                line_pieces.append(lines[first:stop])
                column_pieces.append(columns_of_table[first:stop])
                discriminator_pieces.append(discriminators[first:stop])
                if run_chains is not None:
                    chain_pieces.append(run_chains[first:stop])
                else:
                    chain_pieces.append(array("Q", map(heads.__getitem__, table.heads[first:stop])))
                end = block.high
            if 0 <= end < WHOLE_SPACE:
                _add_bare_run(columns, end)
            self.run_columns = {}
            for name, pieces in columns.items():
                self.run_columns[name] = self.narrowest(_RUN_CODES[name], b"".join(pieces))
                _release(pieces)
        finally:  # the tables' own arrays stay resizable, whatever happens (IndexTablesDeferred)
            for pieces in columns.values():
                _release(pieces)
            _release(views)

    def _error_chain(self, block: Block) -> int:
        text = _error_text(block)
        found = self.errors.get(text)
        if found is None:
            found = self.errors[text] = len(self.errors) + 1
            self.add_error_text(text)
        return found

    # What the compiled tables do their own way ---------------------------------------------

    def intern_all(self, texts: Sequence[str | None]) -> list[int]:
        """The string id of each of ``texts`` (0 for None), each interned on first sight."""
        return [self.strings.intern(text) for text in texts]

    def table_chains(self, table: RunTable) -> Sequence[int]:
        return self.chains(table.chain_heads)

    def translated(self, ids: Sequence[int], column: array[int]) -> bytes | None:
        """``ids[item]`` of each item of a table's whole ``column`` (its files or heads), as 64-bit
        items in machine order, when it is made at once; None: each block's runs are looked up in
        ``ids`` as they are laid out."""
        return None

    def add_error_text(self, text: str) -> None:
        self.out["error_text"].append(self.strings.intern(text))

    def names(self) -> list[tuple[int, str]]:
        """The string ids the chains and frames name functions by, sorted, 0 left out, each with
        its text."""
        names = set(self.out["chain_name"]) | set(self.out["frame_name"])
        names.discard(0)
        return [(name, self.strings.texts[name]) for name in sorted(names)]

    def narrowest(self, code: _Code, data: bytes) -> array[int]:
        """A run column (64-bit items of type ``code``, in machine order) as the index stores it:
        :func:`_narrowest`."""
        return _narrowest(_from_bytes(code, data))

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
        self.intern_all = tables.intern_all  # type: ignore[method-assign]
        self.add_error_text = tables.add_error_text  # type: ignore[method-assign]
        self.names = tables.names  # type: ignore[method-assign]
        self.reserve_chains = tables.reserve_chains  # type: ignore[method-assign]

    def table_chains(self, table: RunTable) -> Sequence[int]:
        from symbolize.formats.answers import CompiledChainHeads  # building only, as flatten_answers

        heads = table.chain_heads
        if isinstance(heads, CompiledChainHeads):
            return heads.compiled_chain_ids(self.tables)
        found: list[int] = self.tables.chains(heads)
        return found

    def translated(self, ids: Sequence[int], column: array[int]) -> bytes | None:
        """The whole column at once, in compiled memory (``kernels.gather``): a Python step per run
        was most of laying a large file's runs out. None where an item falls outside ``ids``
        (damage): then each block's runs take the reference's way, which keeps what it does there."""
        assert kernels is not None  # these tables are made only with them
        found: bytes | None = kernels.gather(ids, column.tobytes()) if column.typecode == "q" else None
        return found

    def table_arrays(self) -> dict[str, array[int] | bytes]:
        return {name: data if code == "B" and name == "str_blob" else _from_bytes(code, data)
                for name, (code, data) in self.tables.arrays().items()}  # fmt: skip

    def narrowest(self, code: _Code, data: bytes) -> array[int]:
        return _from_bytes(*self.tables.narrowest_column(data, code == "q"))


def _from_bytes(code: _Code, data: bytes) -> array[int]:
    values = array(code)
    values.frombytes(data)
    return values


def _item_bytes(value: int) -> bytes:
    """``value`` (0 to 2^64 - 1) as a 64-bit item of a run column."""
    return value.to_bytes(8, sys.byteorder)


def _add_bare_run(columns: dict[str, list[_Piece]], low: int, chain: int = 0) -> None:
    """A run with no file, line, column or discriminator (a gap's, or an error's ``chain``) at the
    end of each of ``columns`` (:meth:`_Builder.add_blocks`)."""
    items = {"run_low": low, "run_chain": chain}
    for name, pieces in columns.items():
        pieces.append(_item_bytes(items.get(name, 0)))


def _release(pieces: list[_Piece] | list[memoryview]) -> None:
    """Release the views among ``pieces`` (so their arrays can be resized again), and drop them all."""
    for piece in pieces:
        if isinstance(piece, memoryview):
            piece.release()
    pieces.clear()


def _stored_address(address: int | None) -> int:
    """An entry as the index stores it: + 1, so that 0 stands for none."""
    return 0 if address is None else address + 1


def _error_text(block: Block) -> str:
    return block.error.reason if block.error is not None else "broken region"


def build_index_arrays(source: IndexableSource) -> dict[str, array[int] | bytes]:
    """Every answer ``source`` gives, as named flat arrays (see the module docstring)."""
    from symbolize.formats.answers import flatten_answers  # building only: a warm run reads

    regions = source.answer_regions()
    arrays = None
    if kernels is not None:
        # What only the reference keeps exact (hostile strings, numbers) defers to its build below,
        # from the answers asked again: the compiled tables consumed them.
        with suppress(kernels.IndexTablesDeferred):
            arrays = _laid_out(_CompiledTables(kernels.IndexTables()), flatten_answers(regions, source.answers))
    if arrays is None:
        arrays = _laid_out(_Builder(), flatten_answers(regions, source.answers))
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
    return {name: arrays[name] for name in (*INDEX_ARRAYS, "str_blob", "str_offsets")}


def _laid_out(builder: _Builder, blocks: list[Block]) -> dict[str, array[int] | bytes]:
    """The runs of ``blocks``, the tables they name and the full names, as the index stores them
    (but ``facts``)."""
    builder.reserve_chains(1 + len({_error_text(block) for block in blocks if block.table is None}))
    builder.add_blocks(blocks)
    full_names = _full_names(builder)
    arrays: dict[str, array[int] | bytes] = builder.table_arrays()  # the full names' strings among them
    name_full = [0] * (len(arrays["str_offsets"]) - 1)
    for name, full in full_names:
        name_full[name] = full
    arrays["name_full"] = _narrowest(name_full)
    arrays.update(builder.run_columns)
    return arrays


def _full_names(builder: _Builder) -> list[tuple[int, int]]:
    """The string id of each name with the string id of its full demangling (interned here), so
    that warm lookups need not demangle (``name_full``: 0 for strings that are not names)."""
    names = builder.names()
    texts = [text for _, text in names]
    # The names demangled as one batch (demangle_names: a large Rust binary has tens of thousands);
    # an empty name, which it does not take, stays empty, as demangle leaves it.
    distinct = list(dict.fromkeys(text for text in texts if text))
    shown = dict(zip(distinct, demangle_names(distinct, "full"), strict=True))
    full_ids = builder.intern_all([shown.get(text, text) for text in texts])
    return [(name, full) for (name, _), full in zip(names, full_ids, strict=True)]


# The unsigned types narrower than 64 bits, each with the first value it cannot hold.
_NARROW_CODES: tuple[tuple[_UnsignedCode, int], ...] = (("B", 1 << 8), ("H", 1 << 16), ("I", 1 << 32))


def _narrowest(values: Sequence[int]) -> array[int]:
    """``values`` in the smallest unsigned type that holds them: a smaller file to map and check.

    A value that fits no 64-bit unsigned slot (a line number that hostile debug
    info pushed below 0 or past 2^64) is clamped: it names nothing real.
    """
    largest = max(values, default=0)
    unsigned = isinstance(values, array) and values.typecode in UNSIGNED_CODES
    smallest = 0 if unsigned else min(values, default=0)
    if smallest < 0 or largest >= WHOLE_SPACE:
        values = [min(max(value, 0), WHOLE_SPACE - 1) for value in values]
        largest = min(largest, WHOLE_SPACE - 1)
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

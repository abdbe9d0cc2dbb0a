"""A symbol source whose lookups are answered from its persistent index.

symbolize/index/build.py's ``build_index_arrays`` asks any symbol source for its
regions and runs (``answer_regions``, ``answers``: see symbolize/formats/types.py),
flattens them into one sorted list of disjoint runs with the regions' precedence
already applied, and stores that as flat arrays. :class:`IndexedObject` answers
``frames_at`` by one bisection over
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

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symbolize.demangle import remember
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
    from symbolize.formats.answers import ChainHead

# The arrays an index holds and what they mean; part of every index's key (symbolize/cache.py).
SCHEMA_VERSION = 6

WHOLE_SPACE = 1 << 64
INDEX_ARRAYS = (
    "run_low", "run_file", "run_line", "run_column", "run_chain",
    "chain_name", "chain_start_line", "chain_file", "chain_outer",
    "outer_begin", "outer_frames",
    "frame_name", "frame_file", "frame_line", "frame_column", "frame_start_line",
    "error_text", "name_full", "facts",
    "run_discriminator", "chain_start_file", "chain_start_address",
    "frame_start_file", "frame_start_address", "frame_discriminator",
)  # fmt: skip
# What every run of a chain shares (IndexedObject._head): the innermost function, its default file,
# its start line, the calling frames, its start file and entry.
_Head = tuple[str | None, str | None, int, tuple[Frame, ...], str | None, int | None]

# What indexing needs of a symbol source: all of it, the optional capabilities with their defaults
# (its index key reads ``index_kind``, ``format``, ``arch``, ``load_base`` and ``answer_inputs``).
IndexableSource = SymbolSource


def _loaded_address(stored: int) -> int | None:
    return stored - 1 if stored else None


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
UNSIGNED_CODES = frozenset("BHIQ")
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
        if facts.format not in UNSIGNED_CODES or len(facts) < _FACTS:
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
        self._compiled = False  # the kernel borrows the index's mapping: let it go first
        self.index.close()
        self.file.close()

    # Answers ------------------------------------------------------------------------------

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return [AnswerRegion(0, WHOLE_SPACE, 0)]

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
            high = lows[position + 1] if position < ends else WHOLE_SPACE
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
            runs.append(AnswerRun(lows[-1], WHOLE_SPACE, tuple(self._frames_of(len(lows) - 1, chains[-1]))))
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

        The kernel borrows the mapped file, each array it reads checked against its CRC32 first, as
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
        views = {name: self.index.array(name) for name in (*INDEX_ARRAYS, "str_blob", "str_offsets")}
        for name, view in views.items():
            if view.format not in UNSIGNED_CODES or (name == "str_blob" and view.format != "B"):
                raise IndexDamagedError(f"index array {name} has type {view.format!r}", self.path)
        arrays: dict[str, Sequence[int]] = {
            name: view.tolist() if name in _LISTED and len(view) <= _LIST_LIMIT else view
            for name, view in views.items()
        }
        if not self._validated:
            check_index_arrays(arrays, len(views["str_blob"]), self.path)
            self._validated = True
        check_start_arrays(arrays, self.path)
        for name in INDEX_ARRAYS:
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

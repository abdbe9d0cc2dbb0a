"""Answering lookups from a symbol source's regions and runs: the one path every reader shares.

A reader lists its regions (cheap) and decodes one region's runs on demand
(``SymbolSource.answers``); :class:`AnswerLookup` finds the regions holding an
address, decodes each at most once (failures included, so a broken region
costs one attempt) and bisects the runs. The persistent index stores the same
runs, flattened by :func:`flatten_answers` into one disjoint list with the
regions' precedence already applied, so both paths give the same answer by
construction.

:class:`RunTable` holds runs as columns: a large unit has hundreds of thousands
of runs, and a Frame per run would cost more than decoding the unit. Runs that
share everything but the innermost frame's place (file, line, column) share a
:class:`ChainHead`.
"""

from _thread import allocate_lock  # threading's Lock, without importing threading on a cold lookup
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from heapq import heappop, heappush
from itertools import compress, pairwise
from operator import ne
from typing import Any, NamedTuple, Protocol, TypeVar, overload, runtime_checkable

from symbolize.formats.errors import BrokenSpanError, MalformedInputError
from symbolize.formats.types import AnswerRegion, AnswerRun, Frame

T = TypeVar("T")

# The greatest address a run may hold (its end is exclusive, so 2^64 - 1 itself is never named).
ADDRESS_MAX = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1


class ChainHead(NamedTuple):
    """What the frames of a run are, but for the innermost frame's place.

    The innermost frame is ``Frame(function, file or default_file, line,
    column, start_line, start_file, start_address, discriminator)`` with the run's own file, line,
    column and discriminator; ``outer`` are the frames that called it, innermost first.
    """

    function: str | None
    start_line: int = 0
    outer: tuple[Frame, ...] = ()
    default_file: str | None = None
    start_file: str | None = None
    start_address: int | None = None


class RunTable(Sequence[AnswerRun]):
    """Disjoint runs sorted by low, as parallel columns; ``table[i]`` is an :class:`AnswerRun`.

    ``files[i]`` indexes ``file_names`` (out of range: no file); ``heads[i]``
    indexes ``chain_heads``. ``broken`` holds sorted disjoint ``(low, high, error)`` spans that
    no run covers because that part of the region is broken (:class:`BrokenSpanError`): there
    the region answers with the error, as a lookup of its :class:`LazyRuns` does.
    """

    __slots__ = ("broken", "chain_heads", "columns", "discriminators", "file_names", "files", "heads", "highs",
                 "lines", "lows")

    def __init__(
        self,
        file_names: Sequence[str | None] = (),
        chain_heads: Sequence[ChainHead] = (),
    ) -> None:
        # Typed arrays: a large unit has hundreds of thousands of runs, and copying rows in and runs
        # out stays in C. Addresses are 64-bit (see append); lines and columns fit int64.
        self.lows = array("Q")
        self.highs = array("Q")
        self.files = array("q")
        self.lines = array("q")
        self.columns = array("q")
        self.heads = array("q")
        # The line row's discriminator, 0 where none (most rows): a column of its own, as a
        # row's line is, so a run keeps the row it came from. Unsigned: never below 0 (and the
        # index narrows an unsigned column without looking for its least value).
        self.discriminators = array("Q")
        self.file_names = file_names
        self.chain_heads = chain_heads
        self.broken: list[tuple[int, int, BrokenSpanError]] = []

    @classmethod
    def from_runs(cls, runs: Iterable[AnswerRun]) -> "RunTable":
        """Runs of any source as a table (each run's frames must be non-empty)."""
        file_ids: dict[str | None, int] = {}
        head_ids: dict[ChainHead, int] = {}
        file_names: list[str | None] = []
        heads: list[ChainHead] = []
        table = cls(file_names, heads)
        for run in runs:
            inner = run.frames[0]
            head = ChainHead(inner.function, inner.start_line, tuple(run.frames[1:]), None, inner.start_file,
                             inner.start_address)
            file_id = file_ids.get(inner.file)
            if file_id is None:
                file_id = file_ids[inner.file] = len(file_names)
                file_names.append(inner.file)
            head_id = head_ids.get(head)
            if head_id is None:
                head_id = head_ids[head] = len(heads)
                heads.append(head)
            table.append(run.low, run.high, file_id, inner.line, inner.column, head_id, inner.discriminator)
        return table

    def append(
        self, low: int, high: int, file: int, line: int, column: int, head: int, discriminator: int = 0
    ) -> None:
        """Add a run; one starting past the 64-bit address space is dropped and an end past it is
        cut there (hostile debug info: no address out there can be asked), a line, column or
        discriminator out of int64 range clamped."""
        if low > ADDRESS_MAX:
            return
        self.lows.append(low)
        self.highs.append(min(high, ADDRESS_MAX))
        self.files.append(file)
        self.lines.append(line if 0 <= line <= _INT64_MAX else min(max(line, 0), _INT64_MAX))
        self.columns.append(column if 0 <= column <= _INT64_MAX else min(max(column, 0), _INT64_MAX))
        self.heads.append(head)
        self.discriminators.append(
            discriminator if 0 <= discriminator <= ADDRESS_MAX else min(max(discriminator, 0), ADDRESS_MAX)
        )

    def file_name(self, file: int) -> str | None:
        return self.file_names[file] if 0 <= file < len(self.file_names) else None

    def frames(self, position: int) -> tuple[Frame, ...]:
        head = self.chain_heads[self.heads[position]]
        file = self.file_name(self.files[position]) or head.default_file
        inner = Frame(head.function, file, self.lines[position], self.columns[position], head.start_line,
                      head.start_file, head.start_address, self.discriminators[position])
        return (inner, *head.outer)

    def __len__(self) -> int:
        return len(self.lows)

    @overload
    def __getitem__(self, position: int) -> AnswerRun: ...

    @overload
    def __getitem__(self, position: slice) -> Sequence[AnswerRun]: ...

    def __getitem__(self, position: int | slice) -> AnswerRun | Sequence[AnswerRun]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self)
        return AnswerRun(self.lows[position], self.highs[position], self.frames(position))

    def run_at(self, vaddr: int) -> AnswerRun | None:
        position = bisect_right(self.lows, vaddr) - 1
        if position >= 0 and vaddr < self.highs[position]:
            return self[position]
        return None


class LazyRuns(Protocol):
    """A region's runs decoded piecemeal: what a reader's own lookups may use instead of all runs."""

    def run_at(self, vaddr: int) -> AnswerRun | None:
        """The run holding ``vaddr``; raises BrokenSpanError when the part holding it is broken, and
        MalformedInputError when the whole region is."""
        ...


# What a LazyRunsMany answers for an address: its run's frames, the error it meets, or None (no run).
RunsAnswer = list[Frame] | MalformedInputError | None


@runtime_checkable
class LazyRunsMany(LazyRuns, Protocol):
    """Lazy runs that answer a batch of addresses in one call (the compiled lazy unit): a cold
    lookup's addresses in one unit are asked together, not one Python call chain each."""

    def frames_many(self, vaddrs: list[int]) -> list[RunsAnswer]:
        """What :meth:`run_at` gives each vaddr, in order, as the frames of its run (None: no run
        holds it) or the BrokenSpanError it raises. Where it raises another MalformedInputError the
        list ends with that error: the region is broken from that address on."""
        ...


# key -> the region's runs, sorted and disjoint; raises MalformedInputError for a broken region.
RunDecoder = Callable[[int], Sequence[AnswerRun]]
LazyRunDecoder = Callable[[int], "Sequence[AnswerRun] | LazyRuns"]


@runtime_checkable
class CompiledChainHeads(Protocol):
    """A table's chain heads that the index's compiled tables can name and intern themselves
    (a compiled unit's, formats/dwarf/answers.py), instead of a Frame per calling frame."""

    def compiled_chain_ids(self, tables: Any) -> list[int]:
        """The index's chain id of each head, interned by ``tables`` (the kernels' IndexTables)."""
        ...


# Whether a class's objects are LazyRunsMany, asked once per class: a Protocol's isinstance reads
# its members each time (tens of microseconds), and a cold lookup decodes hundreds of regions.
_BATCHING: dict[type, bool] = {}


def _answers_batches(runs: object) -> bool:
    kind = type(runs)
    found = _BATCHING.get(kind)
    if found is None:
        found = _BATCHING[kind] = isinstance(runs, LazyRunsMany)
    return found


# How much decoded debug info an AnswerLookup keeps, in bytes of the debug info its regions' runs
# were decoded from (``held_bytes``): past it, regions are dropped (and decoded again if asked again;
# AnswerLookup._drop_past_budget says which). A compiled lazy unit holds about 3.5-13 times its
# .debug_info bytes (rustgen's units, RSS). The bound is for long runs over large binaries (a library
# caller, `serve`), not for one lookup: a cold lookup's batches (two for 10k addresses from a file or a
# full pipe) ask the same units, and any budget below what they hold has each later batch decode the
# rest again. Measured on cold 10k-address lookups (stop 38): at 16 MiB rustgen (24 MB of .debug_info)
# peaks at 196.5 MB against 215 MB unbounded (llvm-symbolizer-14: 215.4 MB) for 1.9 % more
# instructions (dropping the least recently asked: 3.7 %), but cppcheck (62 MB) runs 14.7 % more
# (20.8 %), well below llvm's peak either way (248 MB against 368 MB). 64 MiB keeps every bench binary whole.
DECODED_BUDGET = 64 << 20


class HeldBytes(Protocol):
    """Decoded runs that say how much they hold: the bytes of debug info they decode (the lazy
    unit's .debug_info length), what the budget (:data:`DECODED_BUDGET`) counts. Runs without it
    count nothing and are never dropped (a symbol table's, the Python reader's units, which its
    DwarfInfo keeps anyway)."""

    held_bytes: int


class _DecodedRegion:
    __slots__ = ("batch", "error", "held", "many", "runs")

    def __init__(self, runs: Sequence[AnswerRun] | LazyRuns = (), error: MalformedInputError | None = None) -> None:
        self.runs: LazyRuns = runs if hasattr(runs, "run_at") else RunTable.from_runs(runs)
        self.many: LazyRunsMany | None = runs if _answers_batches(runs) else None  # type: ignore[assignment]
        self.error = error
        self.held: int = getattr(runs, "held_bytes", 0)
        self.batch = 0  # the AnswerLookup batch (frames_many call) that asked it last


class AnswerLookup:
    """``frames_at`` over ``regions``, decoding each region with ``decode`` on first use.

    Among the regions holding an address, non-fallback ones are asked first,
    greatest ``low`` first (equal lows: the later one listed first), then
    fallback ones the same way; the first run that holds the address answers.
    When none does and a region holding it is broken, that region's error is
    raised. ``decode`` may return a :class:`LazyRuns`: a :class:`BrokenSpanError` it raises
    is that address's error alone, any other MalformedInputError breaks its region from then on.
    """

    def __init__(
        self, regions: Sequence[AnswerRegion], decode: RunDecoder | LazyRunDecoder, budget: int = DECODED_BUDGET
    ) -> None:
        """``budget``: the most bytes of decoded regions (:class:`HeldBytes`) kept between asks;
        past it regions are dropped (:meth:`_drop_past_budget` says which), and decoded again if asked
        again: a region's answers do not depend on when it was decoded (a broken one is kept)."""
        self._decode = decode
        # Least recently asked first (a region asked again is moved to the end).
        self._decoded: dict[int, _DecodedRegion] = {}
        self._budget = budget
        # What the kept regions hold (HeldBytes): at most the budget, but for the region asked last
        # and those a running batch has still to ask.
        self._held = 0
        self._batches = 0  # frames_many calls begun: a region's ``batch`` is one of them
        # Region key -> how many running batches have still to ask it: those are not dropped.
        self._pending: dict[int, int] = {}
        # Guards the kept regions' order and sum: a long-lived reader (``symbolize serve``) asks from
        # several threads. Decoding is done outside it.
        self._keeping = allocate_lock()
        primary = [region for region in regions if not region.fallback]
        fallback = [region for region in regions if region.fallback]
        self._tiers = (_RegionTier(primary), _RegionTier(fallback))

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first; [] when no region answers for it."""
        found = self.frames_many((vaddr,))[0]
        if isinstance(found, MalformedInputError):
            raise found
        return found

    def frames_many(self, vaddrs: Iterable[int]) -> list[list[Frame] | MalformedInputError]:
        """:meth:`frames_at` of each vaddr, or the error it raises, in one pass: the one region of
        the first tier holding an address (where regions do not overlap, as units rarely do) is
        found by one bisect, and each key (a unit, whatever number of ranges it has) is then asked
        for all the addresses its regions hold at once (:meth:`_ask_region`, in input order: what a
        region answers does not depend on what other regions were asked before)."""
        primary, fallback = self._tiers
        lows, highs, reach, keys = primary.lows, primary.highs, primary.max_highs, primary.keys
        in_tier = self._in_tier
        asked = list(vaddrs)
        found_at: list[list[Frame] | None] = [None] * len(asked)
        errors: list[MalformedInputError | None] = [None] * len(asked)
        # Region key -> positions of the vaddrs a region of that key alone holds, in input order. By
        # key, not by region: a unit of many ranges (rustc gives each function its own) is one
        # region per range, and is asked once for all its addresses, not once per range.
        by_key: dict[int, list[int]] = {}
        overlapping: list[int] = []  # positions of the vaddrs more than one region may hold
        # Each vaddr's region bisected in C (map), not by a call from a Python loop.
        after = list(map(partial(bisect_right, lows), asked))
        for index, vaddr in enumerate(asked):
            position = after[index] - 1
            if position < 0:
                continue
            if position == 0 or reach[position - 1] <= vaddr:  # no region before this one holds it
                if vaddr < highs[position]:
                    held = by_key.get(keys[position])
                    if held is None:
                        held = by_key[keys[position]] = []
                    held.append(index)
            else:
                overlapping.append(index)
        with self._keeping:
            self._batches += 1
        self._expect(by_key)
        unasked = iter(by_key.items())
        try:
            # Those first, as the regions' asks went before the rest were grouped by key.
            self._ask_overlapping(overlapping, asked, found_at, errors)
            for region_key, positions in unasked:
                self._ask_region(region_key, positions, asked, found_at, errors)
        finally:
            self._release(region_key for region_key, _ in unasked)  # those a failure left unasked
        # Most addresses are answered by now: only the others are asked again (of the fallback tier).
        answers: list[list[Frame] | MalformedInputError] = found_at  # type: ignore[assignment]
        for index in [index for index, found in enumerate(found_at) if found is None]:
            vaddr = asked[index]
            found, error = in_tier(fallback.holding(vaddr), vaddr, errors[index])
            answers[index] = found if found is not None else error if error is not None else []
        return answers

    def _ask_region(
        self, key: int, held: list[int], asked: list[int], found_at: list[list[Frame] | None],
        errors: list[MalformedInputError | None],
    ) -> None:
        """Region ``key``'s answer for ``asked[i]`` of each ``i`` in ``held``, into ``found_at`` and
        ``errors``: one batch where its runs answer batches, else :func:`_frames_in` each."""
        decoded = self._region(key, pending=True)
        many = decoded.many
        if many is None or decoded.error is not None:
            for index in held:
                found_at[index], errors[index] = _frames_in(decoded, asked[index])
            return
        answered = many.frames_many([asked[index] for index in held])
        for index, answer in zip(held, answered, strict=False):
            if isinstance(answer, MalformedInputError):
                errors[index] = answer
            else:
                found_at[index] = answer
        last = answered[-1] if answered else None
        if isinstance(last, MalformedInputError) and not isinstance(last, BrokenSpanError):
            # As _frames_in: the region is broken from that address on.
            decoded.runs, decoded.many, decoded.error = RunTable(), None, last
            for index in held[len(answered):]:
                errors[index] = last

    def _in_tier(
        self, held: list[AnswerRegion], vaddr: int, error: MalformedInputError | None
    ) -> tuple[list[Frame] | None, MalformedInputError | None]:
        """The frames of the first of regions ``held`` that has a run holding ``vaddr`` (None: none
        has), and the first error met so far (``error`` before these)."""
        for region in held:
            found, met = _frames_in(self._region(region.key), vaddr)
            if found is not None:
                return found, error
            error = error or met
        return None, error

    def _ask_overlapping(
        self, overlapping: list[int], asked: list[int], found_at: list[list[Frame] | None],
        errors: list[MalformedInputError | None],
    ) -> None:
        """``asked[i]`` of each ``i`` in ``overlapping`` asked of the first-tier regions holding it in
        turn (:meth:`_in_tier`), into ``found_at`` and ``errors``. Each address asks its regions
        anew: they are not dropped until the last is answered (else a budget smaller than they hold
        would have them decoded again address after address)."""
        if not overlapping:
            return
        primary = self._tiers[0]
        holding = [primary.holding(asked[index]) for index in overlapping]
        shared = {region.key for regions in holding for region in regions}
        self._expect(shared)
        try:
            for index, regions in zip(overlapping, holding, strict=True):
                found_at[index], errors[index] = self._in_tier(regions, asked[index], None)
        finally:
            self._release(shared)

    def _expect(self, keys: Iterable[int]) -> None:
        """A running batch will ask ``keys``: they are not dropped until it did (:meth:`_release`)."""
        with self._keeping:
            pending = self._pending
            for key in keys:
                pending[key] = pending.get(key, 0) + 1

    def _release(self, keys: Iterable[int]) -> None:
        """A running batch no longer has to ask ``keys``."""
        with self._keeping:
            pending = self._pending
            for key in keys:
                left = pending[key] - 1
                if left:
                    pending[key] = left
                else:
                    del pending[key]

    def _region(self, key: int, pending: bool = False) -> _DecodedRegion:
        """Region ``key`` decoded (kept, or decoded now); ``pending``: a batch counted it in
        ``_pending`` and now asks it."""
        if pending:
            self._release((key,))
        kept = self._decoded
        decoded = kept.get(key)
        if decoded is not None:
            if decoded.held:
                with self._keeping:  # asked again: the last to be dropped
                    decoded.batch = self._batches
                    if kept.get(key) is decoded:
                        kept[key] = kept.pop(key)
            return decoded
        try:
            decoded = _DecodedRegion(self._decode(key))
        except MalformedInputError as err:
            decoded = _DecodedRegion(error=err)
        with self._keeping:
            found = kept.get(key)
            if found is not None:
                return found  # another thread decoded it meanwhile: one of them is kept
            if decoded.held:
                decoded.batch = self._batches
                self._held += decoded.held
                if self._held > self._budget:
                    self._drop_past_budget()
            kept[key] = decoded
        return decoded

    def _drop_past_budget(self) -> None:
        """Drop kept regions until what they hold fits the budget (under ``_keeping``), but none a
        running batch has still to ask: first those the latest batch did not ask, least recently
        asked first, then those it asked, most recently asked first.

        A cold lookup's batches ask the same units, each in its own order: dropping the least
        recently asked there drops every unit before the next batch asks it (a cyclic scan), while
        dropping the latest keeps those asked first for the next batch.
        A region broken since it was decoded holds nothing more (its runs are gone) and is kept:
        decoded again, it would answer the addresses before its break again."""
        kept, pending, latest = self._decoded, self._pending, self._batches
        droppable = [key for key, decoded in kept.items() if decoded.held and key not in pending]
        stale = [key for key in droppable if kept[key].batch < latest]
        asked = [key for key in reversed(droppable) if kept[key].batch >= latest]
        for key in (*stale, *asked):
            if self._held <= self._budget:
                return
            decoded = kept[key]
            self._held -= decoded.held
            if decoded.error is not None:
                decoded.held = 0
            else:
                del kept[key]


def _frames_in(decoded: _DecodedRegion, vaddr: int) -> tuple[list[Frame] | None, MalformedInputError | None]:
    """The frames of ``decoded``'s run holding ``vaddr`` (None: no run does), and the error that
    kept it from answering: the region's, or a broken span's (that address's alone). A region whose
    lazy runs break past their first use is broken from then on."""
    if decoded.error is not None:
        return None, decoded.error
    try:
        run = decoded.runs.run_at(vaddr)
    except BrokenSpanError as err:
        return None, err
    except MalformedInputError as err:
        decoded.runs, decoded.many, decoded.error = RunTable(), None, err
        return None, err
    return (None if run is None else list(run.frames)), None


class _RegionTier:
    """Regions sorted by low, with the running maximum of their highs, for an overlap-aware bisect."""

    def __init__(self, regions: list[AnswerRegion]) -> None:
        self.regions = sorted(regions, key=lambda region: region.low)
        self.lows = [region.low for region in self.regions]
        self.highs = [region.high for region in self.regions]
        self.keys = [region.key for region in self.regions]
        self.max_highs: list[int] = []
        running = 0
        for region in self.regions:
            running = max(running, region.high)
            self.max_highs.append(running)

    def holding(self, vaddr: int) -> list[AnswerRegion]:
        """The regions holding ``vaddr``, greatest low first."""
        found = []
        position = bisect_right(self.lows, vaddr) - 1
        while position >= 0 and self.max_highs[position] > vaddr:
            region = self.regions[position]
            if region.low <= vaddr < region.high:
                found.append(region)
            position -= 1
        return found


# --- Flattening: every region's answer at once, for the index ------------------------------


class Block(NamedTuple):
    """Runs ``first`` to ``end`` (exclusive) of ``table``, contiguous, cut to ``[low, high)``.

    An error block (``table`` None) stands for addresses only a broken region holds.
    """

    low: int
    high: int
    table: RunTable | None
    first: int = 0
    end: int = 0
    error: MalformedInputError | None = None


def flatten_answers(regions: Sequence[AnswerRegion], decode: RunDecoder) -> list[Block]:
    """What :class:`AnswerLookup` answers at every address, as sorted disjoint blocks.

    Each region's runs are cut to the region; a region overlapping no other of
    its tier keeps them whole, overlapping ones are settled run by run. Then
    fallback blocks fill what primary runs leave, and broken regions (and the broken spans of
    a table, :attr:`RunTable.broken`) what runs leave. Linear in the runs but for the
    overlapping regions.
    """
    tables: dict[int, RunTable | MalformedInputError] = {}
    for region in regions:
        if region.key not in tables:
            try:
                runs = decode(region.key)
                tables[region.key] = runs if isinstance(runs, RunTable) else RunTable.from_runs(runs)
            except MalformedInputError as err:
                tables[region.key] = err
    layers: list[list[Block]] = []
    errors: list[tuple[int, int, int, MalformedInputError]] = []
    for tier, fallback in enumerate((False, True)):
        ordered = sorted((region for region in regions if region.fallback is fallback), key=lambda r: r.low)
        blocks: list[Block] = []
        for cluster in _overlap_clusters(ordered):
            live = [(rank, region) for rank, region in cluster if isinstance(tables[region.key], RunTable)]
            for rank, region in cluster:
                found = tables[region.key]
                if isinstance(found, MalformedInputError):
                    errors.append((region.low, region.high, tier * len(regions) + rank, found))
                    continue
                for low, high, span_error in found.broken:
                    low, high = max(low, region.low), min(high, region.high)
                    if low < high:
                        errors.append((low, high, tier * len(regions) + rank, span_error))
            if len(live) == 1 and len(cluster) == 1:
                region = live[0][1]
                table = tables[region.key]
                assert isinstance(table, RunTable)
                blocks += _contiguous_blocks(table, region.low, region.high)
            elif live:
                blocks += _settled_blocks([(rank, region, tables[region.key]) for rank, region in live])  # type: ignore[misc]
        layers.append(blocks)
    result = _fill(layers[0], layers[1])
    if errors:
        error_blocks = [Block(low, high, None, error=error) for low, high, error in owned_pieces(errors)]
        result = _fill(result, error_blocks)
    return result


def _overlap_clusters(ordered: list[AnswerRegion]) -> Iterator[list[tuple[int, AnswerRegion]]]:
    """Regions sorted by low, grouped where they overlap, each with its rank (lower wins)."""
    cluster: list[tuple[int, AnswerRegion]] = []
    reach = 0
    for position, region in enumerate(ordered):
        if region.high <= region.low:
            continue
        if cluster and region.low >= reach:
            yield cluster
            cluster = []
        if not cluster:
            reach = region.high
        cluster.append((-position, region))
        reach = max(reach, region.high)
    if cluster:
        yield cluster


def _contiguous_blocks(table: RunTable, low: int, high: int) -> list[Block]:
    """The runs of ``table`` inside ``[low, high)``, cut there, split where a gap opens."""
    first = bisect_right(table.highs, low)
    end = bisect_left(table.lows, high)
    lows, highs = table.lows, table.highs
    blocks: list[Block] = []
    start = first
    for position in _gaps(lows, highs, first + 1, end):
        blocks.append(Block(max(lows[start], low), min(highs[position - 1], high), table, start, position))
        start = position
    if start < end:
        blocks.append(Block(max(lows[start], low), min(highs[end - 1], high), table, start, end))
    return [block for block in blocks if block.low < block.high]


# Spans of at most this many runs are searched for gaps item by item (_gaps).
_GAP_SCAN = 64


def _gaps(lows: Sequence[int], highs: Sequence[int], begin: int, end: int) -> list[int]:
    """The positions ``p`` in ``[begin, end)`` (``begin`` > 0) where run ``p`` does not start at
    run ``p - 1``'s end, ascending.

    Most tables have few gaps (libpython: 160 blocks for 297k runs), so the columns are compared a
    span at a time (a C loop over two typed arrays, with no Python int per run), and only a span
    that differs is halved; a span of :data:`_GAP_SCAN` runs or fewer is searched item by item.
    """
    found: list[int] = []
    spans = [(begin, end)]
    while spans:
        a, b = spans.pop()
        if b - a <= _GAP_SCAN:
            found += compress(range(a, b), map(ne, lows[a:b], highs[a - 1 : b - 1]))
        elif lows[a:b] != highs[a - 1 : b - 1]:
            middle = (a + b) // 2
            spans += ((middle, b), (a, middle))  # the lower half searched first: ascending
    return found


def _settled_blocks(cluster: list[tuple[int, AnswerRegion, RunTable]]) -> list[Block]:
    """Overlapping regions settled at every address: the best-ranked region's run holding it."""
    items = []
    for rank, region, table in cluster:
        for block in _contiguous_blocks(table, region.low, region.high):
            for position in range(block.first, block.end):
                low = max(table.lows[position], block.low)
                high = min(table.highs[position], block.high)
                if low < high:
                    items.append((low, high, rank, (table, position)))
    return [
        Block(low, high, table, position, position + 1)
        for low, high, (table, position) in owned_pieces(items, join=False)
    ]


def _fill(upper: list[Block], lower: list[Block]) -> list[Block]:
    """``upper``, with the parts of ``lower`` it does not cover; both sorted and disjoint."""
    if not lower or not upper:
        return upper or lower
    result = list(upper)
    skipped = 0
    for block in lower:
        cursor = block.low
        while skipped < len(upper) and upper[skipped].high <= cursor:
            skipped += 1
        position = skipped
        while cursor < block.high:
            if position < len(upper) and upper[position].low < block.high:
                above = upper[position]
                if cursor < above.low:
                    result.append(_cut(block, cursor, above.low))
                cursor = max(cursor, above.high)
                position += 1
            else:
                result.append(_cut(block, cursor, block.high))
                break
    result.sort(key=lambda block: block.low)
    return result


def _cut(block: Block, low: int, high: int) -> Block:
    """``block`` cut to ``[low, high)``, within its bounds."""
    if block.table is None:
        return block._replace(low=low, high=high)
    table = block.table
    first = max(block.first, bisect_right(table.highs, low, block.first, block.end))
    end = min(block.end, bisect_left(table.lows, high, block.first, block.end))
    return Block(low, high, table, first, end)


def owned_pieces(owners: Sequence[tuple[int, int, int, T]], join: bool = True) -> list[tuple[int, int, T]]:
    """``(low, high, item)`` where, of the ``(low, high, rank, item)`` ranges holding an address,
    the one of least rank owns it; in address order, adjacent pieces of one item joined
    (unless ``join`` is False). A sweep over the range ends: the work
    grows with the number of ranges, not with ranges times their overlap."""
    starts = sorted(owners, key=lambda owner: (owner[0], owner[2]))
    if all(map(_ends_before, starts, starts[1:])):
        return _joined(starts, join)  # nothing overlaps: the common case, settled in one pass
    points = sorted({point for low, high, _, _ in owners for point in (low, high)})
    active: list[tuple[int, int, int]] = []  # heap of (rank, high, position in starts)
    pieces: list[tuple[int, int, T]] = []
    next_start = 0
    for low, high in pairwise(points):
        while next_start < len(starts) and starts[next_start][0] <= low:
            _, start_high, rank, _ = starts[next_start]
            heappush(active, (rank, start_high, next_start))
            next_start += 1
        while active and active[0][1] <= low:
            heappop(active)
        if not active:
            continue
        # A range that ended below ``low`` may still sit under the top; only the top matters.
        item = starts[active[0][2]][3]
        if join and pieces and pieces[-1][1] == low and pieces[-1][2] == item:
            pieces[-1] = (pieces[-1][0], high, item)
        else:
            pieces.append((low, high, item))
    return pieces


def _ends_before(first: tuple[int, int, int, object], second: tuple[int, int, int, object]) -> bool:
    return first[1] <= second[0]


def _joined(ordered: list[tuple[int, int, int, T]], join: bool) -> list[tuple[int, int, T]]:
    pieces: list[tuple[int, int, T]] = []
    for low, high, _, item in ordered:
        if low >= high:
            continue
        if join and pieces and pieces[-1][1] == low and pieces[-1][2] == item:
            pieces[-1] = (pieces[-1][0], high, item)
        else:
            pieces.append((low, high, item))
    return pieces

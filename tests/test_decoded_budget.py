"""The budget of decoded regions an AnswerLookup keeps (formats/answers.py, ``DECODED_BUDGET``).

Regions whose runs say what they hold (``held_bytes``: the compiled lazy units, by their
.debug_info length) are kept up to the budget; past it, none a running batch has still to ask is
dropped, those the latest batch did not ask go first (least recently asked first), then those it
asked (most recently asked first). A region asked again after it was dropped is decoded again and
answers the same. A broken region is kept (decoded again, it would answer the addresses before its
break again).
"""

from collections.abc import Callable
from typing import cast

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from symbolize.formats.answers import DECODED_BUDGET, AnswerLookup, LazyRunDecoder
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import AnswerRegion, AnswerRun, Frame


class _Held:
    """Lazy runs of one region: one run over the whole region, its frame named by the key."""

    def __init__(self, key: int, low: int, high: int, held_bytes: int, breaks_at: int | None = None) -> None:
        self.key, self.low, self.high, self.held_bytes, self.breaks_at = key, low, high, held_bytes, breaks_at

    def run_at(self, vaddr: int) -> AnswerRun | None:
        if self.breaks_at is not None and vaddr >= self.breaks_at:
            raise MalformedInputError(f"region {self.key} broken at {self.breaks_at:#x}")
        if self.low <= vaddr < self.high:
            return AnswerRun(self.low, self.high, (Frame(f"f{self.key}"),))
        return None


def _lookup(
    sizes: list[int], budget: int, breaks: dict[int, int] | None = None, fails: int | None = None
) -> tuple[AnswerLookup, list[int]]:
    """A lookup over regions ``[0x1000 * (k + 1), 0x1000 * (k + 2))`` holding ``sizes[k]`` bytes each,
    and the keys it decoded, in order; decoding region ``fails`` raises a RuntimeError."""
    decoded: list[int] = []
    regions = [AnswerRegion(0x1000 * (key + 1), 0x1000 * (key + 2), key, False, ()) for key in range(len(sizes))]

    def decode(key: int) -> _Held:
        if key == fails:
            raise RuntimeError(f"region {key} cannot be decoded")
        decoded.append(key)
        low = 0x1000 * (key + 1)
        return _Held(key, low, low + 0x1000, sizes[key], (breaks or {}).get(key))

    return AnswerLookup(regions, cast(LazyRunDecoder, decode), budget=budget), decoded


def _at(key: int) -> int:
    return 0x1000 * (key + 1) + 0x10


def _answer(lookup: AnswerLookup, key: int) -> object:
    try:
        return lookup.frames_at(_at(key))
    except MalformedInputError as error:
        return str(error)


def test_the_least_recently_asked_region_is_dropped_past_the_budget() -> None:
    lookup, decoded = _lookup([6, 6, 6], budget=12)
    for key in (0, 1, 0, 2):  # 0 asked again after 1: 1 is the least recently asked when 2 comes
        assert lookup.frames_at(_at(key)) == [Frame(f"f{key}")]
    assert decoded == [0, 1, 2]
    assert lookup.frames_at(_at(0)) == [Frame("f0")]  # still kept
    assert lookup.frames_at(_at(1)) == [Frame("f1")]  # dropped: decoded again, the same answer
    assert decoded == [0, 1, 2, 1]


def test_a_re_ask_after_eviction_answers_the_same_and_the_budget_holds() -> None:
    sizes = [5, 9, 1, 7, 3, 8]
    unbounded, _ = _lookup(sizes, budget=1 << 60)
    lookup, decoded = _lookup(sizes, budget=10)
    order = [0, 1, 2, 3, 4, 5, 5, 3, 1, 0, 2, 4, 1, 1, 0]
    for key in order:
        assert _answer(lookup, key) == _answer(unbounded, key)
        held = [sizes[key] for key in lookup._decoded]
        # What is kept fits the budget, but for the region asked last when it alone does not.
        assert sum(held) <= 10 or held == [sizes[key]]
        assert lookup._held == sum(held)
    assert len(decoded) > len(sizes)  # the budget dropped some: they were decoded again
    # Batches alike: asked together, in any order.
    keys = [3, 0, 5, 1, 4, 2]
    assert lookup.frames_many([_at(key) for key in keys]) == unbounded.frames_many([_at(key) for key in keys])


def test_a_region_without_held_bytes_is_never_dropped() -> None:
    lookup, decoded = _lookup([0, 0, 50], budget=10)
    for key in (0, 1, 2, 0, 1):
        lookup.frames_at(_at(key))
    assert decoded == [0, 1, 2]


def test_a_broken_region_is_kept_broken() -> None:
    # Region 0 breaks past its first use (at +0x800): decoded again, it would answer +0x10 again.
    lookup, decoded = _lookup([6, 6, 6], budget=12, breaks={0: 0x1800})
    assert lookup.frames_at(_at(0)) == [Frame("f0")]
    with pytest.raises(MalformedInputError):
        lookup.frames_at(0x1900)
    broken = _answer(lookup, 0)
    assert isinstance(broken, str)
    for key in (1, 2, 1, 2):
        lookup.frames_at(_at(key))
    assert _answer(lookup, 0) == broken
    assert decoded.count(0) == 1


def test_the_default_budget_is_the_module_one() -> None:
    lookup, _ = _lookup([1], budget=DECODED_BUDGET)
    assert AnswerLookup([], cast(Callable[[int], list[AnswerRun]], list))._budget == lookup._budget == DECODED_BUDGET


def test_threads_asking_past_the_budget_answer_alike() -> None:
    """A long-lived reader (``symbolize serve``) asks from several threads: regions dropped and
    decoded again under them answer alike, and what is kept is still counted right."""
    from concurrent.futures import ThreadPoolExecutor

    sizes = [3, 5, 2, 7, 4, 6, 1, 8] * 4
    unbounded, _ = _lookup(sizes, budget=1 << 60)
    lookup, _ = _lookup(sizes, budget=9)
    keys = [(index * 7) % len(sizes) for index in range(2000)]
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda key: _answer(lookup, key), keys))
    assert found == [_answer(unbounded, key) for key in keys]
    assert lookup._held == sum(sizes[key] for key in lookup._decoded)


def test_batches_asking_the_same_regions_keep_those_asked_first() -> None:
    """A cold lookup's batches ask the same units in turn: least-recently-asked would drop each
    before the next batch asks it again (all six decoded twice); the budget's worth asked first is
    kept instead, and only the rest is decoded again."""
    lookup, decoded = _lookup([1] * 6, budget=3)
    batch = [_at(key) for key in range(6)]
    for _ in range(3):
        assert lookup.frames_many(batch) == [[Frame(f"f{key}")] for key in range(6)]
    assert decoded[:6] == list(range(6))
    assert len(decoded) == 6 + 2 * (6 - 3)  # each later batch: what the budget could not keep
    assert lookup._held <= 3 and not lookup._pending


def test_a_region_the_batch_has_still_to_ask_is_kept() -> None:
    lookup, decoded = _lookup([2, 2, 2, 2], budget=4)
    lookup.frames_many([_at(0), _at(1)])
    # 0 and 1 kept; this batch asks 2 and 3 first (each pushes past the budget), then 1 and 0.
    lookup.frames_many([_at(2), _at(3), _at(1), _at(0)])
    assert decoded == [0, 1, 2, 3]


def test_a_failed_batch_leaves_nothing_pending() -> None:
    lookup, _ = _lookup([1, 1, 1], budget=1, fails=1)
    with pytest.raises(RuntimeError):
        lookup.frames_many([_at(0), _at(1), _at(2)])
    assert not lookup._pending
    assert lookup.frames_at(_at(2)) == [Frame("f2")]
    assert lookup._held == 1


@settings(max_examples=150, deadline=None)
# A region kept past a budget of 0 stays while the next batch decodes one that holds nothing.
@example(sizes=[1, 0], budget=0, batches=[[0], [1]])
@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=8),
    budget=st.integers(0, 12),
    batches=st.lists(st.lists(st.integers(0, 7), max_size=10), max_size=6),
)
def test_batches_past_the_budget_answer_alike(sizes: list[int], budget: int, batches: list[list[int]]) -> None:
    unbounded, _ = _lookup(sizes, budget=1 << 60)
    lookup, decoded = _lookup(sizes, budget=budget)
    for batch in batches:
        asked = [_at(key % len(sizes)) for key in batch]
        before, held_before = len(decoded), lookup._held
        assert lookup.frames_many(asked) == unbounded.frames_many(asked)
        assert not lookup._pending
        assert lookup._held == sum(sizes[key] for key in lookup._decoded)
        if len(decoded) == before:
            assert lookup._held == held_before  # regions are dropped only to make room for one decoded
        else:
            # Past the budget (or past what was kept before, when it was: a region decoded that holds
            # nothing drops nothing) only by what this batch asked: none of it droppable while pending.
            kept_before = max(budget, held_before)
            assert lookup._held <= kept_before + sum(sizes[key % len(sizes)] for key in set(batch))


def test_overlapping_regions_are_decoded_once_a_batch() -> None:
    """An address two regions hold asks them in turn (the greater low first): past the budget,
    dropping one for the other would decode both again for every such address of the batch."""
    decoded: list[int] = []
    # Region 1 overlaps region 0 on [0x2000, 0x3000) but has runs only above it: there 0 answers.
    runs = {0: (0x1000, 0x3000), 1: (0x3000, 0x4000)}
    regions = [AnswerRegion(0x1000, 0x3000, 0, False, ()), AnswerRegion(0x2000, 0x4000, 1, False, ())]

    def decode(key: int) -> _Held:
        decoded.append(key)
        return _Held(key, *runs[key], held_bytes=1)

    lookup = AnswerLookup(regions, cast(LazyRunDecoder, decode), budget=1)
    overlapped = [0x2000 + 0x100 * step for step in range(8)]
    assert lookup.frames_many(overlapped) == [[Frame("f0")]] * 8
    assert sorted(decoded) == [0, 1]
    assert not lookup._pending

"""An index whose run lows are out of order answers alike through the warm kernels
(native/src/warm_index.rs) and the Python path (``IndexedObject.frames_at``, symbolize/index/indexed.py).

The builder never writes one; a hostile index with its checksums made again can, and validation
does not look at the order (sorting would cost a pass it does not need). Both paths bisect the lows
step for step as Python's ``bisect_right`` does, so they still give one answer at every address:
the lookup text (``render_lookup_answers``) and the profile rewrite (``profile_answers``). The
index is a fixture's real one with lows swapped, stored 2, 4 or 8 bytes wide (the other arrays
are 1 or 2), and every checksum made again (tests/test_index_validation.py's ``write_corrupted``).
Skipped where the kernels are not built or not enabled.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symbolize.answer_text
import symbolize.indexed_lines
from symbolize.answer_text import AnswerText
from symbolize.api import symbolize_profile
from symbolize.discovery import SearchOptions, open_module
from symbolize.formats.native import kernels
from symbolize.index.indexed import IndexedObject
from symbolize.loader import Loader
from symbolize.shaping import FrameShaper
from tests.kernel_twins import kernels_in
from tests.test_index import fixture_addresses
from tests.test_index_validation import BINARY, PROFILE, Arrays, Built, built, write_corrupted  # noqa: F401 (a fixture)

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)


def swapped(swaps: list[tuple[float, float]], code: str = "H") -> Callable[[Arrays], None]:
    """The run lows at each pair of ``swaps`` (fractions of their count) exchanged, stored as an
    array of type ``code``."""

    def corrupt(arrays: Arrays) -> None:
        lows = array(code, arrays["run_low"])
        for first, second in swaps:
            i, j = (min(int(at * len(lows)), len(lows) - 1) for at in (first, second))
            lows[i], lows[j] = lows[j], lows[i]
        arrays["run_low"] = lows

    return corrupt


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    swaps=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=6),
    code=st.sampled_from("HIQ"),
    as_json=st.booleans(),
)
def test_an_index_with_lows_out_of_order_answers_alike_both_ways(
    tmp_path_factory: pytest.TempPathFactory,
    built: Built,  # noqa: F811
    swaps: list[tuple[float, float]],
    code: str,
    as_json: bool,
) -> None:
    cache = tmp_path_factory.mktemp("cache")
    path = write_corrupted(cache, built, swapped(swaps, code))
    lows = built.arrays["run_low"]  # the same lows, in another order
    module = open_module(BINARY, Loader(SearchOptions(index_dir=cache)))
    assert all(isinstance(source, IndexedObject) for source in module.sources)
    vaddrs = {*fixture_addresses(BINARY, per_segment=100), *(low + delta for low in lows for delta in (-1, 0, 1))}
    texts = [hex(vaddr) for vaddr in sorted(vaddrs) if vaddr >= 0]
    compiled = AnswerText(FrameShaper("full", True), as_json)._compiled(module, texts)
    assert compiled is not None, "the kernel declined the batch"
    assert compiled == AnswerText(FrameShaper("full", True), as_json).render_reference(module, texts)
    assert path.exists()  # answered from the index, not given up


def test_a_profile_rewritten_from_such_an_index_is_the_same_both_ways(tmp_path: Path, built: Built) -> None:  # noqa: F811
    path = write_corrupted(tmp_path, built, swapped([(0.0, 1.0), (0.25, 0.75), (0.4, 0.6)]))
    compiled, _ = symbolize_profile(PROFILE, search_paths=[BINARY.parent], cache_dir=tmp_path)
    with kernels_in(None, symbolize.indexed_lines, symbolize.answer_text):
        reference, _ = symbolize_profile(PROFILE, search_paths=[BINARY.parent], cache_dir=tmp_path)
    assert compiled.SerializeToString(deterministic=True) == reference.SerializeToString(deterministic=True)
    assert path.exists()


def test_an_array_of_a_signed_type_is_refused() -> None:
    """The kernel reads unsigned arrays only ('B', 'H', 'I', 'Q'); the store also writes 'i' and 'q'."""
    assert kernels is not None
    places = dict.fromkeys(kernels.INDEXED_RUNS_ARRAYS, ("B", 0, 0))
    for code in "iqb":
        with pytest.raises(kernels.IndexInconsistentError, match="not an unsigned one"):
            kernels.IndexedRuns(b"\0" * 16, {**places, "run_low": (code, 0, 1)}, [])

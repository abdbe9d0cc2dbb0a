"""An index whose checksums are right but whose arrays do not hold together (an id past its array,
arrays of uneven length, facts missing) is given up as a damaged one is: deleted from the cache,
and the file itself answers, on the compiled path (``Layout::validate``, native/src/warm_index.rs)
and the Python one (``check_index_arrays``, symbolize/index/indexed.py) alike.

The indexes are a fixture's real index with one array rewritten and every checksum made again
(``write_index``), so only the validation can tell.
"""

from __future__ import annotations

import subprocess
from array import array
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.api import build_indexes, lookup, symbolize_profile
from symbolize.cache import SOURCE_PATH_ARRAY, index_key, index_path
from symbolize.formats.elf import ElfFile
from symbolize.index.store import IndexFile, write_index
from tests.fixtures_data import ROOT
from tests.kernel_twins import kernel_environment
from tests.test_cli_contracts import console_script, tree_environment
from tests.test_index import fixture_addresses

FIXTURES = ROOT / "fixtures"
BINARY = FIXTURES / "bin" / "cppdemo-clang-dwarf5-pie"
PROFILE = FIXTURES / "profiles" / "cppdemo-clang-dwarf5-pie.cpu.pb"

# Arrays of ids, each with what bounds its ids (the length of another array; "strings": name_full's).
ID_ARRAYS = {
    "run_chain": "chain_name",
    "chain_outer": "outer_begin",  # less one: outer_begin holds one more offset than there are outers
    "outer_frames": "frame_name",
    "run_file": "name_full",
    "chain_name": "name_full",
    "chain_file": "name_full",
    "frame_name": "name_full",
    "frame_file": "name_full",
    "error_text": "name_full",
    "name_full": "name_full",
}
# Arrays any cut of which leaves the index inconsistent: one of an equally long group, an offset
# table's target, or an offset table that must end where its array does.
CUTTABLE = (
    "run_low", "run_file", "run_line", "run_column", "run_chain",
    "chain_name", "chain_start_line", "chain_file", "chain_outer",
    "frame_name", "frame_file", "frame_line", "frame_column", "frame_start_line",
    "outer_begin", "outer_frames", "name_full", "str_offsets", "str_blob",
)  # fmt: skip

Arrays = dict[str, "array[int] | bytes"]


class Built:
    """The fixture's index: its key and arrays (shown short in hypothesis' reports)."""

    def __init__(self, key: str, arrays: Arrays) -> None:
        self.key, self.arrays = key, arrays

    def __repr__(self) -> str:
        return f"Built({BINARY.name})"


class Uncached:
    """What the file itself answers: the fixture's addresses, and its profile rewritten."""

    def __init__(self, answers: list[object], rewritten: bytes) -> None:
        self.answers, self.rewritten = answers, rewritten

    def __repr__(self) -> str:
        return "Uncached()"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    cache = tmp_path_factory.mktemp("cache")
    build_indexes([BINARY], cache_dir=cache)
    with ElfFile(BINARY) as elf:
        key = index_key(elf)
    index = IndexFile(index_path(cache, key), key)
    arrays: Arrays = {}
    for name in index._entries:
        view = index.array(name)
        arrays[name] = bytes(view) if name in ("str_blob", SOURCE_PATH_ARRAY) else array(view.format, view.tolist())
    index.close()
    return Built(key, arrays)


@pytest.fixture(scope="module")
def uncached() -> Uncached:
    answers = lookup(BINARY, fixture_addresses(BINARY, per_segment=200), use_cache=False)
    profile, _ = symbolize_profile(PROFILE, search_paths=[BINARY.parent], use_cache=False)
    return Uncached(list(answers), profile.SerializeToString(deterministic=True))


def out_of_range(name: str, position: float, past: int) -> Callable[[Arrays], None]:
    """Array ``name`` with one id (at ``position``, a fraction of its length) ``past`` beyond its bound."""

    def corrupt(arrays: Arrays) -> None:
        bound = len(arrays[ID_ARRAYS[name]]) - (1 if name == "chain_outer" else 0)
        values = array("Q", arrays[name])
        if not values:
            values.append(0)
        values[min(int(position * len(values)), len(values) - 1)] = bound + past
        arrays[name] = values

    return corrupt


def cut(name: str, keep: float) -> Callable[[Arrays], None]:
    """Array ``name`` cut to ``keep`` (a fraction) of its length, at least one item shorter."""

    def corrupt(arrays: Arrays) -> None:
        values = arrays[name]
        arrays[name] = values[: min(int(keep * len(values)), len(values) - 1)]

    return corrupt


def facts_cut(keep: int) -> Callable[[Arrays], None]:
    def corrupt(arrays: Arrays) -> None:
        arrays["facts"] = arrays["facts"][:keep]

    return corrupt


CORRUPTIONS = st.one_of(
    st.builds(
        out_of_range,
        st.sampled_from(sorted(ID_ARRAYS)),
        st.floats(0, 1),
        st.integers(0, 2**40) | st.just(0),
    ),
    st.builds(cut, st.sampled_from(CUTTABLE), st.floats(0, 1) | st.just(0.0)),
    st.builds(facts_cut, st.integers(0, 4)),
)


def write_corrupted(cache: Path, built: Built, corrupt: Callable[[Arrays], None]) -> Path:
    key, arrays = built.key, dict(built.arrays)
    corrupt(arrays)
    path = index_path(cache, key)
    write_index(path, key, arrays)  # every checksum right
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corrupt=CORRUPTIONS)
def test_an_index_that_does_not_hold_together_is_given_up_and_the_file_answers(
    tmp_path_factory: pytest.TempPathFactory,
    built: Built,
    uncached: Uncached,
    corrupt: Callable[[Arrays], None],
) -> None:
    answers, rewritten = uncached.answers, uncached.rewritten
    cache = tmp_path_factory.mktemp("cache")
    path = write_corrupted(cache, built, corrupt)
    assert lookup(BINARY, fixture_addresses(BINARY, per_segment=200), cache_dir=cache) == answers
    assert not path.exists()
    path = write_corrupted(cache, built, corrupt)
    profile, _ = symbolize_profile(PROFILE, search_paths=[BINARY.parent], cache_dir=cache)
    assert profile.SerializeToString(deterministic=True) == rewritten
    assert not path.exists()


def test_the_unchanged_index_is_kept(tmp_path: Path, built: Built, uncached: Uncached) -> None:
    """The rewriting itself leaves a valid index valid: what the test above sees is the corruption."""
    path = write_corrupted(tmp_path, built, lambda arrays: None)
    assert lookup(BINARY, fixture_addresses(BINARY, per_segment=200), cache_dir=tmp_path) == uncached.answers
    profile, _ = symbolize_profile(PROFILE, search_paths=[BINARY.parent], cache_dir=tmp_path)
    assert profile.SerializeToString(deterministic=True) == uncached.rewritten
    assert path.exists()


def _run(arguments: list[str | Path], pure_python: bool) -> subprocess.CompletedProcess[bytes]:
    """The console script on this tree's code, with or without the compiled kernels."""
    environment = kernel_environment(tree_environment(), pure_python)
    return subprocess.run(
        [*console_script(), *map(str, arguments)], capture_output=True, cwd=ROOT, env=environment, timeout=120
    )


@pytest.mark.parametrize("pure_python", [False, True], ids=["compiled", "pure-python"])
@pytest.mark.parametrize(
    "corrupt",
    [
        out_of_range("chain_name", 0.5, 1000),
        out_of_range("error_text", 0.0, 0),
        out_of_range("frame_file", 0.9, 2**33),
        out_of_range("run_chain", 0.3, 0),
        cut("frame_name", 0.5),
        cut("str_blob", 0.99),
        facts_cut(0),
    ],
    ids=["name-id", "error-text-id", "file-id", "chain-id", "short-frames", "short-blob", "no-facts"],
)
def test_the_commands_answer_as_without_the_cache_on_both_paths(
    tmp_path: Path, built: Built, corrupt: Callable[[Arrays], None], pure_python: bool
) -> None:
    addresses = [hex(vaddr) for vaddr in fixture_addresses(BINARY, per_segment=50)]
    look: list[str | Path] = ["lookup", "-e", BINARY, "--json", "--no-background-index", *addresses]
    expected = _run([*look, "--no-cache"], pure_python)
    assert expected.returncode == 0, expected.stderr
    path = write_corrupted(tmp_path, built, corrupt)
    answered = _run([*look, "--cache-dir", tmp_path], pure_python)
    assert (answered.returncode, answered.stderr, answered.stdout) == (0, b"", expected.stdout)
    assert not path.exists()

    profile: list[str | Path] = ["profile", PROFILE, "--search-path", BINARY.parent, "--no-background-index", "-o"]
    expected = _run([*profile, tmp_path / "expected.pb", "--no-cache"], pure_python)
    assert expected.returncode == 0, expected.stderr
    path = write_corrupted(tmp_path, built, corrupt)
    answered = _run([*profile, tmp_path / "answered.pb", "--cache-dir", tmp_path], pure_python)
    assert answered.returncode == 0, answered.stderr
    assert (tmp_path / "answered.pb").read_bytes() == (tmp_path / "expected.pb").read_bytes()
    assert not path.exists()


# The arrays only llvm-symbolizer's frame fields read (Frame's start_file, start_address,
# discriminator): Python checks them whenever it binds the index (check_start_arrays), the
# compiled kernels never read them.
START_ID_ARRAYS = {"chain_start_file": "name_full", "frame_start_file": "name_full"}
START_CUTTABLE = ("run_discriminator", "chain_start_file", "chain_start_address", "frame_start_file",
                  "frame_start_address", "frame_discriminator")  # fmt: skip


def start_out_of_range(name: str, position: float, past: int) -> Callable[[Arrays], None]:
    def corrupt(arrays: Arrays) -> None:
        values = array("Q", arrays[name]) or array("Q", [0])
        values[min(int(position * len(values)), len(values) - 1)] = len(arrays[START_ID_ARRAYS[name]]) + past
        arrays[name] = values

    return corrupt


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    corrupt=st.one_of(
        st.builds(start_out_of_range, st.sampled_from(sorted(START_ID_ARRAYS)), st.floats(0, 1), st.integers(0, 2**40)),
        st.builds(cut, st.sampled_from(START_CUTTABLE), st.floats(0, 1) | st.just(0.0)),
    )
)
def test_the_start_arrays_that_do_not_hold_together_give_the_index_up(
    tmp_path_factory: pytest.TempPathFactory, built: Built, uncached: Uncached, corrupt: Callable[[Arrays], None]
) -> None:
    cache = tmp_path_factory.mktemp("cache")
    path = write_corrupted(cache, built, corrupt)
    assert lookup(BINARY, fixture_addresses(BINARY, per_segment=200), cache_dir=cache) == uncached.answers
    assert not path.exists()

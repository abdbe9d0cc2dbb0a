"""An index built while a split unit's .dwp/.dwo or the dwz file was missing (or present) is not
believed once that changes: the answers come from the files as they are now, through the index
that is built again, as llvm-symbolizer gives them.

The split-DWARF case is Cargo's ``split-debuginfo = "packed"`` build (fixtures/build_cargo_split.sh),
compared with llvm-symbolizer's stored answers; the dwz case is ``cppdemo-gcc-dwz``, compared with
the uncached answers of the complete file set (which the differential tests hold to llvm's).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from symbolize.api import build_indexes, lookup
from symbolize.cli.app import app
from symbolize.index.background import build_missing
from symbolize.index.job import IndexJob
from symbolize.module import Unknown
from tests.fixtures_data import BIN, load_expected

runner = CliRunner()

Chain = list[tuple[str | None, str | None, int, int]]


def _llvm_chains(variant: str) -> tuple[list[int], list[Chain]]:
    expected = load_expected(variant)
    chains = [[(f.function, f.file, f.line, f.column) for f in entry.frames] for entry in expected.addresses]
    return [entry.vaddr for entry in expected.addresses], [[] if c == [(None, None, 0, 0)] else c for c in chains]


def _cli_chains(binary: Path, cache_dir: Path, vaddrs: list[int]) -> list[Chain]:
    result = runner.invoke(
        app,
        ["lookup", "--obj", str(binary), "--json", "--demangle", "none", "--cache-dir", str(cache_dir),
         *map(hex, vaddrs)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    return [[(f["function"], f["file"], f["line"], f["column"]) for f in answer["frames"]] for answer in answers]


def _api_chains(binary: Path, cache_dir: Path, vaddrs: list[int]) -> list[Chain]:
    results = lookup(binary, vaddrs, demangle="none", cache_dir=cache_dir)
    return [[] if isinstance(r, Unknown) else [(f.function, f.file, f.line, f.column) for f in r] for r in results]


def _indexed(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "index").glob("*.idx"))


def _packed_alone(directory: Path) -> Path:
    binary = directory / "rs-cargo-packed"
    shutil.copy(BIN / "rs-cargo-packed", binary)
    return binary


def test_index_built_without_the_dwp_is_not_believed_once_it_is_there(tmp_path: Path) -> None:
    binary = _packed_alone(tmp_path)
    cache_dir = tmp_path / "cache"
    vaddrs, llvm = _llvm_chains("rs-cargo-packed")
    build_indexes([binary], cache_dir=cache_dir)  # `symbolize index` with the .dwp missing
    assert _indexed(cache_dir)
    shutil.copy(BIN / "rs-cargo-packed.dwp", tmp_path / "rs-cargo-packed.dwp")
    assert _cli_chains(binary, cache_dir, vaddrs) == llvm
    assert _api_chains(binary, cache_dir, vaddrs) == llvm
    # The stale index was dropped; the one built now holds the .dwp's answers.
    build_indexes([binary], cache_dir=cache_dir)
    assert _cli_chains(binary, cache_dir, vaddrs) == llvm
    assert sum(len(chain) > 4 for chain in llvm) > 20


def test_index_built_with_the_dwp_is_not_believed_once_it_is_gone(tmp_path: Path) -> None:
    binary = _packed_alone(tmp_path)
    shutil.copy(BIN / "rs-cargo-packed.dwp", tmp_path / "rs-cargo-packed.dwp")
    cache_dir = tmp_path / "cache"
    vaddrs, llvm = _llvm_chains("rs-cargo-packed")
    build_indexes([binary], cache_dir=cache_dir)
    assert _cli_chains(binary, cache_dir, vaddrs) == llvm
    (tmp_path / "rs-cargo-packed.dwp").unlink()
    without = _api_chains(binary, cache_dir, vaddrs)
    assert without == _api_chains(binary, tmp_path / "empty-cache", vaddrs)  # what the binary alone says
    assert max(map(len, without)) == 1  # no inline chain is left from the .dwp
    assert _cli_chains(binary, cache_dir, vaddrs) == without


def test_background_builder_index_without_the_dwp_is_not_believed_once_it_is_there(tmp_path: Path) -> None:
    binary = _packed_alone(tmp_path)
    cache_dir = tmp_path / "cache"
    vaddrs, llvm = _llvm_chains("rs-cargo-packed")
    assert build_missing([IndexJob(binary)], cache_dir) == 0
    assert _indexed(cache_dir)
    shutil.copy(BIN / "rs-cargo-packed.dwp", tmp_path / "rs-cargo-packed.dwp")
    assert _cli_chains(binary, cache_dir, vaddrs) == llvm
    assert build_missing([IndexJob(binary)], cache_dir) == 0  # builds the index again, with the .dwp
    assert _api_chains(binary, cache_dir, vaddrs) == llvm


def test_index_built_without_the_dwz_file_is_not_believed_once_it_is_there(tmp_path: Path) -> None:
    binary = tmp_path / "cppdemo-gcc-dwz"
    shutil.copy(BIN / "cppdemo-gcc-dwz", binary)
    common = BIN / "cppdemo-gcc-dwz.common.debug"
    vaddrs = [entry.vaddr for entry in load_expected("cppdemo-gcc-dwz").addresses]
    complete = _api_chains(BIN / "cppdemo-gcc-dwz", tmp_path / "uncached", vaddrs)
    assert sum(len(chain) > 1 for chain in complete) > 50
    cache_dir = tmp_path / "cache"
    build_indexes([binary], cache_dir=cache_dir)
    alone = _api_chains(binary, cache_dir, vaddrs)
    assert alone != complete
    shutil.copy(common, tmp_path / common.name)
    assert _cli_chains(binary, cache_dir, vaddrs) == complete
    assert _api_chains(binary, cache_dir, vaddrs) == complete
    # And back: the index built with it stops answering once it is gone.
    build_indexes([binary], cache_dir=cache_dir)
    (tmp_path / common.name).unlink()
    assert _cli_chains(binary, cache_dir, vaddrs) == alone

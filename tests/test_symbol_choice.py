"""Which symbol names an address where a symbol table offers several, against llvm-symbolizer 22.

The fixtures (``fixtures/symbol-choice/``, ``fixtures/build_symbol_choice.sh``) carry symbol
tables and no DWARF; llvm-symbolizer 22's name at every code address is stored beside them
(``fixtures/make_expected_symbol_choice.py``) and re-checked live where it is installed:

- ARM mapping symbols (``$x.N``, ``$d.N`` on AArch64; ``$t.N``, ``$a.N``, ``$d.N`` on ARM) sit
  inside functions after a literal word or a Thumb-2 jump table; they name nothing.
- MinGW import thunks (``jmp *__imp_VirtualQuery``) carry untyped COFF symbols of their own,
  and alias pairs (``_fpreset``/``fpreset``) share an address: the later one in the table wins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from symbolize.api import build_indexes, lookup
from symbolize.module import Unknown
from tests.fixtures_data import FIXTURES

DIRECTORY = FIXTURES / "symbol-choice"
FILES = ["armdemo-aarch64", "armdemo-armv7", "mingwcrt.exe"]
LLVM_SYMBOLIZER = Path(os.environ.get("LLVM_SYMBOLIZER", "/usr/lib/llvm-22/bin/llvm-symbolizer"))


def _expected(name: str) -> dict[str, Any]:
    return json.loads((DIRECTORY / "expected" / f"{name}.json").read_text())  # type: ignore[no-any-return]


def _addresses(name: str) -> tuple[list[int], list[str | None]]:
    expected = _expected(name)
    addresses: list[int] = []
    names: list[str | None] = []
    for first, end, function in expected["runs"]:
        span = range(int(first, 16), int(end, 16), expected["step"])
        addresses.extend(span)
        names.extend([function] * len(span))
    return addresses, names


def _ours(name: str, addresses: list[int], **options: Any) -> list[str | None]:
    results = lookup(DIRECTORY / name, addresses, demangle="none", **options)
    return [None if isinstance(result, Unknown) or not result else result[-1].function for result in results]


@pytest.mark.parametrize("name", FILES)
def test_every_code_address_is_named_as_llvm_symbolizer_22_names_it(name: str) -> None:
    addresses, names = _addresses(name)
    ours = _ours(name, addresses, use_cache=False)
    differ = [(hex(a), o, t) for a, o, t in zip(addresses, ours, names, strict=True) if o != t]
    assert not differ, f"{len(differ)} of {len(addresses)} differ, first {differ[:5]}"


@pytest.mark.parametrize("name", FILES)
def test_the_index_answers_as_the_reader(name: str, tmp_path: Path) -> None:
    addresses, names = _addresses(name)
    assert build_indexes([DIRECTORY / name], cache_dir=tmp_path)
    assert _ours(name, addresses, cache_dir=tmp_path) == names


def test_the_cases_are_in_the_fixtures() -> None:
    """The stored answers hold each case: a mapping symbol inside a function, a thunk, an alias pair."""
    armv7 = {function for _, _, function in _expected("armdemo-armv7")["runs"]}
    assert armv7 == {"embedded_constant", "dispatch", "arm_state", "_start"}
    with (DIRECTORY / "armdemo-armv7").open("rb") as stream:
        table = ELFFile(stream).get_section_by_name(".symtab")
        symbols = {symbol.name: symbol["st_value"] for symbol in table.iter_symbols()}
    assert symbols["dispatch"] & ~1 < symbols["$d.3"] < symbols["arm_state"]  # the jump table inside dispatch
    mingw = {(first, function) for first, _, function in _expected("mingwcrt.exe")["runs"]}
    assert ("0x140007c78", "VirtualQuery") in mingw and ("0x140007c90", "Sleep") in mingw
    assert ("0x1400018b0", "fpreset") in mingw  # _fpreset comes first in the COFF table


@pytest.mark.skipif(not LLVM_SYMBOLIZER.exists(), reason="llvm-symbolizer 22 is not installed")
def test_the_stored_answers_are_llvm_symbolizer_22s() -> None:
    script = FIXTURES / "make_expected_symbol_choice.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

"""Names users read: a profile's Rust names are hashless with generics kept and one closure spelling
(``{{closure}}``); ``--keep-hashes`` keeps the hashes; ``lookup`` keeps llvm-symbolizer's spelling.

The expected names are derived from each Function's system name (the linkage name) by LLVM's
demangler (``demangle(.., "full")``, what llvm-symbolizer prints), never from the rewrite.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from symbolize.api import symbolize_profile
from symbolize.cli.app import app
from symbolize.demangle import demangle, profile_name
from symbolize.pprof import StringTable
from tests.fixtures_data import FIXTURES

BIN = FIXTURES / "bin"
RUST_CPU = FIXTURES / "profiles" / "rustdemo-full.cpu.pb"
HASH = re.compile(r"::h[0-9a-f]{16}\b")
RUST_LEGACY = re.compile(r"^_ZN.*17h[0-9a-f]{16}E$")


def _names(keep_hashes: bool = False) -> list[tuple[str, str]]:
    profile, _ = symbolize_profile(RUST_CPU, search_paths=[BIN], keep_hashes=keep_hashes)
    strings = StringTable(profile)
    return [(strings.get(f.name), strings.get(f.system_name)) for f in profile.function]


def test_profile_names_drop_rust_hashes_and_keep_generics() -> None:
    names = _names()
    legacy = [(name, system) for name, system in names if RUST_LEGACY.match(system)]
    assert len(legacy) > 20
    for name, system in legacy:
        llvm = demangle(system, "full")
        assert HASH.search(llvm)  # what llvm-symbolizer prints
        assert not HASH.search(name)
        assert name == HASH.sub("", llvm).replace("{closure#0}", "{{closure}}")
    assert "alloc::vec::Vec<T,A>::push_mut" in {name for name, _ in names}  # generics kept


def test_one_closure_spelling_throughout() -> None:
    names = [name for name, _ in _names()]
    # The prebuilt std's v0 symbols say {closure#0}, the program's legacy ones {{closure}}.
    assert any(name.startswith("std::rt::lang_start_internal::") for name in names)
    assert not any("{closure#" in name for name in names)
    assert "std::rt::lang_start_internal::{{closure}}" in names
    assert "std::rt::lang_start::{{closure}}" in names  # a legacy symbol's, hash dropped


def test_keep_hashes_keeps_them() -> None:
    names = _names(keep_hashes=True)
    legacy = [(name, system) for name, system in names if RUST_LEGACY.match(system)]
    assert legacy and all(HASH.search(name) for name, _ in legacy)


def test_the_command_line_drops_them_by_default_and_keeps_them_when_asked(tmp_path: Path) -> None:
    for extra, hashed in (([], False), (["--keep-hashes"], True)):
        out = tmp_path / f"out{len(extra)}.pb"
        result = CliRunner().invoke(
            app, ["profile", str(RUST_CPU), "-o", str(out), "--search-path", str(BIN), "--json-summary",
                  "--no-background-index", *extra],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        tops = json.loads(result.stdout)["top_functions"]["cpu"]
        assert any(HASH.search(top["function"]) for top in tops) is hashed


def test_lookup_keeps_llvms_spelling() -> None:
    # llvm-symbolizer's answers stored beside the fixture: a legacy closure with its hash, a v0 one.
    expected = {}
    for line in (FIXTURES / "expected" / "rustdemo-full.json").read_text().splitlines():
        if line.startswith('{"address"'):
            entry = json.loads(line.rstrip(","))
            expected[entry["address"]] = entry["frames"]
    for address in ("0x169c0", "0x19201"):
        frames = expected[address]
        result = CliRunner().invoke(app, ["lookup", "-e", str(BIN / "rustdemo-full"), "--no-cache",
                                          "--no-background-index", address])  # fmt: skip
        assert result.exit_code == 0, result.output
        printed = result.stdout.splitlines()[0::2]
        wanted = [demangle(frame["function"], "full") for frame in frames if frame["function"]]
        assert printed[: len(wanted)] == wanted
        assert any("::h" in name or "{closure#0}" in name for name in printed)


def test_profile_name_rules() -> None:
    legacy = "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h8878c637bc3d8c90E"
    assert profile_name(legacy, "full") == "std::rt::lang_start::{{closure}}"
    assert profile_name(legacy, "full", keep_hashes=True) == "std::rt::lang_start::{{closure}}::h8878c637bc3d8c90"
    assert profile_name(legacy, "none") == legacy
    v0 = "_RNCNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal0B5_"
    assert demangle(v0, "full") == "std::rt::lang_start_internal::{closure#0}"  # lookup's, LLVM's
    assert profile_name(v0, "full") == "std::rt::lang_start_internal::{{closure}}"
    assert profile_name(v0, "short") == "std::rt::lang_start_internal::{{closure}}"
    assert profile_name("rustdemo::main::{closure#3}", "full") == "rustdemo::main::{{closure}}"  # a DWARF name
    cloned = "_ZN8rustdemo4main17h14a1f95b71c9741cE.llvm.12345"
    assert profile_name(cloned, "full") == "rustdemo::main (.llvm.12345)"
    assert profile_name("_ZN3foo3barEv", "full") == "foo::bar()"  # C++: as LLVM prints it

"""A cold ``lookup --obj ELF --json --no-cache`` imports only what it uses (issue 22's start-up).

Two things a one-address lookup paid for at start-up without using them: the locators (and
readers) of the formats it never meets, and typing's compiling of every NamedTuple field
annotation that is a string (``from __future__ import annotations``), ~20M instructions of a
one-address lookup's ~300M, half of them the first ``compile()`` building the ast module's types.
The modules that define the NamedTuples of the path therefore have no future import
(symbolize/formats/types.py says so), and the registry imports a locator's module when a hint of
its kind is first followed (symbolize/discovery/registry.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures_data import ROOT

BINARY = ROOT / "fixtures" / "bin" / "cppdemo-gcc-dwarf5-pie"

# Runs the command as the console script does; at exit (leave_now runs the atexit functions)
# prints how many ForwardRefs typing made and which modules were imported.
_PROGRAM = """
import atexit, json, sys, typing
made = []
init = typing.ForwardRef.__init__
def counted(self, *args, **kwargs):
    made.append(args[0] if args else kwargs.get("arg"))
    init(self, *args, **kwargs)
typing.ForwardRef.__init__ = counted
atexit.register(lambda: print(json.dumps({"forward_refs": made, "modules": sorted(sys.modules)}), file=sys.stderr))
sys.argv = ["symbolize", *sys.argv[1:]]
from symbolize.cli.entry import main
main()
"""

# Modules a lookup of an ELF file with its own DWARF has no use for.
_UNUSED = (
    "symbolize.discovery.macho_locators",
    "symbolize.discovery.pdb_locator",
    "symbolize.discovery.binary_sources",
    "symbolize.formats.archive",
    "symbolize.formats.macho",
    "symbolize.formats.pdb",
    "dataclasses",
)


def _cold_lookup() -> tuple[str, dict[str, list[str]]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, "lookup", "--obj", str(BINARY), "--json", "--no-cache", "0x1139"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "SYMBOLIZE_BACKGROUND_INDEX": "0"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stderr.splitlines()[-1])


def test_a_cold_elf_lookup_compiles_no_annotation_and_imports_no_other_format() -> None:
    answer, seen = _cold_lookup()
    assert json.loads(answer)["frames"]
    assert seen["forward_refs"] == []
    assert [name for name in seen["modules"] if name.startswith(_UNUSED)] == []


def test_a_warm_lookup_loads_no_demangler(tmp_path: Path) -> None:
    """The index key names the demangler by pycxxfilt's release, read without loading it: a warm
    lookup reads names demangled when the index was built (symbolize/demangle.py's _demangler)."""
    binary = str(BINARY)
    cache = ["--cache-dir", str(tmp_path)]
    built = subprocess.run([sys.executable, "-m", "symbolize", "index", binary, *cache],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert built.returncode == 0, built.stderr
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, "lookup", "--obj", binary, *cache, "--no-background-index", "0x1139"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stderr.splitlines()[-1])["modules"]
    assert "symbolize.index.indexed" in modules  # answered from the index
    assert "pycxxfilt" not in modules
    assert done.stdout == subprocess.run(
        [sys.executable, "-m", "symbolize", "lookup", "--obj", binary, "--no-cache", "0x1139"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    ).stdout  # fmt: skip


# Modules a lookup answered from an index never uses: what decoding a file's answers takes (the
# ELF reader imports it where it uses it, formats/elf/file.py: a warm lookup opens the file for its
# identity and hints alone), the profile command's request (symbolize/cli/profile_command.py), and
# a background builder's job (made by the loader for a source found missing an index alone).
_UNUSED_WARM = (
    "symbolize.formats.answers",
    "symbolize.formats.symbols",
    "symbolize.formats.paired",
    "symbolize.formats.sections",
    "symbolize.formats.elf.symtab",
    "symbolize.cli.profile_command",
    "symbolize.index.job",
)


@pytest.mark.parametrize("style", [[], ["--json"]])
def test_a_warm_lookup_imports_nothing_it_does_not_use(tmp_path: Path, style: list[str]) -> None:
    """A warm lookup (index built, a background build asked for) imports none of _UNUSED_WARM, and
    prints what the cold one does."""
    binary = str(BINARY)
    cache = ["--cache-dir", str(tmp_path)]
    built = subprocess.run([sys.executable, "-m", "symbolize", "index", binary, *cache],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert built.returncode == 0, built.stderr
    # A background build asked for: with every index there, it starts nothing.
    lookup = ["lookup", "--obj", binary, *cache, "--background-index", *style, "0x1139"]
    done = subprocess.run([sys.executable, "-c", _PROGRAM, *lookup],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stderr.splitlines()[-1])["modules"]
    assert "symbolize.index.indexed" in modules  # answered from the index
    assert [name for name in modules if name.startswith(_UNUSED_WARM)] == []
    cold = [*lookup[:3], "--no-cache", *style, "0x1139"]
    assert done.stdout == subprocess.run([sys.executable, "-m", "symbolize", *cold],
                                         capture_output=True, text=True, cwd=ROOT, timeout=120).stdout  # fmt: skip

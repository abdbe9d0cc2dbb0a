"""``symbolize lookup`` with llvm-symbolizer's and addr2line's flags prints what llvm-symbolizer 14
prints, byte for byte, through the real console script.

The answers themselves are judged by tests/test_differential.py; here, on addresses where the
default style already agrees, every other style must agree too (outputs stored by
``fixtures/make_expected_styles.py``, re-checked live where llvm-symbolizer is installed).
Two narrow rules, both in the README:

- ``--output-style=GNU`` prints a line's discriminator (`` (discriminator N)``); we read none,
  so the stored line is compared without it.
- ``--functions=none``: llvm-symbolizer 14 then never reads the symbol table, so an address
  only the symbol table names prints ``??:0:0`` where we print the symbol's STT_FILE source.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fixtures_data import ROOT
from tests.test_cli_contracts import console_script

STYLES = sorted((ROOT / "fixtures" / "expected" / "styles").glob("*.json"))
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")
DISCRIMINATOR = re.compile(r" \(discriminator \d+\)$", re.MULTILINE)


def _stored(path: Path) -> dict[str, object]:
    stored: dict[str, object] = json.loads(path.read_text())
    return stored


def _cases() -> list[tuple[Path, str]]:
    return [(path, flags) for path in STYLES for flags in _stored(path)["outputs"]]  # type: ignore[attr-defined]


def _normalized(text: str) -> str:
    """LLVM 14 closes nested templates "> >", the demangler we use ">>" (tests/test_differential.py)."""
    return text.replace("> >", ">>").replace("> >", ">>")


def _ours(binary: Path, flags: str, addresses: list[str]) -> str:
    command = [*console_script(), "lookup", "--no-cache", "--no-background-index", "-e", str(binary)]
    command += [*flags.split(), *addresses]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT / "fixtures")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("stored_path", "flags"), _cases(), ids=lambda v: v.stem if isinstance(v, Path) else v)
def test_style_is_byte_identical_to_llvm_symbolizer(stored_path: Path, flags: str) -> None:
    stored = _stored(stored_path)
    addresses: list[str] = stored["addresses"]  # type: ignore[assignment]
    theirs = _normalized(stored["outputs"][flags])  # type: ignore[index]
    ours = _ours(Path(str(stored["binary"])), flags, addresses)
    if "--output-style=GNU" in flags:
        theirs = DISCRIMINATOR.sub("", theirs)  # rule 1 (module docstring)
    if "--functions=none" in flags:
        # Rule 2: only a symbol-table answer's line, "??:0:0" for them, "SOURCE:0:0" for us.
        pairs = list(zip(theirs.splitlines(), ours.splitlines(), strict=True))
        assert all(a == b or (a == "??:0:0" and b.endswith(":0:0")) for a, b in pairs)
        return
    assert ours == theirs


@pytest.mark.skipif(LLVM_SYMBOLIZER is None, reason="llvm-symbolizer is not installed")
@pytest.mark.parametrize("stored_path", STYLES, ids=lambda p: p.stem)
def test_stored_outputs_are_what_llvm_symbolizer_prints(stored_path: Path) -> None:
    assert LLVM_SYMBOLIZER is not None
    stored = _stored(stored_path)
    for flags, text in stored["outputs"].items():  # type: ignore[attr-defined]
        addresses: list[str] = stored["addresses"]  # type: ignore[assignment]
        command = [LLVM_SYMBOLIZER, f"--obj={stored['binary']}", *flags.split(), *addresses]
        live = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT / "fixtures").stdout
        assert live == text, flags


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        (["-e", "{obj}"], ["--obj", "{obj}"]),
        (["--exe={obj}"], ["--obj", "{obj}"]),
        (["-e={obj}"], ["--obj", "{obj}"]),
        (["--obj", "{obj}", "-C"], ["--obj", "{obj}", "--demangle", "full"]),
        (["--obj", "{obj}", "--demangle"], ["--obj", "{obj}", "--demangle", "full"]),
        (["--obj", "{obj}", "--no-demangle"], ["--obj", "{obj}", "--demangle", "none"]),
        (["--obj", "{obj}", "--demangle", "short"], ["--obj", "{obj}", "--demangle=short"]),
        (["--obj", "{obj}", "-i"], ["--obj", "{obj}", "--inlines"]),
        (["--obj", "{obj}", "--inlining=false"], ["--obj", "{obj}", "--no-inlines"]),
        (["--obj", "{obj}", "-a", "-p"], ["--obj", "{obj}", "--addresses", "--pretty-print"]),
        (["--obj", "{obj}", "-f"], ["--obj", "{obj}", "--functions=linkage"]),
        (["--obj", "{obj}", "--output-style=gnu"], ["--obj", "{obj}", "--output-style", "GNU"]),
    ],
)
def test_spellings_mean_what_llvm_symbolizer_means(spelling: list[str], canonical: list[str]) -> None:
    obj = str(ROOT / "fixtures" / "bin" / "cppdemo-gcc-dwarf5-pie")
    addresses = ["0x1100", "0x1105"]
    base = [*console_script(), "lookup", "--no-cache", "--no-background-index"]
    spelled = subprocess.run(
        [*base, *[word.format(obj=obj) for word in spelling], *addresses], capture_output=True, text=True
    )
    plain = subprocess.run(
        [*base, *[word.format(obj=obj) for word in canonical], *addresses], capture_output=True, text=True
    )
    assert spelled.returncode == plain.returncode == 0, spelled.stderr + plain.stderr
    assert spelled.stdout == plain.stdout and spelled.stdout

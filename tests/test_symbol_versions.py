"""Symbol names never carry a symbol version: a debug file's ``.symtab`` keeps the assembler's
``cfree@GLIBC_2.2.5`` and ``pthread_create@@GLIBC_2.34``, and llvm-symbolizer 14 prints
``cfree`` and ``pthread_create``. Checked on this machine's libc and its debug
file, where installed (libc6-dbg)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from symbolize.api import lookup
from symbolize.formats.elf import ElfFile
from symbolize.module import Unknown

LIBC = Path("/usr/lib/x86_64-linux-gnu/libc.so.6")


def _debug_file() -> Path | None:
    if not LIBC.is_file():
        return None
    with ElfFile(LIBC) as elf:
        build_id = elf.debug_id.value.hex() if elf.debug_id is not None else ""
    found = Path("/usr/lib/debug/.build-id") / build_id[:2] / f"{build_id[2:]}.debug"
    return found if build_id and found.is_file() else None


DEBUG_FILE = _debug_file()
READELF = shutil.which("readelf")


@pytest.mark.skipif(DEBUG_FILE is None or READELF is None, reason="libc's debug file or readelf is missing")
def test_versioned_symbols_are_named_without_their_version() -> None:
    assert DEBUG_FILE is not None and READELF is not None
    table = subprocess.run([READELF, "-sW", str(DEBUG_FILE)], capture_output=True, text=True).stdout
    vaddrs = sorted(
        {
            int(fields[1], 16)
            for fields in (line.split() for line in table.splitlines())
            if len(fields) >= 8 and fields[3] == "FUNC" and fields[6] != "UND" and "@" in fields[7]
        }
    )
    assert vaddrs, "the debug file lists versioned functions"
    results = lookup(LIBC, vaddrs, demangle="none", use_cache=False)
    names = [result[-1].function for result in results if not isinstance(result, Unknown) and result]
    assert len(names) == len(vaddrs)
    assert [name for name in names if name and "@" in name] == []
    llvm = shutil.which("llvm-symbolizer")
    if llvm is not None:
        peer = subprocess.run(
            [llvm, f"--obj={LIBC}", "--no-inlines", "--output-style=GNU", *map(hex, vaddrs)],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()[::2]
        assert not [name for name in peer if "@" in name]

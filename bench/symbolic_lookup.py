"""Look up object-file addresses with Sentry's ``symbolic`` (the benchmark's Rust peer).

Reads one hex address per line on stdin (the object file's own vaddr, as ``llvm-symbolizer --obj``
takes) and prints, per address, the address line followed by one ``function`` / ``file:line`` pair
per frame, innermost first, then a blank line: the same shape as ``llvm-symbolizer`` output.

Two modes, timed separately by ``bench/run.py``:
- cold: ``--obj BIN`` opens the binary as a ``symbolic.Archive`` and builds a ``SymCache`` from its
  DWARF in memory (``--write-symcache PATH`` also saves it);
- warm: ``--obj BIN --symcache PATH`` memory-maps a SymCache written earlier.

A SymCache keys addresses relative to the image's load address (the first ``PT_LOAD``'s vaddr, 0 for
position-independent ELF), which the cache does not store, so both modes read that from ``BIN``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pycxxfilt
from elftools.elf.elffile import ELFFile
from symbolic.debuginfo import Archive
from symbolic.symcache import SymCache


def image_base(binary: Path) -> int:
    with binary.open("rb") as stream:
        for segment in ELFFile(stream).iter_segments():
            if segment["p_type"] == "PT_LOAD":
                return int(segment["p_vaddr"])
    return 0


def build_symcache(binary: Path) -> Any:
    archive = Archive.open(str(binary))
    for obj in archive.iter_objects():
        return obj.make_symcache()
    sys.exit(f"{binary}: symbolic found no object in the file")


def demangle(name: str) -> str:
    # Only Itanium and Rust v0 prefixes: a bare C name like "f" is also a valid Itanium *type*.
    if not name.startswith(("_Z", "_R")):
        return name
    try:
        return pycxxfilt.demangle(name) or name
    except ValueError:
        # A name LLVM's demangler rejects is printed as stored, as llvm-symbolizer does.
        return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--obj", type=Path, required=True, help="ELF binary the addresses belong to")
    parser.add_argument("--symcache", type=Path, help="warm mode: reuse this SymCache file")
    parser.add_argument("--write-symcache", type=Path, help="cold mode: also save the SymCache here")
    parser.add_argument("--no-demangle", action="store_true", help="print linkage names as stored")
    args = parser.parse_args()

    if args.symcache is not None:
        # symbolic annotates Archive but not SymCache.
        symcache = SymCache.open(str(args.symcache))  # type: ignore[no-untyped-call]
    else:
        symcache = build_symcache(args.obj)
        if args.write_symcache is not None:
            with args.write_symcache.open("wb") as out:
                symcache.dump_into(out)
    base = image_base(args.obj)

    lines: list[str] = []
    for text in sys.stdin:
        text = text.strip()
        if not text:
            continue
        vaddr = int(text, 16)
        lines.append(text)
        for location in symcache.lookup(vaddr - base):
            name = location.symbol if args.no_demangle else demangle(location.symbol)
            lines.append(name)
            lines.append(f"{location.full_path or '??'}:{location.line}")
        lines.append("")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

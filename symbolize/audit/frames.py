"""Frame pointers and unwind tables: will a stack walk get past each frame?

A sample of the binary's functions (every one up to ``SAMPLE_SIZE``, else
evenly spread over the address order) has its prologue decoded
(``prologue.py``). Function starts come from the symbols, else from the debug
info's function entries (merged ranges: functions laid out back to back
count as one). The C runtime's start-up functions (crt1.o, crti.o,
crtbegin.o: ``_start``, ``_init``, ``frame_dummy``, ...) are left out: they
are the toolchain's, not the program's, are built without frame pointers on
most systems, and sit only at the bottom of a stack. So are the cold parts
GCC splits off functions (``foo.cold``): they run inside ``foo``'s frame.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import BinaryIO

from symbolize.audit.prologue import PROLOGUE_BYTES, SUPPORTED_ARCHES, PrologueDecoder
from symbolize.audit.report import FramePointerReport
from symbolize.demangle import demangle
from symbolize.discovery.registry import FileLoader
from symbolize.formats.facts import AddressRange, covered_bytes
from symbolize.formats.types import ObjectFile, Segment, Symbol

SAMPLE_SIZE = 256
# How much of a function without a frame pointer is searched for calls.
MAX_BODY_BYTES = 4096
# Names listed in the report among the functions without a frame pointer.
SHOWN_WITHOUT = 8

C_RUNTIME_FUNCTIONS = frozenset(
    {
        "_start",
        "_init",
        "_fini",
        "deregister_tm_clones",
        "register_tm_clones",
        "__do_global_dtors_aux",
        "frame_dummy",
        "__libc_csu_init",
        "__libc_csu_fini",
        "_dl_relocate_static_pie",
        "call_weak_fn",
    }
)
# The crates of the Rust sysroot: std and what it is built from and with. Prebuilt, with frame
# pointers since Rust 1.79 (rust-lang/rust#122646), whatever the program's flags.
RUST_SYSROOT_CRATES = frozenset(
    {
        "std", "core", "alloc", "proc_macro", "test", "panic_abort", "panic_unwind", "unwind",
        "compiler_builtins", "std_detect", "rustc_demangle", "addr2line", "gimli", "object",
        "miniz_oxide", "adler", "adler2", "hashbrown", "memchr", "cfg_if", "libc", "__rustc",
    }
)  # fmt: skip
# Rust's legacy mangling ends in a 17h<16 hex digits>E hash; v0 starts with _R.
RUST_SYMBOL = re.compile(r"^_ZN.*17h[0-9a-f]{16}E$|^_R")
_FIRST_CRATE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)::")
_PRIMITIVE_IMPL = re.compile(r"^<(&(mut )?)?(\[|\*|(str|char|bool|[iuf](8|16|32|64|128|size))>)")
UNWIND_SECTIONS = (".eh_frame", ".eh_frame_hdr", ".debug_frame", ".pdata", "__unwind_info", "__eh_frame")


def audit_frame_pointers(
    loader: FileLoader,
    binary: ObjectFile,
    unwind: tuple[str, ...],
    code: Sequence[AddressRange],
    symbols: Sequence[Symbol],
    debug_functions: Sequence[AddressRange],
) -> FramePointerReport:
    """Prologues of a sample of ``binary``'s functions decoded; ``unwind`` names its unwind tables."""
    if binary.arch not in SUPPORTED_ARCHES:
        return FramePointerReport(0, 0, (), unwind, f"no prologue decoder for {binary.arch}")
    starts = _function_starts(code, symbols, debug_functions)
    if not starts:
        return FramePointerReport(0, 0, (), unwind, "no function starts known (no symbols, no debug info)")
    decoder = PrologueDecoder(binary.arch)
    segments = binary.segments()
    # A universal Mach-O's segments are placed relative to their slice.
    base = binary.slice_offset
    if base:
        segments = [segment._replace(file_offset=segment.file_offset + base) for segment in segments]
    own = [start for start in starts if not is_rust_toolchain_function(start[1])]
    with loader.byte_stream(binary.path) as stream:
        decoded, with_frame_pointer, leaves, without = _decode(stream, segments, decoder, _spread(starts))
        # The prebuilt Rust std keeps frame pointers whatever the program asks for: in a small
        # program it can hold most functions, so the program's own are sampled apart.
        own_sample = _spread(own) if len(own) < len(starts) else []
        own_decoded, own_with, own_leaves, _own_without = _decode(stream, segments, decoder, own_sample)
    note = f"{SAMPLE_SIZE} of {len(starts)} functions sampled" if len(starts) > SAMPLE_SIZE else ""
    return FramePointerReport(
        decoded, with_frame_pointer, tuple(without), unwind, note, leaves, own_decoded, own_with, own_leaves
    )


def _spread(starts: list[tuple[int, str, int]]) -> list[tuple[int, str, int]]:
    """Every start up to SAMPLE_SIZE, else SAMPLE_SIZE evenly spread over the address order."""
    if len(starts) <= SAMPLE_SIZE:
        return starts
    return [starts[i * len(starts) // SAMPLE_SIZE] for i in range(SAMPLE_SIZE)]


def _decode(
    stream: BinaryIO, segments: Sequence[Segment], decoder: PrologueDecoder, sample: Sequence[tuple[int, str, int]]
) -> tuple[int, int, int, list[str]]:
    """(decoded, with a frame pointer, leaves without one, names of the first few without one)."""
    with_frame_pointer = leaves = decoded = 0
    without: list[str] = []
    for vaddr, name, size in sample:
        code_bytes = _read_at(stream, segments, vaddr, PROLOGUE_BYTES)
        if not code_bytes:
            continue
        decoded += 1
        if decoder.decode(name, vaddr, code_bytes).sets_frame_pointer:
            with_frame_pointer += 1
            continue
        body = _read_at(stream, segments, vaddr, min(size, MAX_BODY_BYTES))
        if not decoder.calls_other_functions(vaddr, body):
            leaves += 1
        if len(without) < SHOWN_WITHOUT:
            without.append(name)
    return decoded, with_frame_pointer, leaves, without


def is_rust_toolchain_function(name: str) -> bool:
    """A function of the prebuilt Rust standard library: the first crate its demangled path names
    is one of ``RUST_SYSROOT_CRATES`` (``<u8 as core::fmt::Display>::fmt``: core), or it is an
    inherent method of a primitive type (``<str>::trim_start_matches``: core's).

    Generic functions of those crates instantiated by the program are compiled with the
    program's flags, but their names cannot tell them apart; they stay out of the program's
    own sample, which errs towards a sample of functions the program surely built.
    """
    if not RUST_SYMBOL.match(name):
        return False
    path = demangle(name, "full")
    if _PRIMITIVE_IMPL.match(path):
        return True
    crate = _FIRST_CRATE.search(path)
    return crate is not None and crate.group(1) in RUST_SYSROOT_CRATES


def _function_starts(
    code: Sequence[AddressRange], symbols: Sequence[Symbol], debug_functions: Sequence[AddressRange]
) -> list[tuple[int, str, int]]:
    """(vaddr, name, size) of each function to consider, by address."""
    starts: dict[int, tuple[str, int]] = {}
    for symbol in symbols:
        if symbol.name in C_RUNTIME_FUNCTIONS or _is_split_part(symbol.name):
            continue
        if not covered_bytes(((symbol.vaddr, symbol.vaddr + 1),), code):
            continue
        starts.setdefault(symbol.vaddr, (symbol.name, symbol.size or MAX_BODY_BYTES))
    if not starts:
        for low, high in debug_functions:
            if covered_bytes(((low, low + 1),), code):
                starts.setdefault(low, (f"function at {low:#x}", high - low))
    return [(vaddr, name, size) for vaddr, (name, size) in sorted(starts.items())]


def _is_split_part(name: str) -> bool:
    """A GCC hot/cold split's cold part (``foo.cold``, ``foo.cold.3``) runs in its function's frame."""
    return name.endswith(".cold") or ".cold." in name


def _read_at(stream: BinaryIO, segments: Sequence[Segment], vaddr: int, size: int) -> bytes:
    """Up to ``size`` of the bytes loaded at ``vaddr``, from the segment holding them.

    b"" when no segment holds it or the segment points outside the file (a hostile header).
    """
    file_size = os.fstat(stream.fileno()).st_size
    for segment in segments:
        if segment.vaddr <= vaddr < segment.vaddr + segment.filesz:
            file_offset = segment.file_offset + vaddr - segment.vaddr
            if not 0 <= file_offset < file_size:
                return b""
            available = min(segment.vaddr + segment.filesz - vaddr, file_size - file_offset)
            stream.seek(file_offset)
            return stream.read(max(0, min(available, size)))
    return b""

"""Does a function set up a frame pointer? Its prologue, decoded with capstone, says.

A frame-pointer walk (what gperftools' heap profiler, perf without DWARF
unwinding and most in-process samplers do) follows the saved frame pointer
from frame to frame; a function that does not save it and point it at its
frame hides its caller. The shapes recognised, before the first branch:

- x86-64 (System V ABI, 3.3.2 "The Stack Frame"): ``push rbp`` then
  ``mov rbp, rsp``, optionally after ``endbr64`` (CET) and pushes of other
  registers; or ``enter``. i386 the same with ``ebp``/``esp``.
- arm64 (AAPCS64, 6.4.6 "The Frame Pointer"): ``stp x29, x30, [sp, ...]``
  (pre-indexed or after ``sub sp, sp, #N``) then ``mov x29, sp`` or
  ``add x29, sp, #N``, optionally after ``bti``/``paciasp``/``pacibsp``.

A conditional branch does not end the search: shrink-wrapped functions (GCC
and LLVM both do it) test for an early return before setting up their frame.
A call or an unconditional jump does. A function without a frame pointer is
also asked whether it calls anything (``calls_other_functions``): a leaf
without one (GCC never gives a frameless leaf a frame, whatever the flags)
costs a frame-pointer walk only its caller, not the rest of the stack.

capstone is the disassembler; only the mnemonic and operand text of the first
few instructions are looked at.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import capstone

from symbolize.formats.errors import UnsupportedFormatError

# How much of a function is decoded: prologues are a few instructions.
PROLOGUE_BYTES = 48
PROLOGUE_INSTRUCTIONS = 12

_X86_STOPS = frozenset({"jmp", "call", "ret", "int3", "ud2", "hlt", "syscall"})
_X86_CALLS = frozenset({"call"})
_ARM64_HINTS = frozenset({"bti", "paciasp", "pacibsp", "hint", "nop"})
_ARM64_STOPS = frozenset({"b", "bl", "br", "blr", "ret", "brk", "udf", "braa", "blraa", "retaa", "retab"})
_ARM64_CALLS = frozenset({"bl", "blr", "blraa", "blrab"})

SUPPORTED_ARCHES = ("x86_64", "i386", "aarch64", "arm64")


class Prologue(NamedTuple):
    """What the first instructions of one function do."""

    vaddr: int
    name: str
    sets_frame_pointer: bool
    first_instructions: tuple[str, ...]


class PrologueDecoder:
    """Decodes prologues for one architecture (``SUPPORTED_ARCHES``)."""

    def __init__(self, arch: str) -> None:
        if arch == "x86_64":
            self._engine = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
            self._check = _x86_64_sets_frame_pointer
            self._calls = _X86_CALLS
        elif arch == "i386":
            self._engine = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_32)
            self._check = _i386_sets_frame_pointer
            self._calls = _X86_CALLS
        elif arch in ("aarch64", "arm64"):
            self._engine = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
            self._check = _arm64_sets_frame_pointer
            self._calls = _ARM64_CALLS
        else:
            raise UnsupportedFormatError(f"no prologue decoder for {arch}")
        self._engine.skipdata = False

    def decode(self, name: str, vaddr: int, code: bytes) -> Prologue:
        """The prologue of the function ``name`` whose first bytes (at ``vaddr``) are ``code``."""
        instructions = [
            (mnemonic, op_str.replace(" ", ""))
            for _address, _size, mnemonic, op_str in self._engine.disasm_lite(code[:PROLOGUE_BYTES], vaddr)
        ][:PROLOGUE_INSTRUCTIONS]
        shown = tuple(f"{mnemonic} {operands}".strip() for mnemonic, operands in instructions[:4])
        return Prologue(vaddr, name, self._check(instructions), shown)

    def calls_other_functions(self, vaddr: int, code: bytes) -> bool:
        """Whether the function whose whole body is ``code`` holds a call instruction."""
        return any(mnemonic in self._calls for _a, _s, mnemonic, _o in self._engine.disasm_lite(code, vaddr))


def _x86_64_sets_frame_pointer(instructions: Iterable[tuple[str, str]]) -> bool:
    return _x86_sets_frame_pointer(instructions, "rbp", "rsp")


def _i386_sets_frame_pointer(instructions: Iterable[tuple[str, str]]) -> bool:
    return _x86_sets_frame_pointer(instructions, "ebp", "esp")


def _x86_sets_frame_pointer(instructions: Iterable[tuple[str, str]], frame: str, stack: str) -> bool:
    pushed = False
    for mnemonic, operands in instructions:
        if mnemonic == "enter":
            return True
        if mnemonic == "push" and operands == frame:
            pushed = True
        elif mnemonic == "mov" and operands == f"{frame},{stack}":
            return pushed
        elif mnemonic in _X86_STOPS:
            return False
    return False


def _arm64_sets_frame_pointer(instructions: Iterable[tuple[str, str]]) -> bool:
    saved_pair = False
    for mnemonic, operands in instructions:
        if mnemonic in _ARM64_HINTS:
            continue
        if mnemonic == "stp" and operands.startswith("x29,x30,[sp"):
            saved_pair = True
        elif (mnemonic == "mov" and operands == "x29,sp") or (mnemonic == "add" and operands.startswith("x29,sp,")):
            return saved_pair
        elif mnemonic in _ARM64_STOPS:
            return False
    return False

"""Every range of every inline site of the fixture PDBs, checked against the machine code.

The rule, since llvm-symbolizer is not always an oracle here (14 reads an inlined frame's line one
row late; 14 and 22 both crash on cross-module inlinee IDs; where llvm 22 answers, on winsplit.exe
in both encodings, it is checked too and agrees at all 125 instructions): a range an
``S_INLINESITE``'s binary annotations give is right only if the disassembly agrees with it. So,
for each procedure,
disassembled from its start to its end with capstone (x86-64, x86 or AArch64 by the PDB's
machine):

- every range ``[low, high)`` starts at an instruction and ends at one (or at the procedure's end),
  inside the procedure;
- every range of a nested site lies inside the ranges of the site around it (an inlined call
  happens inside the inlined body that makes it);
- the compiled decoder (native/src/pdb_module.rs) finds the same inline chains at every
  instruction as the Python reader, and the same cut points, so the check holds on both paths
  (with ``SYMBOLIZE_PURE_PYTHON=1`` both sides are the Python reader).

The PDBs: every fixture PDB (clang + lld-link), among them ``winsplit.pdb``, whose sites cover
several ranges each, nested; and ``winsplit.pdb`` with every site's annotations re-encoded as MSVC
writes a split site (``tests/pdb_rewrite.py``: ``ChangeCodeLengthAndCodeOffset`` for every range
after the first; no tool here writes that opcode, LLVM's encoder never does, so these are
hand-made bytes from the real file). Reading the offset past each such range, as the decoder
did, puts later ranges mid-instruction or past the procedure's end (``run_main``'s ranges up to
0x1E0 in a 0x1CE-byte procedure). llvm-pdbutil 22 prints the re-encoded annotations with the
offsets read here (``code 0x2A (+0x0) code end 0xBA (+0x90)``).

Cross-module inlinee IDs (an LTCG build's; hand-made the same way, ``cross_module_inlinee``):
the frames of ``winsplit.pdb`` whose ``Table::at`` sites name their inlinee through
``DEBUG_S_CROSSSCOPEIMPORTS``/``EXPORTS`` are the real file's, names included (llvm-symbolizer
22 crashes in ``NativeInlineSiteSymbol::getName`` on them).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import capstone
import pytest

from symbolize.formats.pdb import PdbFile
from symbolize.formats.pdb.inline import InlineSite
from symbolize.formats.pdb.module_stream import PythonModule, sites_of
from symbolize.formats.pe.file import PeFile
from tests.fixtures_data import WINDOWS_BIN
from tests.pdb_rewrite import (
    DEBUG_S_CROSSSCOPEEXPORTS,
    DEBUG_S_CROSSSCOPEIMPORTS,
    cross_module_inlinee,
    msvc_split_sites,
    rewrite_module,
)

BIN = WINDOWS_BIN
FIXTURE_PDBS = sorted(BIN.glob("*.pdb"))
LLVM_SYMBOLIZER_22 = Path("/usr/lib/llvm-22/bin/llvm-symbolizer")
PE_MACHINES = {
    0x8664: (capstone.CS_ARCH_X86, capstone.CS_MODE_64),
    0x14C: (capstone.CS_ARCH_X86, capstone.CS_MODE_32),
    0xAA64: (capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM),
}
# The Table::at sites of winsplit.pdb's first module name IPI item 0x1007 (llvm-pdbutil dump --ids).
_AT_ITEM = 0x1007


def _image_of(pdb_path: Path) -> Path:
    return next(path for path in pdb_path.parent.glob(f"{pdb_path.stem}.*") if path.suffix in (".exe", ".dll"))


@cache
def _pdb_bytes(variant: str) -> bytes:
    real = (BIN / "winsplit.pdb").read_bytes()
    if variant == "msvc-split":
        return msvc_split_sites(real)
    if variant == "cross-module":
        return cross_module_inlinee(real, importer=0, exporter=1, inlinee=_AT_ITEM, local_id=0x1042)[0]
    return (BIN / variant).read_bytes()


def _opened(variant: str) -> tuple[PdbFile, PeFile]:
    pdb_path = BIN / (variant if variant.endswith(".pdb") else "winsplit.pdb")
    image = PeFile(_image_of(pdb_path))
    pdb = PdbFile(pdb_path, data=_pdb_bytes(variant))
    pdb.bind_image(image)
    return pdb, image


@cache
def _code(image_path: Path) -> list[tuple[int, bytes]]:
    image = PeFile(image_path)
    data = image_path.read_bytes()
    return [
        (segment.vaddr, data[segment.file_offset : segment.file_offset + min(segment.filesz, segment.memsz)])
        for segment in image.segments()
        if segment.executable
    ]


def _instruction_starts(image_path: Path, machine: int, low: int, high: int) -> set[int]:
    """The instructions of [low, high), decoded from ``low`` on (a linear sweep)."""
    for vaddr, code in _code(image_path):
        if vaddr <= low and high <= vaddr + len(code):
            disassembler = capstone.Cs(*PE_MACHINES[machine])
            instructions = disassembler.disasm_lite(code[low - vaddr : high - vaddr], low)
            return {address for address, _size, _mnemonic, _operands in instructions}
    raise AssertionError(f"procedure [{low:#x}, {high:#x}) is in no executable section of {image_path.name}")


Ranges = list[tuple[int, int]]


def _tree(sites: list[InlineSite], parent: Ranges | None) -> Iterator[tuple[InlineSite, Ranges | None]]:
    for site in sites:
        yield site, parent
        yield from _tree(site.children, [(row.low, row.high) for row in site.rows])


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


VARIANTS = [path.name for path in FIXTURE_PDBS] + ["msvc-split", "cross-module"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_inline_ranges_lie_on_instructions_and_inside_their_parents(variant: str) -> None:
    pdb, image = _opened(variant)
    image_path = image.path
    problems: list[str] = []
    ranges = split_sites = 0
    for module in pdb.dbi.modules:
        if module.stream == 0xFFFF:
            continue
        reference = pdb._decode_module(module, reference=True)
        assert isinstance(reference, PythonModule)
        decoded = reference.decoded
        starts_in_module: list[int] = []
        for position, procedure in enumerate(decoded.procedures):
            starts = _instruction_starts(image_path, pdb.dbi.machine, procedure.low, procedure.high)
            starts_in_module += sorted(starts)
            boundaries = starts | {procedure.high}
            for site, parent in _tree(sites_of(decoded, position), None):
                split_sites += len(_merged([(row.low, row.high) for row in site.rows])) > 1
                for row in site.rows:
                    ranges += 1
                    where = f"{procedure.name} site {site.inlinee:#x} [{row.low:#x}, {row.high:#x})"
                    if not procedure.low <= row.low < row.high <= procedure.high:
                        problems.append(f"{where} outside [{procedure.low:#x}, {procedure.high:#x})")
                    elif row.low not in boundaries or row.high not in boundaries:
                        problems.append(f"{where} does not start and end at instructions")
                    inside = parent is None or any(low <= row.low and row.high <= high for low, high in _merged(parent))
                    if not inside:
                        problems.append(f"{where} outside its parent's ranges {[(hex(a), hex(b)) for a, b in parent]}")
        compiled = pdb._decode_module(module)
        assert sorted(set(compiled.cut_points())) == sorted(set(reference.cut_points())), module.name
        located = [(p, line, list(inlined)) for p, line, inlined in compiled.locate_many(starts_in_module)]
        expected = [(p, line, list(inlined)) for p, line, inlined in reference.locate_many(starts_in_module)]
        assert located == expected, module.name
    assert not problems, "\n".join(problems)
    assert ranges > 0
    if "winsplit" in variant or variant in ("msvc-split", "cross-module"):
        assert split_sites >= 2  # the fixture's point: sites over several ranges were checked


def _frames_at_every_instruction(pdb: PdbFile, image_path: Path) -> dict[int, tuple[object, ...]]:
    found = {}
    decoded = pdb._decode_module(pdb.dbi.modules[0], reference=True)
    assert isinstance(decoded, PythonModule)
    for procedure in decoded.decoded.procedures:
        for vaddr in sorted(_instruction_starts(image_path, pdb.dbi.machine, procedure.low, procedure.high)):
            found[vaddr] = tuple(pdb.frames_at(vaddr))
    return found


def test_msvc_split_sites_answer_what_the_real_file_answers() -> None:
    """The same rows in MSVC's encoding give the same frames at every instruction, lines included:
    the tail-call ``jmp`` at the end of the inlined ``run_main`` keeps that frame, the cold
    ``call out_of_range`` keeps its ``Table::at`` < ``pick`` < ``run_main`` chain (on main both
    lost every inlined frame)."""
    real, image = _opened("winsplit.pdb")
    msvc, _image = _opened("msvc-split")
    expected = _frames_at_every_instruction(real, image.path)
    assert _frames_at_every_instruction(msvc, image.path) == expected
    assert sum(len(frames) >= 4 for frames in expected.values()) > 0
    assert msvc.answers(0) == real.answers(0)


def test_cross_module_inlinees_are_named_as_the_real_file_names_them() -> None:
    real, image = _opened("winsplit.pdb")
    cross, _image = _opened("cross-module")
    expected = _frames_at_every_instruction(real, image.path)
    found = _frames_at_every_instruction(cross, image.path)
    assert found == expected
    names = {frame.function for frames in expected.values() for frame in frames[:-1]}
    assert any(name is not None and name.endswith("::at") for name in names)  # the cross-module sites were reached
    assert cross.answers(0) == real.answers(0)  # the index path names them too


def _llvm_inline_chains(image_path: Path, vaddrs: list[int]) -> list[tuple[tuple[str, int], ...]]:
    out = subprocess.run(
        [str(LLVM_SYMBOLIZER_22), f"--obj={image_path}", "--inlines", "--no-demangle", *(hex(v) for v in vaddrs)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    chains = []
    for block in out.strip("\n").split("\n\n"):
        lines = block.splitlines()
        chains.append(tuple((lines[i], int(lines[i + 1].rsplit(":", 2)[1])) for i in range(0, len(lines), 2)))
    return chains


@pytest.mark.skipif(not LLVM_SYMBOLIZER_22.exists(), reason="llvm-symbolizer 22 is not installed")
@pytest.mark.parametrize("variant", ["winsplit.pdb", "msvc-split"])
def test_inline_chains_match_llvm_symbolizer_22(variant: str, tmp_path: Path) -> None:
    """llvm-symbolizer 22 reads these ranges as we do (its ``NativeFunctionSymbol::findInlineFramesByVA``
    and ``NativeInlineSiteSymbol::getLineOffset``), on clang's encoding and on MSVC's: at every
    instruction of winsplit.exe (125) each frame's function and line are llvm's."""
    pdb, image = _opened(variant)
    image_path = tmp_path / image.path.name
    shutil.copy(image.path, image_path)
    (tmp_path / "winsplit.pdb").write_bytes(_pdb_bytes(variant))
    frames = _frames_at_every_instruction(pdb, image.path)
    vaddrs = sorted(frames)
    ours = [tuple((frame.function or "??", frame.line) for frame in frames[vaddr]) for vaddr in vaddrs]
    assert ours == _llvm_inline_chains(image_path, vaddrs)
    assert any(len(chain) >= 4 for chain in ours)


def _broken_cross_scope(kind: int, edit: Callable[[bytes], bytes]) -> bytes:
    """The cross-module PDB with its import (module 0) or export (module 1) subsection edited."""
    module = 0 if kind == DEBUG_S_CROSSSCOPEIMPORTS else 1
    return rewrite_module(_pdb_bytes("cross-module"), module, subsection=lambda k, d: edit(d) if k == kind else d)


_IMPORTS, _EXPORTS = DEBUG_S_CROSSSCOPEIMPORTS, DEBUG_S_CROSSSCOPEEXPORTS
_BROKEN_CROSS_SCOPES: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "imports cut short": (_IMPORTS, lambda data: data[:4] + struct.pack("<I", 1000)),
    "imports naming no module": (_IMPORTS, lambda data: struct.pack("<I", 1) + data[4:]),
    "imports naming past /names": (_IMPORTS, lambda data: b"\xff" * 4 + data[4:]),
    "local ID not exported": (_EXPORTS, lambda data: struct.pack("<II", 7, _AT_ITEM)),
    "exported as another cross-module ID": (_EXPORTS, lambda data: data[:4] + struct.pack("<I", 0x80000000)),
    "exports cut mid-pair": (_EXPORTS, lambda data: data[:6]),
}


@pytest.mark.parametrize("case", sorted(_BROKEN_CROSS_SCOPES))
def test_unresolvable_cross_module_ids_leave_the_frame_unnamed(case: str) -> None:
    """Hostile cross-scope subsections: the inlined frame stays with its file and line, unnamed;
    every other frame is the real file's."""
    real, image = _opened("winsplit.pdb")
    broken = PdbFile(BIN / "winsplit.pdb", data=_broken_cross_scope(*_BROKEN_CROSS_SCOPES[case]))
    broken.bind_image(image)
    expected = _frames_at_every_instruction(real, image.path)
    found = _frames_at_every_instruction(broken, image.path)
    unnamed = 0
    for vaddr, frames in expected.items():
        at = [index for index, frame in enumerate(frames) if (frame.function or "").endswith("::at")]
        if at:
            unnamed += 1
            frames = tuple(frame._replace(function=None) if i in at else frame for i, frame in enumerate(frames))
        assert found[vaddr] == frames, hex(vaddr)
    assert unnamed > 0

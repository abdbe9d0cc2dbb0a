"""Fuzz target: a mutated PDB read against its own image, lazily and whole.

``python fuzz/fuzz_pdb.py [libFuzzer options] [corpus dir]``: each input is a PDB (seeds
``fuzz/seeds/pdb/``: the fixture PDBs). It is paired with the fixture image whose CodeView GUID it
carries, or, when the mutation hit the GUID, with the image whose PDB is nearest in size; then:

- open: ``PdbFile`` over the bytes (container, info, DBI, section headers, /names);
- bind: ``bind_image`` to the image (its ImageBase), as discovery does;
- lookups: ``frames_at`` at the addresses llvm-symbolizer names in that image
  (``fixtures/expected/windows/``), through the lazy per-procedure path cold lookups take;
- summary: ``debug_info``, ``lines_missing_reason``, ``symbols``, and every region's runs
  flattened as the persistent index builds them (``flatten_answers``), the eager path.

The contract (``fuzz/harness.py``): an answer or a ``SymbolizeError``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.harness import REPO, Target, main

ADDRESS_COUNT = 48
EXPECTED = REPO / "fixtures" / "expected" / "windows"


class Pairing(NamedTuple):
    image_path: Path
    guid: bytes
    pdb_size: int
    vaddrs: list[int]


def pairings() -> list[Pairing]:
    """Each fixture image with a PDB: its GUID, its PDB's size, addresses its peer answers name."""
    from symbolize.formats.pe.file import PeFile

    found = []
    for expected in sorted(EXPECTED.glob("*.json")):
        answers = json.loads(expected.read_text())
        if not str(answers.get("debug_file", "")).endswith(".pdb"):
            continue
        image = PeFile(REPO / "fixtures" / answers["binary"])
        assert image.codeview is not None
        ordered = sorted({int(entry["address"], 16) for entry in answers["addresses"]})
        step = max(1, len(ordered) // ADDRESS_COUNT)
        vaddrs = [0, image.image_base, *ordered[::step][:ADDRESS_COUNT], (1 << 64) - 1]
        pdb_size = (REPO / "fixtures" / answers["debug_file"]).stat().st_size
        found.append(Pairing(image.path, image.codeview.guid, pdb_size, vaddrs))
    return found


def make_target() -> Target:
    from symbolize.formats.answers import flatten_answers
    from symbolize.formats.errors import MalformedInputError
    from symbolize.formats.pdb import PdbFile
    from symbolize.formats.pe.file import PeFile

    paired = pairings()
    images = {pairing.image_path: PeFile(pairing.image_path) for pairing in paired}

    def one_input(data: bytes) -> object:
        pdb = PdbFile(Path("fuzz-input.pdb"), data=data)
        pairing = next((p for p in paired if p.guid == pdb.info.guid), None)
        if pairing is None:
            pairing = min(paired, key=lambda p: abs(p.pdb_size - len(data)))
        pdb.bind_image(images[pairing.image_path])
        frames = []
        for vaddr in pairing.vaddrs:
            try:
                frames.append(pdb.frames_at(vaddr))
            except MalformedInputError:  # a broken module: the summary below still runs
                frames.append([])
        pdb.debug_info()
        pdb.lines_missing_reason()
        pdb.symbols()
        return frames, flatten_answers(pdb.answer_regions(), pdb.answers)

    return one_input


if __name__ == "__main__":
    main("pdb", make_target, sys.argv)

"""Fuzz target: a mutated symbol-store ``_`` cabinet through ``extract_single``, both decoders.

``python fuzz/fuzz_cab.py [libFuzzer options] [corpus dir]``: each input is a cabinet (seeds
``fuzz/seeds/cab/``: the fixture PDBs' MSZIP and LZX ``.pd_`` files and the real cabinets of
tests/data/cab/). It is extracted by the Python reference and, where the kernels are built, by the
compiled path (the Rust ``cab`` crate), as it is and with its blocks' checksums zeroed (so that
mutations reach the decoders); the contract: bytes of the file's declared size or a
``SymbolizeError`` naming the input, and where both paths give bytes, the same bytes (a
difference is a finding). The compiled path may decode what the reference refuses (lzxd is more
lenient with corrupt streams); that is not a finding.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.harness import Target, main

CAP = 1 << 24


def without_checksums(data: bytes) -> bytes:
    """`data` with every data block's checksum zeroed (not checked), so that mutations of the
    compressed bytes reach the decoders instead of stopping at the checksum; best effort."""
    import struct

    from symbolize.formats.cab.structure import DATA, FOLDER, HEADER

    out = bytearray(data)
    if len(out) < HEADER.size + FOLDER.size:
        return data
    flags = struct.unpack_from("<H", out, 30)[0]
    position = HEADER.size
    data_reserve = 0
    if flags & 4:
        if position + 4 > len(out):
            return data
        header_reserve, _folder_reserve, data_reserve = struct.unpack_from("<HBB", out, position)
        position += 4 + header_reserve
    if position + FOLDER.size > len(out):
        return data
    position, count, _compress = FOLDER.unpack_from(out, position)
    for _ in range(count):
        if position + DATA.size > len(out):
            break
        struct.pack_into("<I", out, position, 0)
        position += DATA.size + data_reserve + struct.unpack_from("<H", out, position + 4)[0]
    return bytes(out)


def make_target() -> Target:
    import symbolize.formats.cab as cab
    from symbolize.formats.cab.structure import parse
    from symbolize.formats.errors import SymbolizeError
    from symbolize.formats.native import kernels
    from tests.kernel_twins import kernels_in

    def one_input(data: bytes) -> object:
        return [both_paths(data), both_paths(without_checksums(data))]

    def both_paths(data: bytes) -> object:
        outcomes: list[bytes | None] = []
        for module in ([kernels, None] if kernels is not None else [None]):
            try:
                with kernels_in(module, cab):
                    _name, contents = cab.extract_single(data, path="fuzz-input.pd_", max_bytes=CAP)
            except SymbolizeError as error:
                if "fuzz-input.pd_" not in str(error):
                    raise AssertionError(f"an error that does not name the input: {error}") from error
                outcomes.append(None)
                continue
            if len(contents) != parse(data, path="fuzz-input.pd_", max_bytes=CAP).size:
                raise AssertionError("the file decodes to another size than its entry declares")
            outcomes.append(contents)
        decoded = {outcome for outcome in outcomes if outcome is not None}
        if len(decoded) > 1:
            raise AssertionError("the compiled path and the reference decode the input to different bytes")
        return outcomes

    return one_input


if __name__ == "__main__":
    main("cab", make_target, sys.argv)

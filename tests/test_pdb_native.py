"""The compiled module-stream decoder (native/src/pdb_module.rs) against its Python reference.

For every module of every fixture PDB, and for module streams mutated byte by byte, truncated or
given sizes that do not fit: the same CodeViewError (message and offset), or the same files,
procedures, cut points and, at every cut point and beside it, the same located answer (procedure,
line row, inline chain). Skipped where the kernels are not built.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.native import kernels
from symbolize.formats.pdb import PdbFile, streams
from symbolize.formats.pdb.codeview import CodeViewError
from symbolize.formats.pdb.module_stream import CompiledModule, PythonModule
from symbolize.formats.pdb.streams import IPI_STREAM, TPI_STREAM, ModuleInfo, TypeRecords
from symbolize.formats.pe.file import PeFile
from tests.fixtures_data import WINDOWS_BIN
from tests.kernel_twins import kernels_in

pytestmark = pytest.mark.skipif(kernels is None, reason="the compiled kernels are not built")

BIN = WINDOWS_BIN
PDBS = sorted(BIN.glob("*.pdb"))


@cache
def _opened(name: str) -> PdbFile:
    image = PeFile((BIN / name).with_suffix(".exe" if (BIN / name).with_suffix(".exe").exists() else ".dll"))
    pdb = PdbFile(BIN / name)
    pdb.bind_image(image)
    return pdb


def _modules(pdb: PdbFile) -> list[tuple[ModuleInfo, bytes]]:
    return [(module, pdb._msf.stream(module.stream)) for module in pdb.dbi.modules if module.stream != 0xFFFF]


Outcome = tuple[object, ...]


def _outcome(decode: Callable[[], PythonModule | CompiledModule], probes: list[int] | None = None) -> Outcome:
    """What a decoder makes of a stream: its error, or what lookups read of it."""
    try:
        decoded = decode()
    except CodeViewError as error:
        return ("error", str(error), error.offset)
    cuts = sorted(decoded.cut_points())
    if probes is None:
        probes = sorted({point + delta for point in cuts for delta in (-1, 0, 1)})
    if isinstance(decoded, PythonModule):
        count = len(decoded.decoded.procedures)
    else:
        count = decoded._compiled.procedure_count()
    procedures = [decoded.procedure(position) for position in range(count)]
    located = [decoded.locate(vaddr) for vaddr in probes]
    normalized = [(position, line, list(inlined)) for position, line, inlined in located]
    assert [(p, line, list(i)) for p, line, i in decoded.locate_many(probes)] == normalized
    return ("decoded", decoded.files, procedures, cuts, normalized)


def _both(pdb: PdbFile, module: ModuleInfo, stream: bytes, probes: list[int] | None = None) -> tuple[Outcome, Outcome]:
    reference = _outcome(lambda: PythonModule(pdb._decode_module_stream(stream, module), module.number), probes)
    compiled = _outcome(lambda: pdb._compiled_module(stream, module), probes)
    return reference, compiled


@pytest.mark.parametrize("path", PDBS, ids=lambda path: path.name)
def test_every_fixture_module_decodes_alike(path: Path) -> None:
    pdb = _opened(path.name)
    modules = _modules(pdb)
    assert modules
    located = 0
    for module, stream in modules:
        reference, compiled = _both(pdb, module, stream)
        assert compiled == reference, module.name
        if reference[0] == "decoded":
            located += sum(1 for _position, _line, inlined in reference[4] if inlined)
    assert located > 0  # the fixtures hold inlined frames: the chains were compared, not only empties


def _mutants(stream: bytes, rng: random.Random, count: int) -> list[bytes]:
    mutants = []
    for _ in range(count):
        data = bytearray(stream)
        for _ in range(rng.randint(1, 8)):
            position = rng.randrange(len(data))
            flipped = data[position] ^ 1 << rng.randrange(8)
            data[position] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256), flipped))
        mutants.append(bytes(data))
    return mutants


@pytest.mark.parametrize("path", PDBS, ids=lambda path: path.name)
def test_mutated_module_streams_decode_alike(path: Path) -> None:
    """Byte mutations, truncations and sizes past the stream: the same error or the same answers."""
    pdb = _opened(path.name)
    rng = random.Random(f"pdb-native-{path.name}")
    errors = 0
    cases = 0
    for module, stream in _modules(pdb):
        reference = PythonModule(pdb._decode_module_stream(stream, module), module.number)
        reference_cuts = sorted(set(reference.cut_points()))
        probes = sorted(set(rng.sample(reference_cuts, min(len(reference_cuts), 60)))) if reference_cuts else [0]
        variants = [(module, data) for data in _mutants(stream, rng, 12)]
        variants += [(module, stream[: rng.randrange(len(stream))]) for _ in range(3)]
        variants += [
            (module._replace(symbols_size=3), stream),
            (module._replace(c13_size=module.c13_size + 8), stream),
            (module._replace(c11_size=1 << 31), stream),
            (module._replace(symbols_size=module.symbols_size - 8), stream),
        ]
        for variant, data in variants:
            reference, compiled = _both(pdb, variant, data, probes)
            assert compiled == reference, (module.name, variant)
            errors += reference[0] == "error"
            cases += 1
    assert 0 < errors < cases  # both outcomes were exercised


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_made_symbol_and_line_bytes_decode_alike(data: st.DataObject) -> None:
    """Records spliced into a fixture module stream's symbols and C13 part, whatever their bytes."""
    pdb = _opened("winapp.pdb")
    module, stream = data.draw(st.sampled_from([pair for pair in _modules(pdb) if pair[0].c13_size]))
    cut = data.draw(st.integers(4, len(stream)))
    insert = data.draw(st.binary(max_size=64))
    mutated = stream[:cut] + insert + stream[cut + len(insert) :]
    reference, compiled = _both(pdb, module, mutated[: len(stream)], probes=None)
    assert compiled == reference


def _reference_offsets(records: TypeRecords) -> list[int]:
    try:
        with kernels_in(None, streams):
            records._offsets = None
            return records._index()
    finally:
        records._offsets = None


@pytest.mark.parametrize("path", PDBS, ids=lambda path: path.name)
def test_type_and_public_records_scan_alike(path: Path) -> None:
    """TPI/IPI record offsets and the publics, whole and mutated, by the twins of native/src/pdb_records.rs."""
    pdb = _opened(path.name)
    rng = random.Random(f"pdb-records-{path.name}")
    for stream in (TPI_STREAM, IPI_STREAM):
        data = pdb._msf.stream(stream)
        variants = [data, *_mutants(data, rng, 20)] if data else []
        for variant in variants:
            try:
                records = TypeRecords(variant, path, "TPI")
            except MalformedInputError:
                continue  # a header that gives records past the stream: no records to scan
            reference = _reference_offsets(records)
            assert kernels is not None
            assert kernels.type_record_offsets(variant, records._records_start, records._records_end) == reference
    offsets = streams.parse_public_address_map(pdb._msf.stream(pdb.dbi.public_stream), path)
    symbols = pdb._msf.stream(pdb.dbi.symbol_record_stream)
    assert offsets
    cases = [(symbols, offsets), (symbols, [*offsets, len(symbols) - 3, 1 << 31, 0])]
    cases += [(mutated, offsets) for mutated in _mutants(symbols, rng, 20)]
    cases += [(symbols[: rng.randrange(len(symbols))], offsets) for _ in range(5)]
    for records, places in cases:
        assert streams.public_records(records, places) == list(streams.iter_public_records(records, places))

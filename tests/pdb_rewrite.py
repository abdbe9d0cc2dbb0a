"""Re-encodes parts of a real PDB the way MSVC writes them, for the shapes no tool here produces.

clang and lld-link (the only PDB writers on this machine) never write two things MSVC does:

- ``ChangeCodeLengthAndCodeOffset`` binary annotations: LLVM's encoder (MCCodeView's
  ``encodeInlineLineTable``) only writes ChangeCodeOffset, ChangeCodeOffsetAndLineOffset,
  ChangeLineOffset, ChangeFile and ChangeCodeLength; MSVC writes ChangeCodeLengthAndCodeOffset for
  the ranges of an inline site after a gap. :func:`msvc_annotations` writes a site's rows (as
  decoded from clang's encoding) in that form: the first row by ChangeCodeOffset and
  ChangeCodeLength, every later one by ChangeCodeLengthAndCodeOffset, whose delta counts from the
  start of the row before (cvinfo.h's ``BA_OP_ChangeCodeLengthAndCodeOffset``, as the ``pdb``
  crate and LLVM's ``NativeFunctionSymbol::findInlineFramesByVA`` read it).
- cross-module item IDs (MSVC with /GL and LTCG): an inlinee ID with the high bit set resolved
  through the module's ``DEBUG_S_CROSSSCOPEIMPORTS`` and the exporting module's
  ``DEBUG_S_CROSSSCOPEEXPORTS`` subsections (:func:`cross_module_inlinee`).

Everything else stays the real file's: :func:`rewrite_module` re-lays one module stream's symbol
records (and fixes the ``Parent``/``End``/``Next`` offsets of the scope records, the DBI module
record's sizes and the ``ibSym`` of the global ``S_PROCREF`` records that point into it), and the
MSF container is written again by ``tests/msf_builder.py``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

from symbolize.formats.pdb import codeview
from symbolize.formats.pdb.streams import DBI_STREAM, PDB_INFO_STREAM, parse_dbi_stream, parse_info_stream
from tests.msf_builder import build_msf, streams_of

_DBI_HEADER_SIZE = 64
_MODULE_INFO_SIZE = 64
_SYMBOL_BYTES_AT = 36  # SymByteSize within a DBI module record; C13ByteSize 8 bytes further
_C13_BYTES_AT = 44
# Records whose Parent (+0) and End (+4) fields, and for procedures and thunks Next (+8), are
# offsets into the module's symbols.
_SCOPE_KINDS = codeview.PROC_KINDS | codeview.INLINE_SITE_KINDS | {codeview.S_BLOCK32}
_WITH_NEXT = codeview.PROC_KINDS | {codeview.S_THUNK32}
_PROCREF_KINDS = (0x1125, 0x1127)  # S_PROCREF, S_LPROCREF
# cvinfo.h's DEBUG_S_SUBSECTION_TYPE values, spelled here so the builder does not depend on the reader.
DEBUG_S_CROSSSCOPEIMPORTS = 0xF7
DEBUG_S_CROSSSCOPEEXPORTS = 0xF8
_CROSS_MODULE_FIRST_ID = 0x80000000  # import entry 0, its ID 0 (cvinfo.h's CrossScopeId)

RecordEdit = Callable[[int, int, bytes], bytes]  # (old offset, kind, body) -> new body
SubsectionEdit = Callable[[int, bytes], bytes]  # (kind, data) -> new data


def compressed(value: int) -> bytes:
    """CVCompressData: 1, 2 or 4 big-endian bytes."""
    if value < 0x80:
        return bytes([value])
    if value < 0x4000:
        return bytes([0x80 | value >> 8, value & 0xFF])
    return bytes([0xC0 | value >> 24, value >> 16 & 0xFF, value >> 8 & 0xFF, value & 0xFF])


def _signed(value: int) -> int:
    return value << 1 if value >= 0 else (-value) << 1 | 1


def msvc_annotations(annotations: bytes, first_line: int, file_id: int) -> bytes:
    """The same rows as ``annotations`` (clang's encoding), written as MSVC writes a split site."""
    rows = codeview.annotation_rows(annotations, first_line, file_id)
    out = bytearray()
    code, line, file = 0, first_line, file_id
    for index, row in enumerate(rows):
        if row.file_id != file:
            out += compressed(codeview.BA_CHANGE_FILE) + compressed(row.file_id)
            file = row.file_id
        if row.line != line:
            out += compressed(codeview.BA_CHANGE_LINE_OFFSET) + compressed(_signed(row.line - line))
            line = row.line
        if index == 0:
            out += compressed(codeview.BA_CHANGE_CODE_OFFSET) + compressed(row.low)
            out += compressed(codeview.BA_CHANGE_CODE_LENGTH) + compressed(row.high - row.low)
            code = row.high
        else:
            out += compressed(codeview.BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET)
            out += compressed(row.high - row.low) + compressed(row.low - code)
            code = row.low
    return bytes(out)


def _module_record_offsets(dbi: bytes) -> list[int]:
    """The offset of each module record in the DBI stream (after the 64-byte header)."""
    (modules_size,) = struct.unpack_from("<i", dbi, 24)
    offsets = []
    position = _DBI_HEADER_SIZE
    while position + _MODULE_INFO_SIZE <= _DBI_HEADER_SIZE + modules_size:
        offsets.append(position)
        end = dbi.index(b"\0", position + _MODULE_INFO_SIZE) + 1
        end = dbi.index(b"\0", end) + 1
        position = (end + 3) & ~3
    return offsets


def rewrite_module(
    pdb: bytes,
    module_number: int,
    *,
    record: RecordEdit | None = None,
    subsection: SubsectionEdit | None = None,
    extra_subsections: tuple[tuple[int, bytes], ...] = (),
) -> bytes:
    """``pdb`` with module ``module_number``'s symbol bodies and C13 subsections edited, subsections
    appended, and every offset that points into the module's symbols kept pointing at its record."""
    streams: list[bytes | None] = list(streams_of(pdb))
    dbi_bytes = streams[DBI_STREAM] or b""
    dbi = parse_dbi_stream(dbi_bytes, Path("<rewrite>"))
    module = dbi.modules[module_number]
    stream = streams[module.stream] or b""
    symbols_end = module.symbols_size
    c13_start = symbols_end + module.c11_size
    c13_end = c13_start + module.c13_size

    symbols = bytearray(stream[:4])
    moved: dict[int, int] = {}
    placed: list[tuple[int, int]] = []  # (new offset, kind)
    position = 4
    while position < symbols_end:
        length, kind = struct.unpack_from("<HH", stream, position)
        body = stream[position + 4 : position + 2 + length]
        if record is not None:
            body = record(position, kind, body)
        body += bytes(-(4 + len(body)) % 4)
        moved[position] = len(symbols)
        placed.append((len(symbols), kind))
        symbols += struct.pack("<HH", len(body) + 2, kind) + body
        position += 2 + length
    moved[symbols_end] = len(symbols)
    for offset, kind in placed:
        if kind in _SCOPE_KINDS or kind == codeview.S_THUNK32:
            fields = (0, 4, 8) if kind in _WITH_NEXT else (0, 4)
            for field in fields:
                (value,) = struct.unpack_from("<I", symbols, offset + 4 + field)
                if value:
                    struct.pack_into("<I", symbols, offset + 4 + field, moved.get(value, value))

    c13 = bytearray()
    for kind, data, _offset in codeview.iter_subsections(stream, c13_start, c13_end):
        if subsection is not None:
            data = subsection(kind, data)
        c13 += struct.pack("<II", kind, len(data)) + data + bytes(-len(data) % 4)
    for kind, data in extra_subsections:
        c13 += struct.pack("<II", kind, len(data)) + data + bytes(-len(data) % 4)

    streams[module.stream] = bytes(symbols) + stream[symbols_end:c13_start] + bytes(c13) + stream[c13_end:]
    dbi_new = bytearray(dbi_bytes)
    record_at = _module_record_offsets(dbi_bytes)[module_number]
    struct.pack_into("<I", dbi_new, record_at + _SYMBOL_BYTES_AT, len(symbols))
    struct.pack_into("<I", dbi_new, record_at + _C13_BYTES_AT, len(c13))
    streams[DBI_STREAM] = bytes(dbi_new)

    globals_ = bytearray(streams[dbi.symbol_record_stream] or b"")
    position = 0
    while position + 4 <= len(globals_):
        length, kind = struct.unpack_from("<HH", globals_, position)
        if kind in _PROCREF_KINDS:
            _sum_name, ib_sym, imod = struct.unpack_from("<IIH", globals_, position + 4)
            if imod == module_number + 1:
                struct.pack_into("<I", globals_, position + 8, moved.get(ib_sym, ib_sym))
        position += 2 + length
    streams[dbi.symbol_record_stream] = bytes(globals_)
    return build_msf(streams, 4096)


def _hash_v1(text: bytes) -> int:
    """LLVM's ``hashStringV1`` (the /names hash of version 1 tables, lld-link's)."""
    result = 0
    whole = len(text) // 4 * 4
    for (word,) in struct.iter_unpack("<I", text[:whole]):
        result ^= word
    rest = text[whole:]
    if len(rest) >= 2:
        result ^= struct.unpack_from("<H", rest)[0]
        rest = rest[2:]
    if rest:
        result ^= rest[0]
    result |= 0x20202020
    result ^= result >> 11
    return (result ^ result >> 16) & 0xFFFFFFFF


def add_name(pdb: bytes, text: str) -> tuple[bytes, int]:
    """``pdb`` with ``text`` added to its /names table (strings, hash bucket, count), and its offset."""
    streams: list[bytes | None] = list(streams_of(pdb))
    index = parse_info_stream(streams[PDB_INFO_STREAM] or b"", Path("<rewrite>")).named_streams["/names"]
    names = streams[index] or b""
    signature, version, size = struct.unpack_from("<III", names, 0)
    strings = names[12 : 12 + size]
    (bucket_count,) = struct.unpack_from("<I", names, 12 + size)
    buckets = list(struct.unpack_from(f"<{bucket_count}I", names, 16 + size))
    (count,) = struct.unpack_from("<I", names, 16 + size + 4 * bucket_count)
    offset = len(strings)
    encoded = text.encode()
    slot = _hash_v1(encoded) % bucket_count
    while buckets[slot]:
        slot = (slot + 1) % bucket_count
    buckets[slot] = offset
    strings += encoded + b"\0"
    streams[index] = (
        struct.pack("<III", signature, version, len(strings))
        + strings
        + struct.pack(f"<I{bucket_count}II", bucket_count, *buckets, count + 1)
    )
    return build_msf(streams, 4096), offset


def msvc_split_sites(pdb: bytes) -> bytes:
    """``pdb`` with the annotations of every inline site of every module in MSVC's split form."""
    dbi = parse_dbi_stream(streams_of(pdb)[DBI_STREAM], Path("<rewrite>"))
    for module in dbi.modules:
        if module.stream == 0xFFFF:
            continue
        stream = streams_of(pdb)[module.stream]
        start = module.symbols_size + module.c11_size
        inlinee_lines: dict[int, tuple[int, int]] = {}
        for kind, data, offset in codeview.iter_subsections(stream, start, start + module.c13_size):
            if kind == codeview.DEBUG_S_INLINEELINES:
                inlinee_lines.update(codeview.parse_inlinee_lines(data, offset))

        def reencode(_offset: int, kind: int, body: bytes, lines: dict[int, tuple[int, int]] = inlinee_lines) -> bytes:
            if kind not in codeview.INLINE_SITE_KINDS:
                return body
            header = 12 + (4 if kind == codeview.S_INLINESITE2 else 0)
            (inlinee,) = struct.unpack_from("<I", body, 8)
            file_id, first_line = lines.get(inlinee, (0, 0))
            return body[:header] + msvc_annotations(body[header:], first_line, file_id)

        pdb = rewrite_module(pdb, module.number, record=reencode)
    return pdb


def cross_module_inlinee(pdb: bytes, importer: int, exporter: int, inlinee: int, local_id: int) -> tuple[bytes, int]:
    """``pdb`` with module ``importer``'s references to IPI item ``inlinee`` (its inline sites and
    its DEBUG_S_INLINEELINES entry) turned into a cross-module ID (import entry 0, index 0) naming
    ``local_id`` of module ``exporter``, which exports ``local_id`` as ``inlinee``; and that ID."""
    dbi = parse_dbi_stream(streams_of(pdb)[DBI_STREAM], Path("<rewrite>"))
    pdb, name_offset = add_name(pdb, dbi.modules[exporter].name)
    cross_id = _CROSS_MODULE_FIRST_ID

    def site(_offset: int, kind: int, body: bytes) -> bytes:
        if kind in codeview.INLINE_SITE_KINDS and struct.unpack_from("<I", body, 8)[0] == inlinee:
            return body[:8] + struct.pack("<I", cross_id) + body[12:]
        return body

    def lines(kind: int, data: bytes) -> bytes:
        if kind != codeview.DEBUG_S_INLINEELINES:
            return data
        (signature,) = struct.unpack_from("<I", data, 0)
        assert signature == 0, "entries with extra files: not written by clang"
        entries = bytearray(data)
        for position in range(4, len(data) - 11, 12):
            if struct.unpack_from("<I", data, position)[0] == inlinee:
                struct.pack_into("<I", entries, position, cross_id)
        return bytes(entries)

    imports = struct.pack("<III", name_offset, 1, local_id)
    pdb = rewrite_module(
        pdb, importer, record=site, subsection=lines,
        extra_subsections=((DEBUG_S_CROSSSCOPEIMPORTS, imports),),
    )  # fmt: skip
    exports = struct.pack("<II", local_id, inlinee)
    pdb = rewrite_module(pdb, exporter, extra_subsections=((DEBUG_S_CROSSSCOPEEXPORTS, exports),))
    return pdb, cross_id

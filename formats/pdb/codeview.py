"""CodeView inside a PDB module stream: symbol records, C13 line subsections, inline annotations.

From LLVM's "The Module Information Stream" and "CodeView Symbol Records" pages and the
CodeView headers they describe (cvinfo.h): a module stream is the C13 signature (4), the symbol
records (each ``u16 length, u16 kind``, 4-aligned; ``S_*PROC32*``, ``S_BLOCK32`` and
``S_INLINESITE`` name the offset of their closing record in ``End``), the C11 lines (not read:
no current toolchain writes them), then the C13 subsections (``u32 kind, u32 length``):
``DEBUG_S_LINES`` (a code range, then per file a block of ``(offset, line flags)`` rows and,
with ``CV_LINES_HAVE_COLUMNS``, ``(start, end)`` columns), ``DEBUG_S_FILECHKSMS`` (per file: its
``/names`` offset and checksum, found by the entry's own offset) and ``DEBUG_S_INLINEELINES``
(per inlinee: its file and first line), ``DEBUG_S_CROSSSCOPEIMPORTS`` (per module imported from:
its name's ``/names`` offset and the local IDs it imports) and ``DEBUG_S_CROSSSCOPEEXPORTS``
(``(local ID, global IPI index)`` pairs), which resolve the cross-module IDs an LTCG build writes
(high bit set; bits 20-30 an entry of the imports, bits 0-19 an index into its IDs; cvinfo.h's
``CrossScopeId``, the ``pdb`` crate's ``CrossModuleImports::resolve_import``).

``S_INLINESITE`` binary annotations are decoded by :func:`annotation_rows` (cvinfo.h's
``CV_BinaryAnnotationOpcode`` and ``CVCompressData``): every opcode is read, those that move
the code offset, the line or the file make rows, the column and range-kind ones are read
and left aside (llvm-symbolizer reports no columns for inlined frames either).
"""

import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

S_END = 0x0006
S_THUNK32 = 0x1102
S_BLOCK32 = 0x1103
S_TRAMPOLINE = 0x112C
S_LPROC32 = 0x110F
S_GPROC32 = 0x1110
S_LPROC32_ID = 0x1146
S_GPROC32_ID = 0x1147
S_LPROC32_DPC = 0x1155
S_LPROC32_DPC_ID = 0x1156
S_INLINESITE = 0x114D
S_INLINESITE_END = 0x114E
S_PROC_ID_END = 0x114F
S_INLINESITE2 = 0x115D
PROC_END_KINDS = frozenset({S_END, S_PROC_ID_END})
INLINE_SITE_END_KINDS = frozenset({S_INLINESITE_END})
PROC_KINDS = frozenset({S_LPROC32, S_GPROC32, S_LPROC32_ID, S_GPROC32_ID, S_LPROC32_DPC, S_LPROC32_DPC_ID})
INLINE_SITE_KINDS = frozenset({S_INLINESITE, S_INLINESITE2})

DEBUG_S_LINES = 0xF2
DEBUG_S_FILECHKSMS = 0xF4
DEBUG_S_INLINEELINES = 0xF6
DEBUG_S_CROSSSCOPEIMPORTS = 0xF7
DEBUG_S_CROSSSCOPEEXPORTS = 0xF8
_DEBUG_S_IGNORE = 0x80000000
CV_LINES_HAVE_COLUMNS = 0x0001
C13_SIGNATURE = 4

_PROC = struct.Struct("<IIIIIIIIHB")  # Parent, End, Next, CodeSize, DbgStart, DbgEnd, Type, CodeOffset, Segment, Flags
_THUNK = struct.Struct("<IIIIHHB")  # Parent, End, Next, Offset, Segment, Length, Ordinal
_TRAMPOLINE = struct.Struct("<HHIIHH")  # Type, Size, ThunkOffset, TargetOffset, ThunkSection, TargetSection
_INLINE_SITE = struct.Struct("<III")  # Parent, End, Inlinee


class CodeViewError(Exception):
    """Bytes that do not decode; the reader turns it into MalformedInputError with its path."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class SymbolRecord(NamedTuple):
    offset: int  # from the start of the module stream, as End fields count
    kind: int
    body: bytes  # after the kind


def iter_symbol_records(stream: bytes, start: int, end: int) -> Iterator[SymbolRecord]:
    """The records in ``stream[start:end]``; raises CodeViewError on a record that runs past ``end``."""
    position = start
    while position + 4 <= end:
        length, kind = struct.unpack_from("<HH", stream, position)
        if length < 2:
            raise CodeViewError(f"symbol record of length {length}", position)
        if position + 2 + length > end:
            raise CodeViewError("symbol record runs past the module's symbols", position)
        yield SymbolRecord(position, kind, stream[position + 4 : position + 2 + length])
        position += 2 + length


_RECORD_HEADER = struct.Struct("<HH")


def next_symbol_record_of(stream: bytes, start: int, end: int, kinds: frozenset[int]) -> SymbolRecord | None:
    """The first record of ``kinds`` in ``stream[start:end]``, None when there is none; every record's
    length checked on the way as :func:`iter_symbol_records` checks it (the others are stepped over
    without being copied)."""
    position = start
    unpack = _RECORD_HEADER.unpack_from
    while position + 4 <= end:
        length, kind = unpack(stream, position)
        if length < 2:
            raise CodeViewError(f"symbol record of length {length}", position)
        if position + 2 + length > end:
            raise CodeViewError("symbol record runs past the module's symbols", position)
        if kind in kinds:
            return SymbolRecord(position, kind, stream[position + 4 : position + 2 + length])
        position += 2 + length
    return None


def after_closing_record(
    stream: bytes, end_offset: int, body_start: int, end: int, kinds: frozenset[int]
) -> int | None:
    """The offset after the scope's closing record (of ``kinds``) at ``end_offset``, its End field,
    when one is there between ``body_start`` and ``end``; None when the End points elsewhere."""
    if not body_start <= end_offset <= end - 4:
        return None
    length, kind = _RECORD_HEADER.unpack_from(stream, end_offset)
    if kind not in kinds or end_offset + 2 + length > end:
        return None
    return int(end_offset + 2 + length)


class Procedure(NamedTuple):
    record_offset: int
    end_offset: int
    section: int
    offset: int
    size: int
    name: str


def parse_procedure(record: SymbolRecord) -> Procedure:
    if len(record.body) < _PROC.size:
        raise CodeViewError("procedure record is truncated", record.offset)
    _parent, end, _next, size, _dbg_start, _dbg_end, _type, offset, section, _flags = _PROC.unpack_from(record.body)
    return Procedure(record.offset, end, section, offset, size, _name(record.body, _PROC.size))


class Thunk(NamedTuple):
    section: int
    offset: int
    size: int
    name: str


def parse_thunk(record: SymbolRecord) -> Thunk | None:
    """An S_THUNK32 (named) or S_TRAMPOLINE (named after its kind) code range; None when truncated."""
    if record.kind == S_THUNK32 and len(record.body) >= _THUNK.size:
        _parent, _end, _next, offset, section, size, _ordinal = _THUNK.unpack_from(record.body)
        return Thunk(section, offset, size, _name(record.body, _THUNK.size))
    if record.kind == S_TRAMPOLINE and len(record.body) >= _TRAMPOLINE.size:
        _type, size, offset, _target, section, _target_section = _TRAMPOLINE.unpack_from(record.body)
        return Thunk(section, offset, size, "")
    return None


class InlineSite(NamedTuple):
    end_offset: int
    inlinee: int
    annotations: bytes


def parse_inline_site(record: SymbolRecord) -> InlineSite:
    header = _INLINE_SITE.size + (4 if record.kind == S_INLINESITE2 else 0)  # S_INLINESITE2 adds invocations
    if len(record.body) < header:
        raise CodeViewError("inline site record is truncated", record.offset)
    _parent, end, inlinee = _INLINE_SITE.unpack_from(record.body)
    return InlineSite(end, inlinee, record.body[header:])


def end_of(record: SymbolRecord) -> int:
    """The End field of a scope-opening record (procedure, block, thunk, inline site)."""
    if len(record.body) < 8:
        raise CodeViewError("scope record is truncated", record.offset)
    return int(struct.unpack_from("<I", record.body, 4)[0])


def _name(body: bytes, offset: int) -> str:
    end = body.find(b"\0", offset)
    return body[offset : end if end >= 0 else len(body)].decode("utf-8", "replace")


# --- C13 subsections --------------------------------------------------------------------------


def iter_subsections(stream: bytes, start: int, end: int) -> Iterator[tuple[int, bytes, int]]:
    """(kind, data, offset) of each C13 subsection in ``stream[start:end]``; ignored ones skipped."""
    position = start
    while position + 8 <= end:
        kind, length = struct.unpack_from("<II", stream, position)
        if position + 8 + length > end:
            raise CodeViewError(f"C13 subsection {kind:#x} of {length} bytes runs past the module", position)
        if not kind & _DEBUG_S_IGNORE:
            yield kind, stream[position + 8 : position + 8 + length], position
        position += 8 + ((length + 3) & ~3)


class LineBlock(NamedTuple):
    """One file's rows of a DEBUG_S_LINES subsection: ``rows`` are their (offsets, lines, columns)."""

    file_id: int  # offset of the file's entry in DEBUG_S_FILECHKSMS
    rows: tuple[Sequence[int], Sequence[int], Sequence[int]]


class LineFragment(NamedTuple):
    section: int
    offset: int
    code_size: int
    blocks: list[LineBlock]


def parse_lines(data: bytes, subsection_offset: int) -> LineFragment:
    if len(data) < 12:
        raise CodeViewError("DEBUG_S_LINES header is truncated", subsection_offset)
    offset, section, flags, code_size = struct.unpack_from("<IHHI", data, 0)
    has_columns = bool(flags & CV_LINES_HAVE_COLUMNS)
    blocks = []
    position = 12
    while position + 12 <= len(data):
        file_id, count, block_size = struct.unpack_from("<III", data, position)
        row_bytes = count * (12 if has_columns else 8)
        if block_size < 12 + row_bytes or position + block_size > len(data):
            raise CodeViewError(f"line block of {count} rows does not fit its {block_size} bytes", subsection_offset)
        rows_at = position + 12
        # (offset, line flags) pairs, then (start, end) column pairs: unpacked whole.
        pairs = struct.unpack_from(f"<{2 * count}I", data, rows_at)
        lines = [flags & 0xFFFFFF for flags in pairs[1::2]]
        columns = struct.unpack_from(f"<{2 * count}H", data, rows_at + 8 * count)[::2] if has_columns else [0] * count
        rows = (pairs[::2], lines, columns)
        blocks.append(LineBlock(file_id, rows))
        position += block_size
    return LineFragment(section, offset, code_size, blocks)


def parse_checksums(data: bytes) -> dict[int, int]:
    """DEBUG_S_FILECHKSMS: entry offset (what line blocks name) -> the file's /names offset."""
    files = {}
    position = 0
    while position + 6 <= len(data):
        name_offset, checksum_size, _kind = struct.unpack_from("<IBB", data, position)
        files[position] = name_offset
        position = (position + 6 + checksum_size + 3) & ~3
    return files


def parse_inlinee_lines(data: bytes, subsection_offset: int) -> dict[int, tuple[int, int]]:
    """DEBUG_S_INLINEELINES: inlinee item ID -> (file ID, first line); the first entry of an ID wins."""
    if len(data) < 4:
        raise CodeViewError("DEBUG_S_INLINEELINES is truncated", subsection_offset)
    (signature,) = struct.unpack_from("<I", data, 0)
    extra_files = signature == 1
    if not extra_files:  # fixed 12-byte entries: unpacked whole, the first of an ID kept
        whole = (len(data) - 4) // 12 * 12
        entries = list(struct.iter_unpack("<III", data[4 : 4 + whole]))
        return {inlinee: (file_id, line) for inlinee, file_id, line in reversed(entries)}
    found: dict[int, tuple[int, int]] = {}
    position = 4
    while position + 12 <= len(data):
        inlinee, file_id, line = struct.unpack_from("<III", data, position)
        position += 12
        if extra_files:
            if position + 4 > len(data):
                raise CodeViewError("inlinee entry's extra file count is truncated", subsection_offset)
            (extra,) = struct.unpack_from("<I", data, position)
            position += 4 + 4 * extra
        found.setdefault(inlinee, (file_id, line))
    return found


CROSS_MODULE_ID = 0x80000000


def parse_cross_scope_imports(data: bytes) -> list[tuple[int, tuple[int, ...]]]:
    """DEBUG_S_CROSSSCOPEIMPORTS: per imported module, its name's /names offset and the local IDs
    imported from it; an entry cut off ends the list."""
    found: list[tuple[int, tuple[int, ...]]] = []
    position = 0
    while position + 8 <= len(data):
        name_offset, count = struct.unpack_from("<II", data, position)
        position += 8
        if count > (len(data) - position) // 4:
            break
        found.append((name_offset, struct.unpack_from(f"<{count}I", data, position)))
        position += 4 * count
    return found


def parse_cross_scope_exports(data: bytes) -> dict[int, int]:
    """DEBUG_S_CROSSSCOPEEXPORTS: local ID -> global IPI index (the first pair of an ID wins)."""
    found: dict[int, int] = {}
    for local, global_index in struct.iter_unpack("<II", data[: len(data) // 8 * 8]):
        found.setdefault(local, global_index)
    return found


def split_cross_module_id(item_id: int) -> tuple[int, int]:
    """(entry of the module's imports, index into that entry's IDs) of a cross-module ID."""
    return (item_id >> 20) & 0x7FF, item_id & 0xFFFFF


# --- binary annotations -----------------------------------------------------------------------

BA_INVALID = 0
BA_CODE_OFFSET = 1
BA_CHANGE_CODE_OFFSET_BASE = 2
BA_CHANGE_CODE_OFFSET = 3
BA_CHANGE_CODE_LENGTH = 4
BA_CHANGE_FILE = 5
BA_CHANGE_LINE_OFFSET = 6
BA_CHANGE_LINE_END_DELTA = 7
BA_CHANGE_RANGE_KIND = 8
BA_CHANGE_COLUMN_START = 9
BA_CHANGE_COLUMN_END_DELTA = 10
BA_CHANGE_CODE_OFFSET_AND_LINE_OFFSET = 11
BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET = 12
BA_CHANGE_COLUMN_END = 13
_LAST_OPCODE = BA_CHANGE_COLUMN_END


def _compressed(data: bytes, position: int) -> tuple[int, int]:
    """A CVCompressData integer at ``position`` (1, 2 or 4 bytes) and the position after it."""
    if position >= len(data):
        raise CodeViewError("binary annotation operand is cut off", position)
    first = data[position]
    if first & 0x80 == 0:
        return first, position + 1
    if first & 0xC0 == 0x80:
        if position + 2 > len(data):
            raise CodeViewError("binary annotation operand is cut off", position)
        return (first & 0x3F) << 8 | data[position + 1], position + 2
    if first & 0xE0 == 0xC0:
        if position + 4 > len(data):
            raise CodeViewError("binary annotation operand is cut off", position)
        value = (first & 0x1F) << 24 | data[position + 1] << 16 | data[position + 2] << 8 | data[position + 3]
        return value, position + 4
    raise CodeViewError(f"bad compressed annotation byte {first:#x}", position)


def _signed(value: int) -> int:
    return -(value >> 1) if value & 1 else value >> 1


class Annotation(NamedTuple):
    opcode: int
    first: int
    second: int = 0


def iter_annotations(data: bytes) -> Iterator[Annotation]:
    """Each annotation, operands decoded (line/column deltas signed); stops at BA_INVALID padding."""
    position = 0
    while position < len(data):
        opcode, position = _compressed(data, position)
        if opcode == BA_INVALID:
            return
        if opcode > _LAST_OPCODE:
            raise CodeViewError(f"unknown binary annotation opcode {opcode}", position)
        first, position = _compressed(data, position)
        if opcode == BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET:
            second, position = _compressed(data, position)
            yield Annotation(opcode, first, second)
        elif opcode in (BA_CHANGE_LINE_OFFSET, BA_CHANGE_LINE_END_DELTA, BA_CHANGE_COLUMN_END_DELTA):
            yield Annotation(opcode, _signed(first))
        else:
            yield Annotation(opcode, first)


class InlineRow(NamedTuple):
    """``[low, high)`` code offsets (from the procedure's start) at ``line`` of file ``file_id``."""

    low: int
    high: int
    line: int
    file_id: int


def annotation_rows(data: bytes, first_line: int, file_id: int) -> list[InlineRow]:
    """The code ranges an inline site covers, with their lines, from its binary annotations.

    A row starts where an annotation moves the code offset, at the line and file then current;
    it ends at the next row's start or where ChangeCodeLength closes it (the offset then moves
    past the range: LLVM's encoder, MCCodeView's ``encodeInlineLineTable``, counts the next delta
    from the end of the range it closed). ChangeCodeLengthAndCodeOffset (MSVC writes it for the
    ranges after a gap; LLVM never does) closes the open row at the moved offset and is a whole
    row of its own, ``[offset + delta, + length)``, after which the offset stays at that row's
    start: the next delta counts from there (the ``pdb`` crate's inlinee line iterator and
    LLVM's ``NativeFunctionSymbol`` read it so; adding the length too puts every later range of
    the site that much too far, mid-instruction or past the procedure's end). A last row never
    closed has no known end and is dropped (llvm-symbolizer does not count it as covered either).
    CodeOffset and ChangeCodeOffsetBase move the offset like ChangeCodeOffset: no toolchain we
    know writes them.

    One loop over the bytes, the CVCompressData integers decoded in place (:func:`iter_annotations`
    reads the same stream one Annotation at a time): cold lookups decode thousands of sites.
    """
    rows: list[InlineRow] = []
    code = 0
    line = first_line
    file = file_id
    open_low = -1  # start of the row without its end yet (-1: none), at open_line of open_file
    open_line = open_file = 0
    position = 0
    size = len(data)
    operands = [0, 0]
    while position < size:
        opcode = 0
        for slot in range(3):  # the opcode, then one or two operands
            if position >= size:
                raise CodeViewError("binary annotation operand is cut off", position)
            first = data[position]
            if first < 0x80:
                value = first
                position += 1
            elif first & 0xC0 == 0x80:
                if position + 2 > size:
                    raise CodeViewError("binary annotation operand is cut off", position)
                value = (first & 0x3F) << 8 | data[position + 1]
                position += 2
            elif first & 0xE0 == 0xC0:
                if position + 4 > size:
                    raise CodeViewError("binary annotation operand is cut off", position)
                value = (first & 0x1F) << 24 | data[position + 1] << 16 | data[position + 2] << 8 | data[position + 3]
                position += 4
            else:
                raise CodeViewError(f"bad compressed annotation byte {first:#x}", position)
            if slot == 0:
                if value == BA_INVALID:
                    return rows
                if value > _LAST_OPCODE:
                    raise CodeViewError(f"unknown binary annotation opcode {value}", position)
                opcode = value
            else:
                operands[slot - 1] = value
                if slot == 1 and opcode != BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET:
                    break
        operand = operands[0]
        if opcode <= BA_CHANGE_CODE_OFFSET or opcode == BA_CHANGE_CODE_OFFSET_AND_LINE_OFFSET:
            if opcode == BA_CHANGE_CODE_OFFSET_AND_LINE_OFFSET:
                packed = operand >> 4
                line += -(packed >> 1) if packed & 1 else packed >> 1
                code += operand & 0xF
            else:
                code += operand
            if open_low >= 0 and code > open_low:
                rows.append(InlineRow(open_low, code, open_line, open_file))
            open_low, open_line, open_file = code, line, file
        elif opcode == BA_CHANGE_CODE_LENGTH:
            if open_low >= 0 and code + operand > open_low:
                rows.append(InlineRow(open_low, code + operand, open_line, open_file))
            open_low = -1
            code += operand
        elif opcode == BA_CHANGE_CODE_LENGTH_AND_CODE_OFFSET:
            # A row of its own: [code + delta, + length). The offset stays at the row's start (the
            # next delta counts from there), unlike ChangeCodeLength, which moves past its row.
            code += operands[1]
            if open_low >= 0 and code > open_low:
                rows.append(InlineRow(open_low, code, open_line, open_file))
            if operand:
                rows.append(InlineRow(code, code + operand, line, file))
            open_low = -1
        elif opcode == BA_CHANGE_LINE_OFFSET:
            line += -(operand >> 1) if operand & 1 else operand >> 1
        elif opcode == BA_CHANGE_FILE:
            file = operand
        # Line end, range kind and column annotations describe the rows further; none is reported.
    return rows

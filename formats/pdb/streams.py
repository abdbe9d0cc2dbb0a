"""The fixed streams of a PDB: the PDB info stream, DBI, publics, ``/names``, and TPI/IPI names.

Layouts from LLVM's "The PDB File Format" pages: "The PDB Info Stream" (version, signature,
age, GUID, the named stream map as a serialized hash table, feature codes), "The DBI Stream"
(header, module info substream, section contribution substream, section map substream,
optional debug header with the section header stream), "The Public Symbol Stream" (the GSI
hash, then the address map: offsets of ``S_PUB32`` records in the symbol record stream,
sorted by address), "The PDB String Table" (``/names``), and "The TPI and IPI Hash Streams"
(the header before the type records). Only what naming addresses needs is kept.

Counts and offsets are checked against the stream's length; a broken stream raises
MalformedInputError naming the stream.
"""

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.native import kernels

PDB_INFO_STREAM = 1
TPI_STREAM = 2
DBI_STREAM = 3
IPI_STREAM = 4

# Feature codes at the end of the info stream ("PdbRaw_FeatureSig").
FEATURE_VC110 = 20091201
FEATURE_VC140 = 20140508
FEATURE_NO_TYPE_MERGE = 0x4D544F4E  # "NOTM"
FEATURE_MINIMAL_DEBUG_INFO = 0x494E494D  # "MINI": /DEBUG:FASTLINK, the debug info stays in the .obj files

_INFO_HEADER = struct.Struct("<III16s")  # Version, Signature, Age, Guid
_DBI_HEADER = struct.Struct("<iIIHHHHHHiiiiiIiiHHI")
_MODULE_INFO = struct.Struct("<I28sHHIIIHHIII")
_SECTION_CONTRIBUTION = struct.Struct("<HHiiIHHII")
_SECTION_CONTRIBUTION2 = struct.Struct("<HHiiIHHII4x")  # and ISectCoff
_SECTION_MAP_ENTRY = struct.Struct("<HHHHHHII")
_SECTION_HEADER = struct.Struct("<8sIIIIIIHHI")
_PUBLICS_HEADER = struct.Struct("<IIIIHHII")
_TYPE_STREAM_HEADER = struct.Struct("<IIIIIHHIIiIiIiI")
_SECTION_CONTRIBUTION_V2 = 0xEFFE0000 + 20140516
_OPTIONAL_SECTION_HEADERS = 5
# A 16-bit stream number that names no stream (a module without symbols, no section headers).
NO_STREAM = 0xFFFF


def _fail(message: str, path: Path, offset: int | None = None) -> MalformedInputError:
    return MalformedInputError(message, path, offset)


def c_string(data: bytes, offset: int) -> tuple[str, int]:
    """The NUL-terminated UTF-8 string at ``offset`` and the offset after its NUL."""
    end = data.find(b"\0", offset)
    if end < 0:
        end = len(data)
    return data[offset:end].decode("utf-8", "replace"), end + 1


class PdbInfo(NamedTuple):
    version: int
    signature: int
    age: int
    guid: bytes
    named_streams: dict[str, int]
    features: tuple[int, ...]


def parse_info_stream(data: bytes, path: Path) -> PdbInfo:
    """The PDB info stream: identity, the named stream map (``/names`` and friends), features."""
    try:
        version, signature, age, guid = _INFO_HEADER.unpack_from(data, 0)
        position = _INFO_HEADER.size
        (strings_size,) = struct.unpack_from("<I", data, position)
        position += 4
        if position + strings_size > len(data):
            raise _fail(f"named stream map's strings ({strings_size} bytes) run past the info stream", path)
        strings = data[position : position + strings_size]
        position += strings_size
        size, capacity = struct.unpack_from("<II", data, position)
        position += 8
        present, position = _bit_vector(data, position, path)
        _deleted, position = _bit_vector(data, position, path)
        if size > capacity or capacity > len(data):
            raise _fail(f"named stream map of {size} entries in {capacity} buckets", path, position)
        named: dict[str, int] = {}
        for bucket in range(capacity):
            if bucket // 32 < len(present) and present[bucket // 32] >> (bucket % 32) & 1:
                key, value = struct.unpack_from("<II", data, position)
                position += 8
                if key < len(strings):
                    named[c_string(strings, key)[0]] = value
        remaining = (len(data) - position) // 4
        features = struct.unpack_from(f"<{remaining}I", data, position) if remaining > 0 else ()
    except struct.error as err:
        raise _fail(f"PDB info stream is truncated: {err}", path) from err
    return PdbInfo(version, signature, age, bytes(guid), named, tuple(features))


def _bit_vector(data: bytes, position: int, path: Path) -> tuple[tuple[int, ...], int]:
    (words,) = struct.unpack_from("<I", data, position)
    position += 4
    if position + 4 * words > len(data):
        raise _fail(f"bit vector of {words} words runs past the info stream", path, position)
    return struct.unpack_from(f"<{words}I", data, position), position + 4 * words


class ModuleInfo(NamedTuple):
    """One DBI module (an object file, or the linker's own): where its symbols and lines are."""

    number: int
    name: str
    object_name: str
    stream: int  # 0xFFFF when the module has no debug stream
    symbols_size: int
    c11_size: int
    c13_size: int


class SectionContribution(NamedTuple):
    section: int  # 1-based
    offset: int
    size: int
    characteristics: int
    module: int


class SectionMapEntry(NamedTuple):
    flags: int
    frame: int  # 1-based section number
    offset: int
    length: int


class ImageSection(NamedTuple):
    """An image section as the PDB records it: its RVA and size (for section:offset -> RVA)."""

    name: str
    rva: int
    virtual_size: int
    characteristics: int


class DbiStream(NamedTuple):
    age: int
    global_stream: int
    public_stream: int
    symbol_record_stream: int
    machine: int
    flags: int
    modules: list[ModuleInfo]
    contributions: list[SectionContribution]
    section_map: list[SectionMapEntry]
    section_header_stream: int


def parse_dbi_stream(data: bytes, path: Path) -> DbiStream:
    """The DBI stream's header, module list, section contributions, section map and debug header."""
    if len(data) < _DBI_HEADER.size:
        raise _fail(f"DBI stream of {len(data)} bytes is shorter than its header", path)
    (signature, _version, age, global_stream, _build, public_stream, _dll_version, symbol_record_stream,
     _rebuild, modules_size, contributions_size, section_map_size, source_info_size, type_server_map_size,
     _mfc_index, optional_header_size, ec_size, flags, machine, _pad) = _DBI_HEADER.unpack_from(data, 0)  # fmt: skip
    if signature != -1:
        raise _fail(f"DBI stream has signature {signature}, not -1", path)
    sizes = [modules_size, contributions_size, section_map_size, source_info_size, type_server_map_size,
             ec_size, optional_header_size]  # fmt: skip
    if any(size < 0 for size in sizes) or _DBI_HEADER.size + sum(sizes) > len(data):
        raise _fail("DBI substream sizes add up past the end of the DBI stream", path)
    position = _DBI_HEADER.size
    modules = _parse_modules(data[position : position + modules_size], path)
    position += modules_size
    contributions = _parse_contributions(data[position : position + contributions_size], path)
    position += contributions_size
    section_map = _parse_section_map(data[position : position + section_map_size], path)
    position += section_map_size + source_info_size + type_server_map_size + ec_size
    optional = data[position : position + optional_header_size]
    count = len(optional) // 2
    debug_streams = struct.unpack_from(f"<{count}H", optional, 0) if count else ()
    has_headers = len(debug_streams) > _OPTIONAL_SECTION_HEADERS
    section_headers = debug_streams[_OPTIONAL_SECTION_HEADERS] if has_headers else NO_STREAM
    return DbiStream(
        age, global_stream, public_stream, symbol_record_stream, machine, flags, modules, contributions, section_map,
        section_headers,
    )  # fmt: skip


def _parse_modules(data: bytes, path: Path) -> list[ModuleInfo]:
    modules: list[ModuleInfo] = []
    position = 0
    while position + _MODULE_INFO.size <= len(data):
        (_unused, _contribution, _flags, stream, symbols_size, c11_size, c13_size, _files, _pad, _unused2,
         _source_name, _pdb_name) = _MODULE_INFO.unpack_from(data, position)  # fmt: skip
        name, after = c_string(data, position + _MODULE_INFO.size)
        object_name, after = c_string(data, after)
        if after > len(data):
            raise _fail(f"DBI module {len(modules)} record runs past the module info substream", path)
        modules.append(ModuleInfo(len(modules), name, object_name, stream, symbols_size, c11_size, c13_size))
        position = (after + 3) & ~3
    return modules


def _parse_contributions(data: bytes, path: Path) -> list[SectionContribution]:
    if len(data) < 4:
        return []
    (version,) = struct.unpack_from("<I", data, 0)
    entry = _SECTION_CONTRIBUTION2 if version == _SECTION_CONTRIBUTION_V2 else _SECTION_CONTRIBUTION
    whole = (len(data) - 4) // entry.size * entry.size  # a partial last entry is left out
    return [
        SectionContribution(section, offset, size, characteristics, module)
        for section, _pad, offset, size, characteristics, module, _pad2, _data_crc, _reloc_crc in entry.iter_unpack(
            data[4 : 4 + whole]
        )
        if size > 0
    ]


def _parse_section_map(data: bytes, path: Path) -> list[SectionMapEntry]:
    if len(data) < 4:
        return []
    count, _logical = struct.unpack_from("<HH", data, 0)
    if 4 + count * _SECTION_MAP_ENTRY.size > len(data):
        raise _fail(f"section map claims {count} entries, more than its substream holds", path)
    entries = []
    for index in range(count):
        flags, _ovl, _group, frame, _name, _class, offset, length = _SECTION_MAP_ENTRY.unpack_from(
            data, 4 + index * _SECTION_MAP_ENTRY.size
        )
        entries.append(SectionMapEntry(flags, frame, offset, length))
    return entries


def parse_section_headers(data: bytes) -> list[ImageSection]:
    """The image's IMAGE_SECTION_HEADER array as the DBI's section header stream stores it."""
    sections = []
    for position in range(0, len(data) - _SECTION_HEADER.size + 1, _SECTION_HEADER.size):
        name, virtual_size, rva, _raw_size, _raw_ptr, _relocs, _lines, _nrelocs, _nlines, characteristics = (
            _SECTION_HEADER.unpack_from(data, position)
        )
        sections.append(ImageSection(name.rstrip(b"\0").decode("utf-8", "replace"), rva, virtual_size, characteristics))
    return sections


def parse_public_address_map(data: bytes, path: Path) -> list[int]:
    """Offsets (in the symbol record stream) of the S_PUB32 records, in the address map's order."""
    if not data:
        return []
    if len(data) < _PUBLICS_HEADER.size:
        raise _fail("publics stream is shorter than its header", path)
    hash_size, address_map_size, *_rest = _PUBLICS_HEADER.unpack_from(data, 0)
    start = _PUBLICS_HEADER.size + hash_size
    if start + address_map_size > len(data) or address_map_size % 4:
        raise _fail(f"publics address map of {address_map_size} bytes runs past the publics stream", path)
    return list(struct.unpack_from(f"<{address_map_size // 4}I", data, start))


class StringTable:
    """The ``/names`` stream: file names that checksum entries point into, by offset."""

    def __init__(self, data: bytes, path: Path) -> None:
        self._strings = b""
        if len(data) >= 12:
            signature, _hash_version, size = struct.unpack_from("<III", data, 0)
            if signature != 0xEFFEEFFE:
                raise _fail(f"/names stream has signature {signature:#x}", path)
            if 12 + size > len(data):
                raise _fail(f"/names strings ({size} bytes) run past the stream", path)
            self._strings = data[12 : 12 + size]

    def get(self, offset: int) -> str | None:
        if not 0 <= offset < len(self._strings):
            return None
        return c_string(self._strings, offset)[0]


class TypeRecords:
    """The records of a TPI or IPI stream, found by type index; the offsets are listed on first use."""

    def __init__(self, data: bytes, path: Path, what: str) -> None:
        self.path = path
        self._what = what
        self._data = data
        self._offsets: list[int] | None = None
        self.first_index = 0x1000
        self._records_start = 0
        self._records_end = 0
        if data:
            if len(data) < _TYPE_STREAM_HEADER.size:
                raise _fail(f"{what} stream is shorter than its header", path)
            _version, header_size, first, last, record_bytes, *_rest = _TYPE_STREAM_HEADER.unpack_from(data, 0)
            if header_size < _TYPE_STREAM_HEADER.size or header_size + record_bytes > len(data) or last < first:
                raise _fail(f"{what} stream header gives records past the stream", path)
            self.first_index = first
            self._records_start = header_size
            self._records_end = header_size + record_bytes

    def _index(self) -> list[int]:
        if self._offsets is None and kernels is not None:  # the twin (native/src/pdb_records.rs)
            self._offsets = kernels.type_record_offsets(self._data, self._records_start, self._records_end)
        if self._offsets is None:
            offsets = []
            position = self._records_start
            while position + 4 <= self._records_end:
                (length,) = struct.unpack_from("<H", self._data, position)
                if length < 2 or position + 2 + length > self._records_end:
                    break  # a broken record ends the list: indexes past it are unknown
                offsets.append(position)
                position += 2 + length
            self._offsets = offsets
        return self._offsets

    def record(self, type_index: int) -> tuple[int, bytes] | None:
        """(kind, bytes after the kind) of record ``type_index``; None when there is none."""
        position = type_index - self.first_index
        offsets = self._index()
        if not 0 <= position < len(offsets):
            return None
        start = offsets[position]
        length, kind = struct.unpack_from("<HH", self._data, start)
        return kind, self._data[start + 4 : start + 2 + length]


# Type and ID record kinds read for names ("CodeView Type Records").
LF_CLASS, LF_STRUCTURE, LF_UNION, LF_ENUM, LF_INTERFACE = 0x1504, 0x1505, 0x1506, 0x1507, 0x1519
LF_CLASS2, LF_STRUCTURE2 = 0x1608, 0x1609
LF_FUNC_ID, LF_MFUNC_ID, LF_STRING_ID = 0x1601, 0x1602, 0x1605
_NUMERIC_SIZES = {0x8000: 1, 0x8001: 2, 0x8002: 2, 0x8003: 4, 0x8004: 4, 0x8009: 8, 0x800A: 8}


def _skip_numeric(data: bytes, position: int) -> int:
    """The offset after the numeric leaf at ``position`` (a value below 0x8000, or a sized leaf)."""
    (leaf,) = struct.unpack_from("<H", data, position)
    if leaf < 0x8000:
        return position + 2
    return position + 2 + _NUMERIC_SIZES.get(leaf, 0)


def type_name(records: TypeRecords, type_index: int) -> str | None:
    """The name of a class, structure, union, interface or enum record, as it records it (qualified)."""
    found = records.record(type_index)
    if found is None:
        return None
    kind, body = found
    try:
        if kind in (LF_CLASS, LF_STRUCTURE, LF_INTERFACE):
            return c_string(body, _skip_numeric(body, 16))[0]
        if kind in (LF_CLASS2, LF_STRUCTURE2):
            return c_string(body, _skip_numeric(body, 20))[0]
        if kind == LF_UNION:
            return c_string(body, _skip_numeric(body, 8))[0]
        if kind == LF_ENUM:
            return c_string(body, 12)[0]
    except struct.error:
        return None
    return None


def inlinee_name(ids: TypeRecords, types: TypeRecords, item_id: int) -> str | None:
    """An inlined function's name as llvm-symbolizer builds it from its LF_FUNC_ID or LF_MFUNC_ID.

    LF_FUNC_ID: the parent scope's LF_STRING_ID text, "::", the name; LF_MFUNC_ID: the class's
    (TPI) name, "::", the name. None when the record is missing or of another kind.
    """
    found = ids.record(item_id)
    if found is None:
        return None
    kind, body = found
    if len(body) < 8 or kind not in (LF_FUNC_ID, LF_MFUNC_ID):
        return None
    scope, _function_type = struct.unpack_from("<II", body, 0)
    name = c_string(body, 8)[0]
    if kind == LF_MFUNC_ID:
        owner = type_name(types, scope)
        return f"{owner}::{name}" if owner else name
    if scope:
        parent = ids.record(scope)
        if parent is not None and parent[0] == LF_STRING_ID and len(parent[1]) >= 4:
            return f"{c_string(parent[1], 4)[0]}::{name}"
    return name


def public_records(records: bytes, offsets: list[int]) -> list[tuple[int, int, int, str]]:
    """:func:`iter_public_records` as a list, by its compiled twin (native/src/pdb_records.rs) where built."""
    if kernels is None:
        return list(iter_public_records(records, offsets))
    return [
        (flags, section, offset, name.decode("utf-8", "replace"))
        for flags, section, offset, name in kernels.public_records(records, offsets)
    ]


def iter_public_records(records: bytes, offsets: list[int]) -> Iterator[tuple[int, int, int, str]]:
    """(flags, section, offset, name) of each S_PUB32 at ``offsets`` in the symbol record stream."""
    for position in offsets:
        if position + 14 > len(records):
            continue
        length, kind = struct.unpack_from("<HH", records, position)
        if kind != 0x110E or length < 12 or position + 2 + length > len(records):
            continue
        flags, offset, section = struct.unpack_from("<IIH", records, position + 4)
        # The name ends at its NUL or at the record's end (found in place: no copy of the stream).
        name_end = records.find(b"\0", position + 14, position + 2 + length)
        name = records[position + 14 : name_end if name_end >= 0 else position + 2 + length]
        yield flags, section, offset, name.decode("utf-8", "replace")

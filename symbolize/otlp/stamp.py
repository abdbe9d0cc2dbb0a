"""``symbolize stamp`` on OTLP profiles: each mapping's build IDs recorded as attributes.

The stamp itself is :func:`symbolize.stamp.stamp` (files' headers read, one outcome per mapping);
this is its OTLP writer. A dictionary mapping's IDs are its attributes
(:mod:`symbolize.otlp.attributes`): ``process.executable.build_id.gnu`` for an ELF file, and our
namespaced ``symbolize.pdb.id`` (GUID + age) and ``symbolize.pe.code_id`` for a PE image,
``symbolize.macho.uuid`` for a Mach-O slice, each spelled as symbolize/mapping_ids.py spells it.
An attribute of that key already on the mapping is replaced (the stamp only writes IDs that agree
with it, completing their spelling); every other attribute is kept. The mappings are the shared
dictionary's, so one stamp serves every resource and profile of the export; the profile's time
is the earliest ``time_unix_nano`` of its profiles.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence
from pathlib import Path

from opentelemetry.proto.profiles.v1development.profiles_pb2 import ProfilesData

from symbolize.formats.errors import MissingDebugInfoError, NotFoundError
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.otlp import attributes as keys
from symbolize.otlp.dictionary import DictionaryEditor
from symbolize.otlp.encoding import encode_profiles_data, read_profiles_data
from symbolize.stamp import MappingFacts, StampReport, stamp

__all__ = ["OtlpStampTarget", "stamp_otlp_payload"]

# An ID's kind -> the attribute that records it.
ID_KEYS = {
    DebugIdKind.GNU_BUILD_ID: keys.GNU_BUILD_ID,
    DebugIdKind.PDB: keys.PDB_ID,
    DebugIdKind.PE_CODE_ID: keys.PE_CODE_ID,
    DebugIdKind.MACHO_UUID: keys.MACHO_UUID,
}


class OtlpStampTarget:
    """The mappings of an export's dictionary (keyed by their index); IDs go to their attributes."""

    def __init__(self, message: ProfilesData) -> None:
        self.message = message
        self.editor = DictionaryEditor(message.dictionary)

    @property
    def taken_at_ns(self) -> int:
        times = [
            profile.time_unix_nano
            for resource in self.message.resource_profiles
            for scope in resource.scope_profiles
            for profile in scope.profiles
            if profile.time_unix_nano
        ]
        return min(times, default=0)

    def mappings(self) -> Iterator[MappingFacts]:
        strings = self.message.dictionary.string_table
        for index, mapping in enumerate(self.message.dictionary.mapping_table):
            if not index:
                continue  # the zero entry: no mapping
            found = self.editor.attributes(mapping.attribute_indices)
            recorded = ",".join(
                str(found[key]) for key in ID_KEYS.values() if isinstance(found.get(key), str) and found[key]
            )
            name = strings[mapping.filename_strindex] if 0 <= mapping.filename_strindex < len(strings) else ""
            yield MappingFacts(index, name, mapping.memory_start, mapping.memory_limit, mapping.file_offset, recorded)

    def record(self, key: int, ids: Sequence[DebugId]) -> None:
        mapping = self.message.dictionary.mapping_table[key]
        for debug_id in ids:
            attribute = ID_KEYS.get(debug_id.kind)
            if attribute is not None:
                self.editor.set_attribute(mapping, attribute, str(debug_id))


def stamp_otlp_payload(data: bytes, *, binaries: Sequence[Path] = (), source: str) -> tuple[bytes, StampReport]:
    """OTLP bytes (protobuf or JSON, gzipped or not) stamped (:func:`symbolize.stamp.stamp`), in
    the same encoding; errors name ``source``. A binary that does not exist raises NotFoundError,
    a directory MissingDebugInfoError, as :func:`symbolize.api.stamp_profile`'s."""
    for path in binaries:
        if not path.exists():
            raise NotFoundError("binary not found", path)
        if path.is_dir():
            raise MissingDebugInfoError("binary is a directory, not a file", path)
    message, encoding, gzipped = read_profiles_data(data, source)
    report = stamp(OtlpStampTarget(message), binaries=binaries)
    stamped = encode_profiles_data(message, encoding)
    return (gzip.compress(stamped, compresslevel=6, mtime=0) if gzipped else stamped), report

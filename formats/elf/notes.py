"""Where an ELF file says its identity and its debug files are: notes and the GNU link sections.

Implements the note format (gABI chapter 5, "Note Section"), the GNU build ID
note (``NT_GNU_BUILD_ID``), ``.gnu_debuglink`` (file name, padding to 4,
CRC32: GDB manual, "Separate Debug Files") and ``.gnu_debugaltlink`` (the dwz
common file's name and build ID: the dwz manual and DWARF 5's supplementary
object files, 7.3.6).
"""

from __future__ import annotations

from collections.abc import Iterator

from symbolize.formats.elf.headers import PT_NOTE, SHT_NOTE, ElfHeaders, align_up
from symbolize.formats.types import DebugId, DebugIdKind, DebugLink

NT_GNU_BUILD_ID = 3


def iter_notes(headers: ElfHeaders) -> Iterator[tuple[bytes, int, memoryview]]:
    """(name, type, descriptor) of every note, from note sections, else PT_NOTE segments."""
    sources = [
        (section.sh_offset, section.sh_size, section.sh_addralign)
        for section in sorted(headers.sections, key=lambda s: s.name != ".note.gnu.build-id")
        if section.sh_type == SHT_NOTE
    ]
    if not headers.sections:
        sources = [(h.p_offset, h.p_filesz, h.p_align) for h in headers.program_headers if h.p_type == PT_NOTE]
    word = headers.layout.word
    for offset, size, align in sources:
        data = headers.checked_range(offset, size, "note")
        # Notes are 4-byte aligned, except in 8-aligned containers (gABI "Note Section").
        pad = 8 if align == 8 else 4
        pos = 0
        while pos + 12 <= len(data):
            namesz, descsz = word.unpack_from(data, pos)[0], word.unpack_from(data, pos + 4)[0]
            note_type = word.unpack_from(data, pos + 8)[0]
            name_at = pos + 12
            # Padded to ``pad`` from the section's start: in an 8-aligned section (.note.gnu.property)
            # the 4-byte name "GNU" ends at 16, already aligned, so the descriptor starts there.
            desc_at = align_up(name_at + namesz, pad)
            end = align_up(desc_at + descsz, pad)
            if desc_at + descsz > len(data):
                raise headers.fail("note extends past its section", offset + pos)
            yield (
                bytes(data[name_at : name_at + namesz]).rstrip(b"\0"),
                note_type,
                data[desc_at : desc_at + descsz],
            )
            pos = end


def find_build_id(headers: ElfHeaders) -> DebugId | None:
    for name, note_type, desc in iter_notes(headers):
        if name == b"GNU" and note_type == NT_GNU_BUILD_ID and len(desc) > 0:
            return DebugId(DebugIdKind.GNU_BUILD_ID, bytes(desc))
    return None


def read_debug_link(headers: ElfHeaders) -> DebugLink | None:
    found = headers.named_raw(".gnu_debuglink")
    if found is None:
        return None
    section, raw = found[0], bytes(found[1])
    end = raw.find(b"\0")
    crc_at = align_up(end + 1, 4)
    if end <= 0 or crc_at + 4 > len(raw):
        raise headers.fail("malformed .gnu_debuglink", section.sh_offset)
    (crc,) = headers.layout.word.unpack_from(raw, crc_at)
    return DebugLink(raw[:end].decode("utf-8", "surrogateescape"), crc)


def read_supplementary_link(headers: ElfHeaders) -> tuple[str, bytes] | None:
    """``.gnu_debugaltlink``: the dwz common file (path, build ID) the DWARF refers into."""
    found = headers.named_raw(".gnu_debugaltlink")
    if found is None:
        return None
    section, raw = found[0], bytes(found[1])
    end = raw.find(b"\0")
    if end <= 0:
        raise headers.fail("malformed .gnu_debugaltlink", section.sh_offset)
    return raw[:end].decode("utf-8", "surrogateescape"), raw[end + 1 :]

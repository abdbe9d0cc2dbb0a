"""A profile mapping's ID text (pprof's ``Mapping.build_id``): one build ID, or several joined by ``,``.

One ID is what producers write: a GNU build ID in hex, a Mach-O UUID, a PDB GUID + age, a PE code
ID, each in any spelling :meth:`DebugId.parse` reads. ``symbolize stamp`` records every ID a file's
headers give, so that a PE image is named both ways (symbol servers key the image by its code ID
and its PDB by GUID + age; Breakpad, Crashpad and Sentry record both)::

    <GUID><AGE>,<TIMESTAMP><SIZEOFIMAGE>      PE with a PDB, e.g. D01E5215C14845FF4C4C44205044422E1,DD1324EA5000
    <TIMESTAMP><SIZEOFIMAGE>                  PE without one (MinGW, CodeView-less)
    <build ID hex>                            ELF
    <UUID, dashed, upper case>                Mach-O

Each part is read as the kind its form allows (a PDB ID is 33 to 40 hex digits, a code ID 9 to
16): no tag is needed. A file matches the text when every part that reads as one of the file's
kinds of ID equals the file's ID of that kind, and at least one does. ``,`` is in no spelling of
any ID and is no path separator (pprof builds ``$PPROF_BINARY_PATH/<build_id>/<name>``).
"""

from __future__ import annotations

from collections.abc import Sequence

from symbolize.formats.types import DebugId, DebugIdKind

__all__ = ["SEPARATOR", "id_parts", "matches", "parse_part", "spell"]

SEPARATOR = ","


def spell(ids: Sequence[DebugId]) -> str:
    """The text recording ``ids`` (most specific first, as the stamp orders them)."""
    return SEPARATOR.join(str(debug_id) for debug_id in ids)


def id_parts(text: str) -> list[str]:
    """The IDs ``text`` records, as text, empty parts dropped."""
    return [part.strip() for part in text.split(SEPARATOR) if part.strip()]


def parse_part(text: str, kind: DebugIdKind) -> DebugId | None:
    """The first ID of ``text`` that reads as ``kind``; None when none does.

    What a locator asks for: the code ID of a stamped PE mapping to fetch the image by, the GNU
    build ID of an ELF one.
    """
    for part in id_parts(text):
        parsed = DebugId.parse(part, kind)
        if parsed is not None:
            return parsed
    return None


def matches(text: str, identities: Sequence[DebugId]) -> bool:
    """Whether a file with ``identities`` (``Image.identities()``) is the build ``text`` names."""
    compared = False
    for part in id_parts(text):
        for identity in identities:
            parsed = DebugId.parse(part, identity.kind)
            if parsed is None:
                continue
            if parsed != identity:
                return False
            compared = True
    return compared

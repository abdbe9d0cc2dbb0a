"""An ELF file's debug hints, and the resolver callbacks its DWARF reader asks through.

The reader opens no other file: the hints go up to symbolize/'s locators
(symbolize/discovery/), and when a unit needs a ``.dwo``/``.dwp`` or the dwz
common file, the callbacks here turn the DWARF reader's question into a
:class:`DebugHint` for the resolver the file was opened with.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import DebugHint, DebugId, DebugIdKind, DebugLink, HintKind, HintResolver

if TYPE_CHECKING:
    from symbolize.formats.dwarf.info import SplitDwarfResolver, SupplementaryResolver
    from symbolize.formats.dwarf.sections import SectionGetter

_U64 = (1 << 64) - 1


def debug_hints(
    debug_id: DebugId | None, link: DebugHint | None, supplementary: DebugHint | None
) -> list[DebugHint]:
    """Build ID, ``.gnu_debuglink`` and ``.gnu_debugaltlink``, in the order they are tried."""
    hints: list[DebugHint] = []
    if debug_id is not None:
        hints.append(DebugHint(HintKind.BUILD_ID, debug_id=debug_id))
    if link is not None:
        hints.append(link)
    if supplementary is not None:
        hints.append(supplementary)
    return hints


def readable_hint(kind: HintKind, read: Callable[[], DebugHint | None]) -> DebugHint | None:
    """The hint ``read`` builds from its section; when the section is malformed, a hint of ``kind``
    that carries why (``DebugHint.damaged``), so discovery refuses it and the file answers without it."""
    try:
        return read()
    except MalformedInputError as err:
        return DebugHint(kind, damaged=str(err))


def debuglink_hint(link: DebugLink | None) -> DebugHint | None:
    """The separate debug file a ``.gnu_debuglink`` (name, CRC32) names."""
    return DebugHint(HintKind.DEBUGLINK, link.filename, crc32=link.crc32) if link is not None else None


def supplementary_hint(link: tuple[str, bytes] | None) -> DebugHint | None:
    """The dwz common file a ``.gnu_debugaltlink`` (name, build ID) names."""
    if link is None:
        return None
    name, build_id = link
    return DebugHint(HintKind.SUPPLEMENTARY, name, DebugId(DebugIdKind.GNU_BUILD_ID, build_id) if build_id else None)


def split_resolver(resolver: HintResolver) -> SplitDwarfResolver:
    """The DWARF reader's split-unit callback: a SPLIT_DWARF hint (name, comp_dir, DWO ID) to ``resolver``."""

    def resolve(dwo_name: str, comp_dir: str | None, dwo_id: int | None) -> tuple[SectionGetter, Path] | None:
        debug_id = DebugId(DebugIdKind.DWO_ID, (dwo_id & _U64).to_bytes(8, "big")) if dwo_id is not None else None
        found = resolver(DebugHint(HintKind.SPLIT_DWARF, dwo_name, debug_id, directory=comp_dir or ""))
        return (found.section_data, found.path) if found is not None else None

    return resolve


def supplementary_resolver(resolver: HintResolver, hint: DebugHint | None) -> SupplementaryResolver:
    """The DWARF reader's dwz callback: ``hint`` (from ``.gnu_debugaltlink``) to ``resolver``."""

    def resolve() -> tuple[SectionGetter, Path] | None:
        found = resolver(hint) if hint is not None else None
        return (found.section_data, found.path) if found is not None else None

    return resolve

"""An ELF file's debug hints: build ID, ``.gnu_debuglink``, ``.gnu_debugaltlink``.

The reader opens no other file: the hints go up to symbolize/'s locators
(symbolize/discovery/), and the files its DWARF needs (a ``.dwo``/``.dwp``, the dwz
common file) are said in what it returns (``needs``) and supplied by the caller.
"""

from __future__ import annotations

from collections.abc import Callable

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import DebugHint, DebugId, DebugIdKind, DebugLink, HintKind


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

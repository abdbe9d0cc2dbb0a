"""A procedure's inline sites (``S_INLINESITE``, ``S_INLINESITE2``) and their code ranges.

From LLVM's "CodeView Symbol Records": an inline site sits in its procedure's (or its enclosing
site's) body, its End field the offset of its ``S_INLINESITE_END``; its binary annotations give
the code ranges and lines of the inlined body, offsets from the start of the procedure
(``codeview.annotation_rows``). Sites are decoded lazily: a lookup decodes only the sites it
passes through, and a site's nested sites on the first lookup inside it.
"""

import struct
from typing import NamedTuple

from symbolize.formats.pdb import codeview
from symbolize.formats.pdb.codeview import CodeViewError, InlineRow

# Bounds on what one hostile module can make us build.
MAX_INLINE_DEPTH = 64


class SiteScope(NamedTuple):
    """What the inline sites of one procedure are read against."""

    stream: bytes
    base: int  # the procedure's vaddr, which annotation offsets count from
    inlinee_lines: dict[int, tuple[int, int]]


class InlineSite:
    """An inline site: its inlinee, and, decoded on first use (a lookup decodes only the sites it
    passes), its rows (vaddrs) from its annotations and the sites nested in its body."""

    __slots__ = ("_body", "_children", "_extent", "_file_id", "_rows", "_scope", "annotations", "first_line", "inlinee")

    def __init__(self, scope: SiteScope, inlinee: int, annotations: bytes, body: tuple[int, int], level: int) -> None:
        self._scope = scope
        self.inlinee = inlinee
        self.annotations = annotations
        self._file_id, self.first_line = scope.inlinee_lines.get(inlinee, (0, 0))
        self._body = (body[0], body[1], level)
        self._rows: list[InlineRow] | None = None
        self._extent = (0, 0)  # [lowest low, highest high) of the rows, once decoded
        self._children: list[InlineSite] | None = None

    @property
    def rows(self) -> list[InlineRow]:
        if self._rows is None:
            try:
                rows = codeview.annotation_rows(self.annotations, self.first_line, self._file_id)
            except CodeViewError:
                rows = []  # annotations that do not decode: the site covers nothing, the rest answers
            base = self._scope.base
            self._rows = [InlineRow(base + row.low, base + row.high, row.line, row.file_id) for row in rows]
            if self._rows:
                self._extent = (min(row.low for row in self._rows), max(row.high for row in self._rows))
        return self._rows

    @property
    def children(self) -> "list[InlineSite]":
        if self._children is None:
            start, end, level = self._body
            try:
                self._children = sites_in(self._scope, start, end, level + 1)
            except (CodeViewError, struct.error):
                self._children = []  # a body that does not decode: the site has no nested sites
        return self._children

    def holds(self, vaddr: int) -> bool:
        rows = self.rows
        low, high = self._extent
        return low <= vaddr < high and any(row.low <= vaddr < row.high for row in rows)


def sites_in(scope: SiteScope, start: int, end: int, level: int) -> list[InlineSite]:
    """The inline sites directly in ``stream[start:end]`` (blocks looked through), each one's body
    stepped over by its End (the offset of its S_INLINESITE_END); an End that does not point at one
    inside ``end`` leaves that site without nested sites, and the scan goes on after its record."""
    if level > MAX_INLINE_DEPTH:
        raise CodeViewError(f"inline sites nested more than {MAX_INLINE_DEPTH} deep", start)
    sites = []
    position = start
    kinds = codeview.INLINE_SITE_KINDS
    while (record := codeview.next_symbol_record_of(scope.stream, position, end, kinds)) is not None:
        site = codeview.parse_inline_site(record)
        position = body_start = record.offset + 4 + len(record.body)
        closing = codeview.after_closing_record(
            scope.stream, site.end_offset, body_start, end, codeview.INLINE_SITE_END_KINDS
        )
        body_end = site.end_offset if closing is not None else body_start
        sites.append(InlineSite(scope, site.inlinee, site.annotations, (body_start, body_end), level))
        position = closing if closing is not None else body_start
    return sites


def site_chain(sites: list[InlineSite], vaddr: int) -> list[InlineSite]:
    """The inline sites holding ``vaddr``, outermost first (at each level the first that holds it)."""
    chain: list[InlineSite] = []
    level = sites
    while level and len(chain) <= MAX_INLINE_DEPTH:
        holding = next((site for site in level if site.holds(vaddr)), None)
        if holding is None:
            break
        chain.append(holding)
        level = holding.children
    return chain

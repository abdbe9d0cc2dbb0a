"""A PDB's publics (``S_PUB32``): the linkage names of its functions, and the symbols they make.

From LLVM's "The PDB Global Symbol Stream" and "The PDB Public Symbol Stream": the publics
stream's address map lists the offsets of the ``S_PUB32`` records in the symbol record stream,
sorted by ``Segment:Offset``. In a 32-bit PDB a C name keeps its calling-convention decoration
(``_f``, ``_f@8``, ``@f@8``, ``f@@8``), which llvm-symbolizer drops when it demangles, and so do
we. As symbols, each public reaches the next public of its section, or the section's end.
"""

from bisect import bisect_right
from collections.abc import Sequence
from itertools import islice
from operator import le
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.pdb.msf import MsfFile
from symbolize.formats.pdb.streams import NO_STREAM, DbiStream, ImageSection, parse_public_address_map, public_records
from symbolize.formats.types import AnswerRun, Frame, Symbol


class Public(NamedTuple):
    section: int
    offset: int
    name: str


def read_publics(msf: MsfFile, dbi: DbiStream, path: Path, is_32bit: bool) -> tuple[list[int], list[str]]:
    """Every public's key ``section << 32 | offset`` (its place as one int, bisected once per
    lookup) and its name, sorted by key; 32-bit C names undecorated. (No tuple per public: a cold
    lookup makes a :class:`Public` of the few it lands on.)"""
    offsets: list[int] = []
    records = b""
    if dbi.public_stream != NO_STREAM:
        offsets = parse_public_address_map(msf.stream(dbi.public_stream), path)
        records = msf.stream(dbi.symbol_record_stream)
    found = public_records(records, offsets)
    keys = [section << 32 | offset for _flags, section, offset, _name in found]
    names = [undecorated(name) if is_32bit else name for _flags, _section, _offset, name in found]
    # The address map is sorted by (section, offset); keep that order even if a file is not,
    # so that bisecting stays meaningful (a stable sort: publics at one address keep theirs).
    if not all(map(le, keys, islice(keys, 1, None))):
        order = sorted(range(len(keys)), key=keys.__getitem__)
        keys, names = [keys[i] for i in order], [names[i] for i in order]
    return keys, names


def public_at(keys: list[int], names: list[str], position: int) -> Public:
    """The public at ``position`` of :func:`read_publics`'s lists."""
    return Public(keys[position] >> 32, keys[position] & 0xFFFFFFFF, names[position])


def undecorated(name: str) -> str:
    """A 32-bit C name without its calling-convention decoration; a C++ (``?``) name as it is."""
    if not name or name[0] == "?":
        return name
    body = name[1:] if name[0] in "_@" else name
    at = body.rfind("@")
    if at >= 0 and body[at + 1 :].isdigit():
        body = body[:at]
    if body.endswith("@"):
        body = body[:-1]  # vectorcall: f@@8
    return body or name


def public_symbols(publics: Sequence[Public], sections: Sequence[ImageSection], image_base: int) -> list[Symbol]:
    """The publics in a known section as function symbols at ``image_base + RVA``, each reaching
    the next public or its section's end."""
    count = len(sections)
    known = [public for public in publics if 0 < public.section <= count]
    found = []
    for index, public in enumerate(known):
        section = sections[public.section - 1]
        start = image_base + section.rva
        vaddr = start + public.offset
        end = start + section.virtual_size
        if index + 1 < len(known) and known[index + 1].section == public.section:
            end = min(end, start + known[index + 1].offset)
        found.append(Symbol(public.name, vaddr, max(end - vaddr, 0)))
    return found


class PublicFrames:
    """The publics' runs found by bisection, without building a run per public: most lookups land
    in modules, and the fallback is asked for few addresses (the :class:`LazyRuns` of the publics)."""

    def __init__(self, symbols: list[Symbol]) -> None:
        self._symbols = symbols
        self._lows = [symbol.vaddr for symbol in symbols]

    def run_at(self, vaddr: int) -> AnswerRun | None:
        position = bisect_right(self._lows, vaddr) - 1
        if position < 0:
            return None
        symbol = self._symbols[position]
        if not vaddr < symbol.vaddr + symbol.size:
            return None
        return AnswerRun(symbol.vaddr, symbol.vaddr + symbol.size, (Frame(symbol.name),))

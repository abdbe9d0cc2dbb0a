"""The coverage the readers measured, checked the way a profile will be named: by looking addresses up.

The coverage figures say what the symbol table, the line tables and the debug info's
function entries *describe*; a profile is named by ``lookup`` (``symbolize.api.lookup``,
what ``symbolize lookup`` and ``symbolize profile`` answer through), which first has to
reach the compile unit holding an address (by its ranges, through a split unit's skeleton,
a dwz file, a debug map) before its lines and inline chains count. Where the two part (a
unit whose ranges miss its code, a ``.dwp`` whose unit is found but does not answer), a
verdict from the figures alone is wrong. So for each claim, up to ``SAMPLE_SIZE``
addresses spread evenly over the bytes it covers are looked up, without the persistent
index (the files themselves answer), and counted when the lookup answers that way:

- *names*: addresses that symbols or function entries cover; answered with a function name;
- *lines*: addresses the line tables cover; answered with a line (innermost frame);
- *inlined*: addresses inside an inlined call; answered with an inline chain (two frames or more).

The verdict (``verdict.py``) then grades each share by what came back: a share whose sample
was answered short of ``ANSWERED_THRESHOLD`` counts for ``answered / sampled`` of its value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from symbolize.audit.report import ClaimCheck, CoverageReport, LookupCheck
from symbolize.formats.errors import SymbolizeError
from symbolize.formats.facts import AddressRange, intersect_ranges

# Addresses looked up per claim: enough to see a unit that does not answer, few enough that a
# large binary is audited in about a second (each lookup decodes only the unit it lands in).
SAMPLE_SIZE = 64
# Below this share of its sample answered, a claim is not borne out (and counts for what was).
ANSWERED_THRESHOLD = 0.9


UNCHECKED = ClaimCheck(0, 0)


def not_checked(note: str) -> LookupCheck:
    return LookupCheck(False, SAMPLE_SIZE, UNCHECKED, UNCHECKED, UNCHECKED, note)


def spread(ranges: Sequence[AddressRange], count: int) -> list[int]:
    """Up to ``count`` addresses evenly spread over the bytes of ``ranges`` (merged, sorted)."""
    total = sum(high - low for low, high in ranges)
    count = min(count, total)
    if count <= 0:
        return []
    wanted = [(2 * index + 1) * total // (2 * count) for index in range(count)]  # each slice's middle byte
    found: list[int] = []
    passed = 0
    position = 0
    for low, high in ranges:
        size = high - low
        while position < len(wanted) and wanted[position] < passed + size:
            found.append(low + wanted[position] - passed)
            position += 1
        passed += size
    return found


def check_lookups(
    path: Path,
    arch: str | None,
    claims: tuple[Sequence[AddressRange], Sequence[AddressRange], Sequence[AddressRange]],
    code: Sequence[AddressRange],
    search_paths: Sequence[Path],
    debug_dirs: Sequence[Path],
) -> LookupCheck:
    """Look up addresses sampled from the (names, lines, inlined) ranges within ``code``."""
    from symbolize.api import lookup

    samples = [spread(intersect_ranges(claim, code), SAMPLE_SIZE) for claim in claims]
    addresses = sorted({vaddr for sample in samples for vaddr in sample})
    if not addresses:
        return LookupCheck(True, SAMPLE_SIZE, UNCHECKED, UNCHECKED, UNCHECKED)
    try:
        results = lookup(
            path,
            addresses,
            demangle="none",
            search_paths=search_paths,
            debug_dirs=debug_dirs,
            use_cache=False,
            background_index=False,
            arch=arch,
        )
    except SymbolizeError as err:
        # The file opens for the auditor but not for a lookup: a profile would name nothing.
        names, lines, inlined = (len(sample) for sample in samples)
        return LookupCheck(
            True,
            SAMPLE_SIZE,
            ClaimCheck(names, 0),
            ClaimCheck(lines, 0),
            ClaimCheck(inlined, 0),
            f"lookup fails: {err.reason}",
        )
    frames = {vaddr: result for vaddr, result in zip(addresses, results, strict=True) if isinstance(result, list)}
    named = sum(1 for vaddr in samples[0] if frames.get(vaddr) and frames[vaddr][-1].function)
    lined = sum(1 for vaddr in samples[1] if frames.get(vaddr) and frames[vaddr][0].line > 0)
    inlined = sum(1 for vaddr in samples[2] if len(frames.get(vaddr) or ()) > 1)
    return LookupCheck(
        True,
        SAMPLE_SIZE,
        ClaimCheck(len(samples[0]), named),
        ClaimCheck(len(samples[1]), lined),
        ClaimCheck(len(samples[2]), inlined),
    )


class AnsweredShares(NamedTuple):
    """The coverage shares as lookups bear them out: each measured share times its answered ratio."""

    names: float
    lines: float
    inlined_answered: float  # the ratio alone: inline chains need only come back where recorded


def borne_out(check: ClaimCheck) -> float:
    """The part of a claim that counts: all of it when at least ``ANSWERED_THRESHOLD`` of its
    sample was answered (a sample's noise must not flip a verdict), else the part answered."""
    return 1.0 if check.ratio >= ANSWERED_THRESHOLD else check.ratio


def answered_shares(coverage: CoverageReport, check: LookupCheck | None) -> AnsweredShares:
    names = coverage.share(coverage.name_bytes)
    lines = coverage.share(coverage.line_bytes)
    if check is None or not check.checked:
        return AnsweredShares(names, lines, 1.0)
    return AnsweredShares(names * borne_out(check.names), lines * borne_out(check.lines), borne_out(check.inlined))

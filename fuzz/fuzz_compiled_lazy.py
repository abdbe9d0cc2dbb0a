"""Differential fuzz target: a cold lookup through the compiled source's lazy units against the Python runs.

``python fuzz/fuzz_compiled_lazy.py [libFuzzer options] [corpus dir]``. Inputs as
``fuzz_compiled_dwarf.py`` reads them (a template's DWARF with sections replaced, its symbols
kept), seeds the same. The addresses asked are the edges of every region and of the reference's
runs (the Python reference's) of the first :data:`MAX_UNITS` units (at most :data:`MAX_ADDRESSES`), in a shuffled order
(spans built in any order answer alike); each is looked up through ``DwarfSymbolAnswers.lookup_runs``
with the compiled source (``LazyUnit``, the Python runs where it gives a unit up) and without it.
A different answer (frames, or the error's type and text) is a finding (AssertionError), as is
anything the compiled side raises that the reference does not; an input the reader refuses as a
whole (a SymbolizeError) is fine.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.fuzz_compiled_dwarf import Template, sections_of, seeds, template_answers
from fuzz.harness import Target, main

MAX_UNITS = 4
MAX_ADDRESSES = 400


def compare(chosen: Template, sections: dict[str, bytes], functions_only: bool) -> int:
    """Both sides on the addresses of ``sections``' first units; the number of addresses asked."""
    from symbolize.formats.answers import AnswerLookup
    from symbolize.formats.dwarf import answers as dwarf_answers
    from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
    from symbolize.formats.errors import MalformedInputError
    from symbolize.formats.native import kernels
    from tests.kernel_twins import kernels_in

    def answers() -> DwarfSymbolAnswers:
        return template_answers(chosen, sections, functions_only)

    reference_source, compiled_source = answers(), answers()
    regions = reference_source.answer_regions()  # raises MalformedInputError: refused as a whole
    vaddrs: set[int] = set()
    for region in regions:
        vaddrs.update((region.low, max(region.high - 1, 0)))
    with kernels_in(None, dwarf_answers):
        edges = answers()
        for key in range(min(len(edges.dwarf._load_units()), MAX_UNITS)):
            try:
                table = edges.answers(key)
            except MalformedInputError:
                continue
            for low, high in zip(table.lows[:MAX_ADDRESSES], table.highs[:MAX_ADDRESSES], strict=True):
                vaddrs.update((low, high - 1))
    asked = sorted(vaddrs)
    random.Random(len(asked)).shuffle(asked)
    asked = asked[:MAX_ADDRESSES]

    def looked_up(source: DwarfSymbolAnswers, compiled: bool) -> list[object]:
        with kernels_in(kernels if compiled else None, dwarf_answers):
            lookup = AnswerLookup(source.answer_regions(), source.lookup_runs)
            found: list[object] = []
            for vaddr in asked:
                try:
                    found.append(lookup.frames_at(vaddr))
                except MalformedInputError as error:
                    found.append(("raised", type(error).__name__, str(error)))
            return found

    reference = looked_up(reference_source, compiled=False)
    try:
        compiled = looked_up(compiled_source, compiled=True)
    except Exception as error:  # any type the reference did not raise
        raise AssertionError(f"the compiled lookup raised: {type(error).__name__}: {error}") from error
    for vaddr, mine, theirs in zip(asked, compiled, reference, strict=True):
        if mine != theirs:
            raise AssertionError(f"{vaddr:#x} answers differently: {str(mine)[:400]} against the reference's "
                                 f"{str(theirs)[:400]}")
    return len(asked)


def make_target() -> Target:
    from symbolize.formats.native import kernels, status

    if kernels is None:
        raise SystemExit(f"fuzz_compiled_lazy: nothing to compare ({status()})")

    def one_input(data: bytes) -> object:
        found = sections_of(data)
        return compare(*found) if found is not None else None

    return one_input


if __name__ == "__main__":
    main("compiled-lazy", make_target, sys.argv, built_seeds=seeds)

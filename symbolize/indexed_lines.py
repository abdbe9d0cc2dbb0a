"""A warm profile rewrite's Lines: the mapping's frames from its persistent indexes, through the kernel.

When every source of a mapping's module answers from its persistent index and the compiled
kernels are built, :func:`attach_indexed_lines` looks the whole batch of addresses up in one call
(``profile_answers``, native/src/warm_frames.rs), which hands back each distinct answer, frame
and function once, as ids. A pprof ``Function`` is then made once per distinct function (names
decoded, full demangling remembered, as ``IndexedObject._name`` does), each answer's ``Line``
entries are written once as protobuf bytes, and a location gets its lines by one
``MergeFromString``: per location, only that call and the summary's count stay in Python.

The reference is the Python path this replaces in :mod:`symbolize.rewrite`: ``Module.lookup``
through ``IndexedObject.frames_at``, then ``_attach_lines`` frame by frame. Both give the same
profile message and the same summary (``tests/test_indexed_lines.py``): Functions are made in the
same order (the order their frames are first attached), Lines hold the same fields, and the
summary counts in location order. Where the kernel cannot answer as the reference would (a
source not indexed, an index given up, a line or column past int64, which protobuf refuses), it
returns None before touching the profile, and the Python path runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from symbolize.demangle import remember
from symbolize.formats.native import kernels
from symbolize.index.indexed import IndexedObject
from symbolize.module import Module, Reason
from symbolize.proto.profile_pb2 import Location
from symbolize.summary import NOT_COVERED_DETAIL, MappingSummary

# (function name or None, file or None, start line) -> the pprof Function id (rewrite._FunctionTable).
FunctionIds = Callable[[str | None, str | None, int], int]

# An answer's facts, as ProfileAnswers.flags holds them (native/src/warm_frames.rs).
COVERED, FUNCTIONS, FILES, LINES, INLINES = 1, 2, 4, 8, 16


class NamedFacts(NamedTuple):
    """What a mapping's named locations held, for its summary and its flags (any over every frame)."""

    named: int = 0
    functions: bool = False
    files: bool = False
    lines: bool = False
    inlines: bool = False


def attach_indexed_lines(
    module: Module,
    to_look_up: Sequence[tuple[Location, int]],
    summary: MappingSummary,
    function_ids: FunctionIds,
) -> NamedFacts | None:
    """Name each ``(location, vaddr)`` from ``module``'s indexes, counting each in ``summary``;
    None (nothing touched) where the Python path must answer the batch."""
    if kernels is None:
        return None
    sources = module.sources
    if not all(isinstance(source, IndexedObject) for source in sources):
        return None
    # A source asked twice answers the same.
    indexed = list(dict.fromkeys(source for source in sources if isinstance(source, IndexedObject)))
    runs = [source.compiled_runs() for source in indexed]
    if not all(runs):
        return None
    try:
        answers = kernels.profile_answers(runs, [vaddr for _, vaddr in to_look_up])
    except OverflowError:
        return None  # an address outside 64 bits: the Python path says what it says
    except kernels.IndexInconsistentError as error:
        position = error.args[0]
        if 0 <= position < len(indexed):
            indexed[position].give_up_index()
        return None
    if not answers.fits:
        return None

    # Each read of a kernel attribute converts its whole vector: each is read once.
    keys, flags, results = answers.functions, answers.flags, answers.results
    # Each function key's fields, decoded as IndexedObject decodes them; pprof Functions made in
    # the order the reference makes them (frame by frame, location by location).
    fields = _function_fields(indexed, runs, keys)
    function_of = [0] * len(keys)
    for key in answers.function_order:
        function_of[key] = function_ids(*fields[key])
    blobs = answers.line_bytes(function_of)

    broken = [_broken_detail(indexed[source], error) for source, error in answers.broken]
    unnamed_reason = module.unnamed_reason()
    named = 0
    seen = 0
    merge = Location.MergeFromString
    for (location, _), result in zip(to_look_up, results, strict=True):
        if result >= 0:
            if flags[result] & COVERED:
                merge(location, blobs[result])
                named += 1
                seen |= flags[result]
                summary.count_named()
            else:
                summary.count_unnamed(Reason.NOT_COVERED, NOT_COVERED_DETAIL)
        elif result == -1:
            summary.count_unnamed(unnamed_reason)
        else:
            summary.count_unnamed(Reason.DAMAGED_DEBUG_INFO, broken[-2 - result])
    return NamedFacts(
        named=named,
        functions=bool(seen & FUNCTIONS),
        files=bool(seen & FILES),
        lines=bool(seen & LINES),
        inlines=bool(seen & INLINES),
    )


def _function_fields(
    indexed: list[IndexedObject], runs: list[Any], keys: Sequence[tuple[int, int, int, int, int]]
) -> list[tuple[str | None, str | None, int]]:
    """(name, file, start line) of each function key, strings decoded once per source and id;
    each name's stored full demangling goes to the demangler's memo (``IndexedObject._name``)."""
    wanted: list[set[int]] = [set() for _ in indexed]
    for source, *string_ids, _ in keys:
        wanted[source].update(string_ids)
    texts: list[dict[int, str | None]] = []
    for source, ids in enumerate(wanted):
        ordered = sorted(ids)
        data = runs[source].strings(ordered)
        texts.append(
            {
                string_id: None if raw is None else raw.decode("utf-8", "surrogateescape")
                for string_id, raw in zip(ordered, data, strict=True)
            }
        )
    fields = []
    remembered: set[tuple[int, int]] = set()
    for source, name_id, full_id, file_id, start_line in keys:
        strings = texts[source]
        name = strings[name_id]
        if name is not None and full_id and (source, name_id) not in remembered:
            remembered.add((source, name_id))
            remember(name, strings[full_id] or name)
        fields.append((name, strings[file_id], start_line))
    return fields


def _broken_detail(source: IndexedObject, error: int) -> str:
    """What ``frames_at`` raises for the broken region numbered ``error``, as a summary's detail."""
    return source.error_details[error - 1]

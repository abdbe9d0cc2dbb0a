"""What a symbolization run did, per mapping and in total: for stderr and for ``--json-summary``.

``Summary.to_json()`` has this shape (a promise to scripts)::

    {"mappings": [{"filename": str, "binary": str|null, "debug_file": str|null,
                   "locations": N, "named": N, "unnamed": N, "reasons": {reason: N},
                   "details": [{"reason": reason, "detail": str, "count": N}],
                   "missing_lines": str|null, "damaged_debug_info": str|null,
                   "refused": [str], "slice": str|null, "slice_by": str|null,
                   "file_offsets_from": str|null, "unverified": bool,
                   "missed": [{"file": str, "reason": reason, "tried": [str], "detail": str}],
                   "addresses": "runtime"|"file-relative" (OTLP input only)}],
     "locations": N, "named": N, "unnamed": N,
     "nothing_to_name": bool,
     "unnamed_value_share": {sample_type_name: float 0..1},
     "top_functions": {sample_type_name: [{"function": str, "value": N, "share": float}]},
     "drop_frames": {"pattern": str, "source": "heap default"|"given"|"profile"} | null,
     "gates": [{"gate": "fail-unnamed-above"|"require-verified", "subject": str,
                "detail": str, "share": float|null, "limit": float|null}],
     "downloads": [str]}

``reason`` is a :class:`symbolize.module.Reason` value (``"binary-not-found"``,
``"not-covered"``, ...); ``"reasons"`` counts unnamed locations by it, most
first. ``"details"`` says more where there is more to say (an error's message,
what a mapping is), one entry per distinct (reason, detail), most first; a
location counted under a reason with no detail has no entry there.
Locations that already had lines before the run count as named; ``nothing_to_name`` is true
when every location had (the profile came named). ``top_functions`` lists, for each sample type,
the leaf functions with the highest total value, highest first, each with its share of the
type's total absolute value; frames matching the profile's ``drop_frames`` are skipped as pprof
drops them (the frame and its callees), so the leaf is the first caller kept.
``"damaged_debug_info"`` says why a part of the debug info of the mapping's files cannot be read
at all, when that is so: the DWARF (a section past the decompression cap, a first unit without a
length; the symbol table still names) or the MiniDebugInfo (the other tables and the DWARF still
name). Addresses nothing else names are counted under ``"damaged-debug-info"``.
``"refused"`` lists the candidate debug files found and turned down, each ``"path: why"`` (a
build ID, CRC32 or DWO ID that differs, a file that cannot be read, a file outside the directory
it was looked up in): debug files, dSYMs and PDBs, and the ``.dwo``/``.dwp`` and dwz files the
DWARF asked for while the mapping's addresses were looked up.
``"slice"`` is the architecture used of a universal (fat) Mach-O binary, else null;
``"slice_by"`` what chose it: ``"uuid"`` (the mapping's), ``"mapping size"`` or ``"addresses"``
(symbolize/discovery/slices.py), ``"default"`` (nothing told the slices apart: the host's).
``"file_offsets_from"`` says, for a mapping of a universal binary with a file offset, where that
offset was read to count from: ``"slice"`` or ``"fat file"`` (the kernel's and vmmap's way: the
slice's offset plus the segment's; symbolize/normalize.py); else null.
``"unverified"`` is true when the binary was found by its file name only (the mapping has no
build ID to check it by, or it is the module of ``module+0xOFFSET`` frames), so it may be another
build of that name; a file found by name whose size
or segments contradict the mapping is not used: its path is in ``"refused"`` with the reason, and
its locations are counted under ``"mapping-contradicts-file"``.
``"missed"`` lists the files of the mapping that the servers were asked for (``--debuginfod``,
``--symbol-server``, ``--remote``) and did not give: the binary or debug file (``"file"``, what
it is and its ID), ``"not-on-server"`` (every server answered that it has none) or
``"server-unreachable"`` (one could not be reached or failed, and none of the others had it), the
URLs tried and what the servers said. A location nothing names is then counted under that reason,
with the miss as its detail.
``"addresses"``, for a mapping of an OTLP export only, says how its locations' addresses were
read: ``"runtime"`` (inside the mapping, as the spec says) or ``"file-relative"`` (the file's own
virtual addresses, what the OpenTelemetry eBPF profiler sends; symbolize/otlp/rewrite.py).
``"downloads"`` says what was fetched from servers and from where, and how many files came from
the download caches (one line, empty when no server or cache was asked).
``"drop_frames"`` is the profile's ``drop_frames`` as written and where it comes from: ``"heap
default"`` (a heap profile's allocator frames, :data:`symbolize.drop_frames.HEAP_DROP_FRAMES`),
``"given"`` (``--drop-frames``) or ``"profile"`` (the input's own); null when there is none.
``"gates"`` lists what tripped ``profile``'s CI gates (:meth:`Summary.check_gates`), empty when
none did or none was asked: ``fail-unnamed-above`` once per sample type whose unnamed share
(``share``, 0..1) is above ``limit`` (0..1; ``subject`` the sample type), ``require-verified``
once per mapping whose binary was matched by file name only (``subject`` the mapping's file
name; ``share`` and ``limit`` null).
``"missing_lines"`` says why named locations have no file or line, when none has one: discovery
found no debug file (a stripped binary without its dSYM or debug file), or the debug file found
says why it has none (a publics-only PDB); else null.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from symbolize.formats.types import Frame
from symbolize.module import Reason, RemoteMiss, Unknown

# Why an answer of frames that name neither a function nor a file counts as unnamed.
NOT_COVERED_DETAIL = "frames without a function or file"


# profile's CI gates (README "Commands"; the exit codes are symbolize/cli/exits.py's).
GATE_UNNAMED_ABOVE = "fail-unnamed-above"
GATE_REQUIRE_VERIFIED = "require-verified"


class GateFailure(NamedTuple):
    """One thing that trips a gate: a sample type's unnamed share, or a mapping matched by name only."""

    gate: str  # GATE_UNNAMED_ABOVE or GATE_REQUIRE_VERIFIED
    subject: str  # the sample type, or the mapping's file name
    detail: str  # what tripped it, for people
    share: float | None = None  # the unnamed share (0..1), for GATE_UNNAMED_ABOVE
    limit: float | None = None  # the limit (0..1), for GATE_UNNAMED_ABOVE


class DropFrames(NamedTuple):
    """The profile's ``drop_frames`` as written, and where it comes from (module docstring)."""

    pattern: str
    source: str  # "heap default", "given", "profile"


class TopFunction(NamedTuple):
    """A leaf function's total for one sample type, and its share (0..1) of that type's total."""

    function: str
    value: int
    share: float


@dataclass
class MappingSummary:
    """Outcome for one mapping of the profile."""

    filename: str
    binary: str | None = None
    debug_file: str | None = None
    locations: int = 0
    named: int = 0
    already_symbolized: int = 0
    reasons: Counter[Reason] = field(default_factory=Counter)
    details: Counter[tuple[Reason, str]] = field(default_factory=Counter)
    # Why the names came without lines (no debug file found), when that is so.
    missing_lines: str | None = None
    # The slice of a universal binary the mapping was read from, and what chose it (see slice_by above).
    slice: str | None = None
    slice_by: str | None = None
    # Where a universal binary's mapping file offset counts from: "slice" or "fat file" (see above).
    file_offsets_from: str | None = None
    # Why the debug info cannot be read at all, when so (only the symbol table names addresses).
    damaged_debug_info: str | None = None
    # Candidate debug files turned down, "path: why".
    refused: list[str] = field(default_factory=list)
    # The binary was matched by its file name only: the mapping has no build ID to verify it by.
    unverified: bool = False
    # Files of the mapping the servers were asked for and did not give.
    missed: list[RemoteMiss] = field(default_factory=list)
    # What the addresses of an OTLP mapping were read as: "runtime" (inside the mapping, as the
    # spec says) or "file-relative" (the file's own virtual addresses); None for pprof.
    addresses: str | None = None

    @property
    def unnamed(self) -> int:
        return self.locations - self.named

    def count_named(self) -> None:
        self.locations += 1
        self.named += 1

    def count_answer(self, result: list[Frame] | Unknown) -> list[Frame] | None:
        """Count one location's lookup answer: its frames when they name it (a function or a file), else
        None, counted unnamed with the reason."""
        if isinstance(result, Unknown):
            self.count_unnamed(result.reason, result.detail)
            return None
        if not any(frame.function or frame.file for frame in result):
            self.count_unnamed(Reason.NOT_COVERED, NOT_COVERED_DETAIL)
            return None
        self.count_named()
        return result

    def count_unnamed(self, reason: Reason, detail: str = "") -> None:
        self.locations += 1
        self.reasons[reason] += 1
        if detail:
            self.details[reason, detail] += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "binary": self.binary,
            "debug_file": self.debug_file,
            "locations": self.locations,
            "named": self.named,
            "unnamed": self.unnamed,
            "reasons": {reason.value: count for reason, count in self.reasons.most_common()},
            "details": [
                {"reason": reason.value, "detail": detail, "count": count}
                for (reason, detail), count in self.details.most_common()
            ],
            "missing_lines": self.missing_lines,
            "damaged_debug_info": self.damaged_debug_info,
            "refused": list(self.refused),
            "slice": self.slice,
            "slice_by": self.slice_by,
            "file_offsets_from": self.file_offsets_from,
            "unverified": self.unverified,
            "missed": [
                {"file": miss.what, "reason": miss.reason.value, "tried": list(miss.tried), "detail": miss.detail}
                for miss in self.missed
            ],
            **({"addresses": self.addresses} if self.addresses is not None else {}),
        }


@dataclass
class Summary:
    """Outcome of one run: per mapping, totals, and how much sample value stays unnamed.

    ``unnamed_value_share`` maps each sample type name to the share (0..1) of that
    type's total absolute value carried by samples whose leaf location has no
    name. ``top_functions_by_type`` maps each sample type name to its leaf
    functions with the highest value, highest first.
    """

    mappings: list[MappingSummary] = field(default_factory=list)
    unnamed_value_share: dict[str, float] = field(default_factory=dict)
    top_functions_by_type: dict[str, list[TopFunction]] = field(default_factory=dict)
    drop_frames: DropFrames | None = None
    gates: list[GateFailure] = field(default_factory=list)
    # What was fetched from servers and from where (symbolize/remote/fetcher.py's report).
    downloads: list[str] = field(default_factory=list)

    def check_gates(self, *, unnamed_above: float | None = None, require_verified: bool = False) -> list[GateFailure]:
        """What trips ``profile``'s gates, also kept in :attr:`gates`: each sample type whose unnamed
        share is above ``unnamed_above`` (a share, 0..1; None: no such gate) and, with
        ``require_verified``, each mapping whose binary was matched by file name only."""
        found: list[GateFailure] = []
        if unnamed_above is not None:
            for sample_type, share in self.unnamed_value_share.items():
                if share > unnamed_above:
                    found.append(
                        GateFailure(
                            GATE_UNNAMED_ABOVE,
                            sample_type,
                            f"unnamed {sample_type or 'value'}: {share:.1%} of the value, above {unnamed_above:.1%}",
                            share,
                            unnamed_above,
                        )
                    )
        if require_verified:
            for mapping in self.mappings:
                if mapping.unverified:
                    found.append(
                        GateFailure(
                            GATE_REQUIRE_VERIFIED,
                            mapping.filename,
                            f"{mapping.filename}: matched by file name only to {mapping.binary}, no build ID checked",
                        )
                    )
        self.gates = found
        return found

    @property
    def top_functions(self) -> list[tuple[str, int]]:
        """``(function, value)`` for the first sample type."""
        first = next(iter(self.top_functions_by_type.values()), [])
        return [(top.function, top.value) for top in first]

    @property
    def top_functions_value_type(self) -> str:
        return next(iter(self.top_functions_by_type), "")

    @property
    def nothing_to_name(self) -> bool:
        """True when every location was named before the run."""
        return sum(mapping.already_symbolized for mapping in self.mappings) == self.locations

    @property
    def locations(self) -> int:
        return sum(mapping.locations for mapping in self.mappings)

    @property
    def named(self) -> int:
        return sum(mapping.named for mapping in self.mappings)

    @property
    def unnamed(self) -> int:
        return sum(mapping.unnamed for mapping in self.mappings)

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON-ready data (shape in the module docstring)."""
        return {
            "mappings": [mapping.to_json() for mapping in self.mappings],
            "locations": self.locations,
            "named": self.named,
            "unnamed": self.unnamed,
            "nothing_to_name": self.nothing_to_name,
            "unnamed_value_share": dict(self.unnamed_value_share),
            "top_functions": {
                sample_type: [top._asdict() for top in tops] for sample_type, tops in self.top_functions_by_type.items()
            },
            "drop_frames": self.drop_frames._asdict() if self.drop_frames is not None else None,
            "gates": [failure._asdict() for failure in self.gates],
            "downloads": list(self.downloads),
        }

    def format_text(self, *, top: int = 10) -> str:
        """Human-readable lines for stderr, ending with the ``top`` leaf functions."""
        lines: list[str] = []
        for mapping in self.mappings:
            source = mapping.debug_file or mapping.binary
            via = f" (via {source})" if source and source != mapping.filename else ""
            if mapping.slice:
                chosen = f", by {mapping.slice_by}" if mapping.slice_by and mapping.slice_by != "uuid" else ""
                offsets = f", offsets from the {mapping.file_offsets_from}" if mapping.file_offsets_from else ""
                via += f" [{mapping.slice} slice{chosen}{offsets}]"
            already = ""
            if mapping.already_symbolized:
                already = f", {mapping.already_symbolized} already symbolized"
            lines.append(
                f"{mapping.filename or '<no file>'}{via}: {mapping.named}/{mapping.locations} named{already}"
            )
            if mapping.missing_lines:
                lines.append(f"  no lines: {mapping.missing_lines}")
            if mapping.addresses is not None:
                lines.append(f"  addresses: {mapping.addresses}")
            if mapping.unverified:
                lines.append("  unverified: matched by file name only (no build ID to check it by)")
            if mapping.damaged_debug_info:
                damaged = Reason.DAMAGED_DEBUG_INFO.value
                lines.append(f"  {damaged}: {mapping.damaged_debug_info} (the rest of the file still names)")
            for refusal in mapping.refused:
                lines.append(f"  refused: {refusal}")
            for miss in mapping.missed:
                lines.append(f"  {miss.describe()}")
            for reason, count in mapping.reasons.most_common():
                lines.append(f"  {count} unnamed: {reason.value}")
                for (detailed, detail), times in mapping.details.most_common():
                    if detailed is reason:
                        lines.append(f"    {times}: {detail}")
        lines.append(f"total: {self.named}/{self.locations} locations named, {self.unnamed} unnamed")
        if self.nothing_to_name:
            lines.append("nothing to name: every location already had its function names")
        for sample_type, share in self.unnamed_value_share.items():
            lines.append(f"unnamed {sample_type}: {share:.1%} of the value")
        if self.drop_frames is not None and self.drop_frames.source == "heap default":
            lines.append(
                "drop_frames: the allocator's frames (heap profile default; --drop-frames '' keeps them): "
                "top functions and pprof start at the caller"
            )
        elif self.drop_frames is not None:
            lines.append(f"drop_frames ({self.drop_frames.source}): {self.drop_frames.pattern}")
        for sample_type, tops in self.top_functions_by_type.items():
            if not tops or top <= 0:
                continue
            lines.append(f"top leaf functions by {sample_type or 'value'}:")
            width = max(len(str(entry.value)) for entry in tops[:top])
            for entry in tops[:top]:
                lines.append(f"  {entry.value:>{width}} {entry.share:6.1%}  {entry.function}")
        for failure in self.gates:
            lines.append(f"gate --{failure.gate} failed: {failure.detail}")
        lines.extend(self.downloads)
        return "\n".join(lines)

"""The verdict: what a profile of this binary will show, why, and the smallest change that fixes it.

Thresholds (``COVERAGE_THRESHOLD`` = half of the executable code bytes):

- *names* when function symbols or the debug info's function entries cover
  at least half of the code bytes;
- *names and lines* when line tables cover at least half as well;
- *with inlines* when, besides, the debug info's function entries (the DIE
  trees inline chains are read from) cover at least half and record at
  least one inlined call (optimised code always inlines something);
- else *bare hex*.

Debug files count only when found and matching: the coverage figures come
from those alone. Frame pointers do not change what frames are named, only
how many frames a frame-pointer walk records: ``--require-frame-pointers``
holds when at least ``FRAME_POINTER_THRESHOLD`` of the sampled functions that
call others set one up. Leaf functions are left out of that share: GCC gives
a leaf that needs no stack frame none, whatever the flags, and a frameless
leaf costs a walk only its caller; hand-written assembly and thunks leave a
few percent out even in builds that ask for frame pointers.
"""

from __future__ import annotations

from collections.abc import Sequence

from symbolize.audit.distro import DistributionFile, debug_package_fixes
from symbolize.audit.lookups import ANSWERED_THRESHOLD, answered_shares
from symbolize.audit.report import (
    COVERAGE_THRESHOLD,
    BinaryAudit,
    CoverageReport,
    DebugFileReport,
    DebugInfoReport,
    FramePointerReport,
    Identity,
    LookupCheck,
    ProfileView,
    Requirement,
    SymbolReport,
    SymbolTableKind,
    Verdict,
)
from symbolize.discovery.paths import base_name

FRAME_POINTER_THRESHOLD = 0.9


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def judge(
    identity: Identity,
    symbols: SymbolReport,
    debug_info: DebugInfoReport,
    coverage: CoverageReport,
    frame_pointers: FramePointerReport,
    *,
    rust: bool = False,
    lookups: LookupCheck | None = None,
    distribution: DistributionFile | None = None,
) -> Verdict:
    """What a profile of the binary shows, why and the fixes (module docstring). ``rust``: rustc
    built it (fixes in Cargo's terms); ``distribution``: a distribution installed it (its debug
    info comes as a debug package or from debuginfod, never from a rebuild)."""
    reasons: list[str] = []
    fixes: list[str] = []
    # Each share as far as lookups bear it out: what a profile will actually show.
    names, lines, inlines_answered = answered_shares(coverage, lookups)
    functions = coverage.share(coverage.function_bytes)
    # A build-ID row is only where debug info could have been; a debuglink or a given file is a
    # claim. Neither matters once some separate debug file was found and matches.
    separate = ("build-id", "debuglink", "given", "pdb", "dsym")
    served = any(f.how in separate and f.found and f.matches for f in debug_info.files)
    claims = ("debuglink", "given", "pdb", "dsym")
    missing = [] if served else [f for f in debug_info.files if f.how in claims and not f.found]
    wrong = [] if served else [f for f in debug_info.files if f.found and f.matches is False]
    unresolved_split = [unit for unit in debug_info.split_units if not unit.resolved]

    if coverage.code_bytes == 0:
        return Verdict(ProfileView.BARE_HEX, ("the file holds no executable code",), (), "unknown")

    if names >= COVERAGE_THRESHOLD:
        shows = ProfileView.NAMES
        if lines >= COVERAGE_THRESHOLD:
            shows = ProfileView.NAMES_LINES
            if (
                functions >= COVERAGE_THRESHOLD
                and coverage.inlined_calls > 0
                and inlines_answered >= COVERAGE_THRESHOLD
            ):
                shows = ProfileView.WITH_INLINES
    else:
        shows = ProfileView.BARE_HEX

    # Why, from the most basic to the finest.
    if shows is ProfileView.BARE_HEX:
        if symbols.kind is SymbolTableKind.NONE:
            reasons.append("no function symbols and no debug info that names functions")
        else:
            reasons.append(
                f"function symbols ({symbols.kind.value}, {symbols.function_symbols}) name only "
                f"{_percent(names)} of the code bytes"
            )
    exported_only = symbols.exported_only and functions < COVERAGE_THRESHOLD
    if exported_only:
        reasons.append(_exported_only_reason(symbols))
    for report in missing:
        reasons.append(f"the {report.how} debug file is not found ({report.detail})")
    for report in wrong:
        reasons.append(f"the {report.how} debug file {report.path or ''} belongs to another build: {report.detail}")
    if unresolved_split:
        reasons.append(
            f"{len(unresolved_split)} of {len(debug_info.split_units)} split-DWARF units are not found "
            f"({', '.join(sorted({unit.dwo_name for unit in unresolved_split})[:3])})"
        )
    measured_lines = coverage.share(coverage.line_bytes)
    if shows.rank >= ProfileView.NAMES.rank and measured_lines < COVERAGE_THRESHOLD:
        reasons.append(
            "no line tables"
            if coverage.line_bytes == 0
            else f"line tables cover only {_percent(measured_lines)} of the code"
        )
    if shows is ProfileView.NAMES_LINES:
        if coverage.inlined_calls == 0 and functions >= COVERAGE_THRESHOLD:
            reasons.append("the debug info records no inlined calls")
        elif functions >= COVERAGE_THRESHOLD and coverage.inlined_calls > 0:
            pass  # the inline chains recorded do not come back: said with the lookups' figures
        else:
            reasons.append(f"the debug info's function entries cover only {_percent(functions)} of the code")
    if debug_info.broken_units:
        reasons.append(f"{len(debug_info.broken_units)} compile units cannot be decoded")
    unanswered = _unanswered(coverage, lookups)
    reasons.extend(unanswered)
    if shows is ProfileView.WITH_INLINES and not reasons:
        reasons.append(
            f"symbols cover {_percent(coverage.share(coverage.symbol_bytes))}, line tables {_percent(measured_lines)}, "
            f"function entries {_percent(functions)} of the code; {coverage.inlined_calls} inlined calls recorded"
            + _confirmed(lookups)
        )

    # A PE's missing PDB is the same fix as its exports-only table (link with /DEBUG, ship the PDB).
    exported_only_fix = exported_only and not (identity.format == "pe" and (missing or wrong))
    if exported_only_fix:
        fixes.append(_exported_only_fix(identity.format, symbols.table, rust))
    steps = _fixes(identity, shows, missing, wrong, bool(unresolved_split), rust)
    if unanswered and not (missing or wrong or unresolved_split):
        # More flags will not help: the debug info is there and does not answer.
        steps = [
            "the debug info is found but does not answer where it claims to: check the build's split units "
            "(.dwp/.dwo from this very build) and that the unit ranges cover the code "
            "(llvm-symbolizer on the sampled addresses shows the same)"
        ]
    # Keeping the local symbols replaces "keep the symbol table" (the first step, when given).
    fixes.extend(step for step in steps if not (exported_only_fix and step == _first_step(identity, rust)))
    split_off = identity.debug_id is not None or any(f.how == "debuglink" for f in debug_info.files)
    if distribution is not None and not served and split_off and shows is not ProfileView.WITH_INLINES:
        # Its debug info was split off by the distribution: install it, do not rebuild.
        build_id = identity.debug_id if identity.debug_id_kind == "gnu-build-id" else None
        fixes = debug_package_fixes(distribution, build_id)
    walks = _frame_pointer_walks(identity, frame_pointers)
    fp_share = frame_pointers.non_leaf_share
    own_share = frame_pointers.own_non_leaf_share
    if distribution is not None:
        fix = (
            "frame pointers: the distribution built it; walk its frames with DWARF unwinding (perf record "
            "--call-graph dwarf) or use a distribution built with frame pointers (Fedora 38+, Ubuntu 24.04+)"
        )
    elif rust:
        fix = "frame pointers: -C force-frame-pointers=yes (RUSTFLAGS)"
    else:
        fix = "frame pointers: -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"
    if walks == "lose-callers" and fp_share is not None and fp_share < FRAME_POINTER_THRESHOLD:
        callers = frame_pointers.sampled - frame_pointers.leaves_without
        reasons.append(
            f"only {_percent(fp_share)} of {callers} sampled non-leaf functions set up a frame pointer: "
            "frame-pointer stack walks will skip callers"
        )
        fixes.append(fix)
    elif walks == "lose-callers" and own_share is not None:
        callers = frame_pointers.own_sampled - frame_pointers.own_leaves_without
        reasons.append(
            f"only {_percent(own_share)} of the program's own {callers} sampled non-leaf functions set up a frame "
            f"pointer (the prebuilt Rust std's do: {_percent(fp_share or 0.0)} of all sampled): frame-pointer "
            "stack walks (gperftools, mimalloc-pprof, perf without DWARF) lose the program's callers, so a heap "
            "profile's stacks stop after the allocator"
        )
        fixes.append(fix)
    return Verdict(shows, tuple(reasons), tuple(fixes), walks)


def _frame_pointer_walks(identity: Identity, frame_pointers: FramePointerReport) -> str:
    """What a frame-pointer stack walk records: ``whole`` stacks, or it ``lose-callers``; ``unwind-tables``
    where stacks are walked through them (Windows x64's .pdata); ``unknown`` with no prologue decoded."""
    # Windows x64 stacks are walked through .pdata, not frame pointers.
    if identity.format == "pe" and ".pdata" in frame_pointers.unwind_tables:
        return "unwind-tables"
    shares = [s for s in (frame_pointers.non_leaf_share, frame_pointers.own_non_leaf_share) if s is not None]
    if not shares:
        return "unknown"
    return "lose-callers" if min(shares) < FRAME_POINTER_THRESHOLD else "whole"


def _unanswered(coverage: CoverageReport, lookups: LookupCheck | None) -> list[str]:
    """Each claim the lookups contradict: measured, but not what a lookup answers."""
    if lookups is None or not lookups.checked:
        return []
    found = []
    if lookups.note:
        found.append(lookups.note)
    claims = (
        ("function symbols and entries name", coverage.name_bytes, lookups.names, "a function name"),
        ("line tables cover", coverage.line_bytes, lookups.lines, "a line"),
        ("inlined calls cover", coverage.inlined_bytes, lookups.inlined, "an inline chain"),
    )
    for what, covered, check, answer in claims:
        if check.sampled and check.ratio < ANSWERED_THRESHOLD:
            found.append(
                f"{what} {_percent(coverage.share(covered))} of the code, but a lookup answers {answer} at only "
                f"{check.answered} of {check.sampled} addresses sampled there: the debug info does not reach them "
                "(a unit's ranges miss its code, or its split unit does not answer)"
            )
    return found


def _confirmed(lookups: LookupCheck | None) -> str:
    if lookups is None or not lookups.checked:
        return ""
    checks = (lookups.names, lookups.lines, lookups.inlined)
    return (
        f"; lookups answer at {sum(c.answered for c in checks)} of {sum(c.sampled for c in checks)} sampled addresses"
    )


def _exported_only_reason(symbols: SymbolReport) -> str:
    count = symbols.function_symbols
    if symbols.table == "exports":
        return (
            f"exports only (the PE export table, {count} functions): a profile will show exported names only; "
            "internal functions fall back to the nearest export before them, so their frames carry a wrong name"
        )
    where = {"external": "external symbols only (strip -x)", "dynamic": "only .dynsym (strip --strip-all)"}
    return (
        f"{where.get(symbols.table, 'exported symbols only')}, {count} functions: a profile will show exported "
        "names only; internal (static) functions stay unnamed"
    )


def _exported_only_fix(file_format: str, table: str, rust: bool) -> str:
    if file_format == "pe":
        return "keep the internal functions' names: link with /DEBUG and ship the .pdb (MinGW: do not strip)"
    if rust:
        return 'keep the local symbols: strip = "debuginfo" at most ([profile.release]), or ship the debug info'
    if file_format == "macho":
        return "keep the local symbols: strip -S (debug info only) instead of strip -x, or ship the .dSYM"
    if table == "external":
        return "keep the local symbols: strip --strip-debug instead of strip -x (--discard-all), or ship a debug file"
    return "keep .symtab: strip --strip-debug instead of --strip-all, or ship a debug file (or MiniDebugInfo)"


def _fixes(
    identity: Identity,
    shows: ProfileView,
    missing: Sequence[DebugFileReport],
    wrong: Sequence[DebugFileReport],
    unresolved_split: bool,
    rust: bool,
) -> list[str]:
    """The smallest change that gets to names and lines (and the inline chains, when one step away)."""
    fixes: list[str] = []
    name = base_name(identity.path)  # a Windows path too (C:\app\x.exe)
    if missing or wrong:
        fixes.append(_ship_fix(identity.format))
    if unresolved_split:
        fixes.append(f"ship {name}.dwp beside the binary (or the .dwo files at their DW_AT_dwo_name paths)")
    if missing or wrong or unresolved_split:
        return fixes
    steps = _steps(identity, rust)
    if shows is ProfileView.BARE_HEX:
        fixes.append(steps[0])
    if shows.rank < ProfileView.NAMES_LINES.rank:
        fixes.append(steps[1])
    elif shows is ProfileView.NAMES_LINES:
        fixes.append(steps[2])
    return fixes


def _first_step(identity: Identity, rust: bool) -> str:
    return _steps(identity, rust)[0]


def _steps(identity: Identity, rust: bool) -> tuple[str, str, str]:
    """Names, then line tables, then inline chains: the fix for each, in the binary format's terms."""
    if rust:
        # rustc built it (its symbols, or .comment): the fix is Cargo's profile, not compiler flags.
        steps = (
            'keep the symbol table: strip = "none" in [profile.release] ("debuginfo" at most, never "symbols" '
            "or true)",
            'line tables: debug = "line-tables-only" in [profile.release] (split-debuginfo = "packed" to ship '
            "them beside the binary)",
            'inline chains: debug = "line-tables-only" or higher in [profile.release]',
        )
    elif identity.format == "pe":
        steps = (
            "write a PDB: link with /DEBUG (lld-link, link.exe) and ship it, or keep the COFF symbols (MinGW: no -s)",
            "line tables: compile with /Zi or /Z7 (clang-cl, cl), -g (MinGW), link with /DEBUG",
            "inline chains: /Zi or /Z7 (clang-cl: -gline-tables-only at least)",
        )
    elif identity.format == "macho":
        steps = (
            "keep the symbol table: strip -S (debug info only) at most, not strip -x or a full strip",
            "line tables: build with -g1 or -gline-tables-only and run dsymutil; ship the .dSYM",
            "inline chains: -gline-tables-only or -g, then dsymutil",
        )
    else:
        steps = (
            "keep the symbol table (strip --strip-debug or objcopy --only-keep-debug + --add-gnu-debuglink, "
            "not strip --strip-all)",
            "line tables: build with -g1 or -gline-tables-only (objcopy --only-keep-debug to ship them apart)",
            "inline chains: -gline-tables-only or -g",
        )
    return steps


def _ship_fix(file_format: str) -> str:
    if file_format == "pe":
        return "ship the .pdb this very build wrote beside the binary or on a symbol server, or give it (--debug-file)"
    if file_format == "macho":
        return "ship the .dSYM dsymutil made from this very build beside the binary, or pass it with --debug-file"
    return (
        "ship the debug file made from this very build beside the binary, or under <debug dir>/.build-id/, "
        "or pass it with --debug-file"
    )


def shortfalls(audit: BinaryAudit, require: Requirement | None, require_frame_pointers: bool) -> list[str]:
    """Why ``audit`` falls short of the requirements ([] when it meets them all)."""
    found: list[str] = []
    shows = audit.verdict.shows
    if require is not None and shows.rank < require.view.rank:
        why = "; ".join(audit.verdict.reasons) or "see the report"
        found.append(f"{audit.identity.path}: --require {require.value}: a profile will show {shows.value} ({why})")
    if require_frame_pointers:
        share = audit.frame_pointers.non_leaf_share
        if share is None:
            found.append(f"{audit.identity.path}: --require-frame-pointers: cannot tell ({audit.frame_pointers.note})")
        elif share < FRAME_POINTER_THRESHOLD:
            found.append(
                f"{audit.identity.path}: --require-frame-pointers: {_percent(share)} of the sampled "
                f"non-leaf functions set up a frame pointer (needs {_percent(FRAME_POINTER_THRESHOLD)})"
            )
    return found

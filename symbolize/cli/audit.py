"""``symbolize audit``: will a profile of this build come back named? (the CLI side of symbolize.audit).

    symbolize audit BINARY... [--debug-file FILE]... [--search-path DIR]... [--debug-dir DIR]...
                    [--cargo PATH] [--target TRIPLE]... [--json] [--require names|lines|inlines]
                    [--require-frame-pointers] [--debuginfod URL]... [--symbol-server SPEC]... [--remote]

Exit codes (a promise to CI scripts): 0 every ``--require`` is met, 1 one falls
short (each reason on stderr; with servers named, a debug file they do not have, checked by
fetching it: symbolize/audit/remote.py), 2 usage, 3 a file cannot be read or its format
has no reader yet. The report is a table per binary (rich, which typer
installs; plain text without it) or, with ``--json``, the versioned document
of ``symbolize.audit``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from symbolize.audit import AuditReport
    from symbolize.audit.cargo import CargoAudit
    from symbolize.audit.report import BinaryAudit, ServerCheck, SymbolReport
    from symbolize.remote.options import RemoteOptions


class RequireChoice(enum.StrEnum):
    names = "names"
    lines = "lines"
    inlines = "inlines"


def audit_command(
    binaries: Annotated[
        list[Path] | None, typer.Argument(metavar="BINARY...", help="Release binaries to audit.")
    ] = None,
    debug_files: Annotated[
        list[Path] | None,
        typer.Option("--debug-file", metavar="FILE", help="A debug file to use when it belongs to the build."),
    ] = None,
    search_paths: Annotated[
        list[Path] | None,
        typer.Option("--search-path", metavar="DIR", help="Where to look for debug files by name."),
    ] = None,
    debug_dirs: Annotated[
        list[Path] | None, typer.Option("--debug-dir", metavar="DIR", help="Debug file directory (.build-id/).")
    ] = None,
    cargo: Annotated[
        Path | None, typer.Option("--cargo", metavar="PATH", help="Cargo.toml of the project that built them.")
    ] = None,
    targets: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            metavar="TRIPLE",
            help="Targets to predict and --require (default: what cargo build builds for, the host's).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON (schema 1) on stdout.")] = False,
    require: Annotated[
        RequireChoice | None, typer.Option("--require", help="Fail (exit 1) unless profiles will show this much.")
    ] = None,
    require_frame_pointers: Annotated[
        bool, typer.Option("--require-frame-pointers", help="Fail (exit 1) unless functions set up frame pointers.")
    ] = False,
    debuginfod: Annotated[
        list[str] | None,
        typer.Option("--debuginfod", metavar="URL", help="Check that this debuginfod server has each debug file."),
    ] = None,
    symbol_servers: Annotated[
        list[str] | None,
        typer.Option("--symbol-server", metavar="SPEC", help="Check that this symbol server has each debug file."),
    ] = None,
    remote: Annotated[
        bool,
        typer.Option("--remote", help="Check the servers the environment names (DEBUGINFOD_URLS, _NT_SYMBOL_PATH)."),
    ] = False,
) -> None:
    """Report what a profile of each binary will show (bare hex, names, lines, inlines) and why."""
    from symbolize.audit import EXIT_UNREADABLE, audit_binaries
    from symbolize.audit.report import Requirement
    from symbolize.cli.commands import download_progress
    from symbolize.errors import SymbolizeError

    if not binaries and cargo is None:
        typer.echo("symbolize: error: give at least one BINARY or --cargo Cargo.toml", err=True)
        raise typer.Exit(2)
    try:
        servers = _named_servers(debuginfod or (), symbol_servers or (), remote)
        report = audit_binaries(
            binaries or [],
            debug_files=debug_files or (),
            search_paths=search_paths or (),
            debug_dirs=debug_dirs or None,
            cargo_manifest=cargo,
            targets=targets or (),
            require=Requirement(require.value) if require is not None else None,
            require_frame_pointers=require_frame_pointers,
            remote=servers,
            download_progress=download_progress(servers),
        )
    except (SymbolizeError, OSError) as err:
        typer.echo(f"symbolize: error: {str(err).replace(chr(10), ' ')}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        _print_report(report)
    for entry in report.unreadable:
        typer.echo(f"symbolize: error: {entry.path}: {entry.reason}", err=True)
    for reason in report.shortfalls:
        typer.echo(f"symbolize: audit: {reason}", err=True)
    raise typer.Exit(report.exit_code)


def _named_servers(
    debuginfod: Sequence[str], symbol_servers: Sequence[str], from_environment: bool
) -> RemoteOptions | None:
    """The servers ``audit`` checks; None when none is named. ``--remote`` that finds none in the
    environment is a usage error (exit 2): the check asked for cannot be made."""
    from symbolize.api import remote_options

    servers = remote_options(
        debuginfod_urls=debuginfod, symbol_servers=symbol_servers, from_environment=from_environment
    )
    if from_environment and servers is None:
        typer.echo("symbolize: error: --remote: DEBUGINFOD_URLS and _NT_SYMBOL_PATH name no server", err=True)
        raise typer.Exit(2)
    return servers


# --- text ------------------------------------------------------------------------------------


def _percent(share: float | None) -> str:
    return "n/a" if share is None else f"{share * 100:.0f}%"


def _symbol_kind(symbols: SymbolReport) -> str:
    """``dynamic-only (exports)``: which table, where the kind alone does not say."""
    kind = symbols.kind.value
    return f"{kind} ({symbols.table})" if symbols.table and symbols.table not in (kind, "none") else kind


def _binary_rows(audit: BinaryAudit) -> list[tuple[str, str]]:
    identity, coverage, frames = audit.identity, audit.coverage, audit.frame_pointers
    rows = [
        ("format", f"{identity.format} {identity.arch}"),
        ("debug ID", f"{identity.debug_id} ({identity.debug_id_kind})" if identity.debug_id else "none"),
        ("symbols", f"{_symbol_kind(audit.symbols)}, {audit.symbols.function_symbols} functions"),
    ]
    for found in audit.debug_info.files:
        state = "found" if found.found else "missing"
        if found.matches is not None:
            state += ", matches" if found.matches else ", DOES NOT MATCH"
        rows.append((f"debug info: {found.how}", f"{found.path or '-'} ({state}) {found.detail}".rstrip()))
    info = audit.debug_info
    if info.dwarf_versions:
        rows.append(("DWARF versions", ", ".join(map(str, info.dwarf_versions))))
    if info.compressed_sections:
        rows.append(("compressed", ", ".join(info.compressed_sections)))
    rows.append(
        (
            "coverage of code",
            f"{coverage.code_bytes} bytes: names {_percent(coverage.share(coverage.name_bytes))}, "
            f"symbols {_percent(coverage.share(coverage.symbol_bytes))}, "
            f"lines {_percent(coverage.share(coverage.line_bytes))}, "
            f"inline info {_percent(coverage.share(coverage.function_bytes))} "
            f"({coverage.inlined_calls} inlined calls)",
        )
    )
    rows.append(
        (
            "frame pointers",
            f"{frames.with_frame_pointer} of {frames.sampled} sampled functions ({_percent(frames.share)})"
            + (f"; {frames.note}" if frames.note else ""),
        )
    )
    rows.append(("unwind tables", ", ".join(frames.unwind_tables) or "none"))
    rows.append(("lookups", _lookup_row(audit)))
    rows.append(("a profile shows", audit.verdict.shows.value))
    walks = audit.verdict.frame_pointer_walks
    rows.append(("frame-pointer walks", _WALKS.get(walks, walks)))
    rows.extend(("why", reason) for reason in audit.verdict.reasons)
    rows.extend(("fix", fix) for fix in audit.verdict.fixes)
    rows.extend((f"server: {check.role}", _server_row(check)) for check in audit.servers)
    return rows


def _server_row(check: ServerCheck) -> str:
    """``on-server http://... (app debuginfo (build ID ...))``, or the verdict and what was answered."""
    where = check.url if check.passed else check.detail or ", ".join(check.tried)
    refused = f"; refused: {'; '.join(check.refused)}" if check.refused else ""
    return f"{check.verdict} ({check.what}){': ' + where if where else ''}{refused}"


_WALKS = {
    "whole": "whole stacks",
    "lose-callers": "lose callers (see why)",
    "unwind-tables": "not used: stacks are walked through .pdata",
    "unknown": "cannot tell",
}


def _lookup_row(audit: BinaryAudit) -> str:
    """How many sampled addresses a lookup answered as the coverage claims."""
    check = audit.lookups
    if check is None or not check.checked:
        return check.note if check is not None else "not checked"
    claims = (("names", check.names), ("lines", check.lines), ("inline chains", check.inlined))
    answered = ", ".join(f"{what} {claim.answered} of {claim.sampled}" for what, claim in claims if claim.sampled)
    return f"{answered or 'nothing to sample'} (up to {check.sample_size} addresses per claim)" + (
        f"; {check.note}" if check.note else ""
    )


def _cargo_rows(cargo: CargoAudit) -> list[tuple[str, str]]:
    rows = [("workspace", f"{cargo.workspace_root} ({', '.join(cargo.members)})")]
    if cargo.rustflags:
        rows.append(("rustflags", f"{' '.join(cargo.rustflags)} ({cargo.rustflags_source})"))
    for profile in cargo.profiles:
        settings = ", ".join(f"{s.key}={s.value}" for s in profile.settings)
        rows.append((f"profile {profile.name}", f"{settings} (inherits {' <- '.join(profile.inherits)})"))
        for override in profile.overrides:
            values = ", ".join(f"{s.key}={s.value}" for s in override.settings)
            rows.append((f"  package {override.package}", values))
    for prediction in cargo.predictions:
        label = f"{prediction.profile} / {prediction.target}"
        rows.append(
            (
                label,
                f"shows {prediction.shows.value}"
                + (f" if {prediction.shows_when_shipped} ships; " if prediction.shows_when_shipped else "; ")
                + f"debug={prediction.debuginfo}, strip={prediction.strip.value} ({prediction.strip.source}), "
                f"split-debuginfo={prediction.split_debuginfo.value}, frame pointers {prediction.frame_pointers}; "
                f"emits {'; '.join(prediction.emits)}",
            )
        )
        rows.extend(("  why", reason) for reason in prediction.reasons)
        rows.extend(("  fix", fix) for fix in prediction.fixes)
    if cargo.targets_from:
        rows.append(("targets", f"{', '.join(sorted({p.target for p in cargo.predictions}))} ({cargo.targets_from})"))
    for other in cargo.other_platforms:
        rows.append(
            (
                f"on {other.platform} ({other.target})",
                f"not audited (--target {other.target} checks it): release shows {other.shows.value}"
                + (f" if {other.shows_when_shipped} ships" if other.shows_when_shipped else ""),
            )
        )
        rows.extend(("  why", reason) for reason in other.reasons)
        rows.extend(("  add", fix) for fix in other.fixes)
    rows.extend(("differs", difference) for difference in cargo.differences)
    rows.extend(("size", cost) for cost in cargo.size_costs)
    rows.extend(("note", note) for note in cargo.notes)
    return rows


def _print_report(report: AuditReport) -> None:
    sections = [(audit.identity.path, _binary_rows(audit)) for audit in report.binaries]
    if report.cargo is not None:
        sections.append((f"cargo: {report.cargo.manifest}", _cargo_rows(report.cargo)))
    try:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
    except ImportError:
        for title, rows in sections:
            typer.echo(title)
            for key, value in rows:
                typer.echo(f"  {key:<24} {value}")
        return
    console = Console(soft_wrap=False)
    for title, rows in sections:
        table = Table(title=title, show_header=False, title_justify="left")
        table.add_column(style="bold")
        table.add_column(overflow="fold")
        for key, value in rows:
            # Text, not markup: values hold "[profile.release]" and other brackets.
            table.add_row(Text(key), Text(value), style="red" if value == "bare-hex" else None)
        console.print(table)

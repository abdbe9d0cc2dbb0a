"""The release debug-info auditor: will a profile of this build come back named?

Library use::

    from symbolize.audit import audit_binaries
    report = audit_binaries([Path("target/release/app")], require=Requirement.LINES)
    report.exit_code, report.to_json()

The JSON document (``AuditReport.to_json``), schema version 1; fields are
only ever added within a version::

    {"schema": 1,
     "binaries": [{
        "identity": {"path", "format", "arch", "debug_id", "debug_id_kind"},
        "symbols": {"kind": "full|minidebuginfo|dynamic-only|none", "function_symbols": N,
                    "table": "full|minidebuginfo|external|dynamic|exports|none"},
        "debug_info": {
            "files": [{"how": "embedded|build-id|debuglink|minidebuginfo|split-dwarf|pdb|dsym|"
                              "debug-map-object|given",
                       "path", "found": bool, "matches": bool|null, "detail"}],
            "dwarf_versions": [N], "compressed_sections": ["file:section"],
            "split_units": [{"dwo_name", "resolved": bool}], "broken_units": ["..."],
            "file_bytes", "debug_section_bytes", "line_table_bytes"},
        "coverage": {"code_bytes", "symbol_bytes", "line_bytes", "function_bytes",
                     "inlined_bytes", "name_bytes", "inlined_calls",
                     "llvm_bytes_within_functions", "llvm_bytes_within_inlined_functions",
                     "shares": {"names", "symbols", "lines", "functions", "inlined"}},
        "frame_pointers": {"sampled", "with_frame_pointer", "share": float|null,
                           "without": [names], "unwind_tables": [names], "note", "leaves_without",
                           "own_sampled", "own_with_frame_pointer", "own_leaves_without"},
        "verdict": {"shows": "bare-hex|names|names+lines|with-inlines",
                    "reasons": [...], "fixes": [...],
                    "frame_pointer_walks": "whole|lose-callers|unwind-tables|unknown"},
        "lookups": {"checked": bool, "sample_size": N, "note",
                    "names"|"lines"|"inlined": {"sampled": N, "answered": N}},
        "servers": [{"role": "debug file|binary", "protocol": "debuginfod|symsrv|-", "what",
                     "verdict": "on-server|not-on-server|server-unreachable|not-asked",
                     "required": bool, "url", "tried": [urls], "detail", "refused": ["URL: reason"]}]
                   (empty unless servers are named: audit --remote, symbolize/audit/remote.py)}],
     "unreadable": [{"path", "reason"}],
     "cargo": null | {
        "manifest", "workspace_root", "members": [dirs], "rustflags": [flags], "rustflags_source",
        "profiles": [{"name", "inherits": [chain down to "release"],
                      "settings": [{"key", "value", "source"}],
                      "overrides": [{"package", "settings": [{"key", "value", "source"}]}]}],
        "predictions": [{"profile", "target", "platform": "elf|windows-msvc|windows-gnu|macos",
                         "debuginfo", "strip": {"key", "value", "source"},
                         "split_debuginfo": {"key", "value", "source"},
                         "frame_pointers", "emits": [...], "shows", "shows_when_shipped",
                         "reasons": [...], "fixes": [...]}],
        "differences": [...], "size_costs": [...], "notes": [...],
        "other_platforms": [prediction, as above, of the release profile on each platform no
                            audited target has: advice, not checked by --require],
        "targets_from": "--target"|"CARGO_BUILD_TARGET"|"[build] target in .cargo/config.toml"|"the host"},
     "requirements": {"require": "names|lines|inlines"|null, "frame_pointers": bool},
     "shortfalls": ["..."],
     "exit_code": 0|1|3}
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from symbolize.audit.binary import architectures, audit_binary
from symbolize.audit.report import (
    COVERAGE_THRESHOLD,
    BinaryAudit,
    ProfileView,
    Requirement,
    ServerCheck,
    UnreadableBinary,
)
from symbolize.audit.verdict import FRAME_POINTER_THRESHOLD, shortfalls

if TYPE_CHECKING:
    from symbolize.audit.cargo import CargoAudit
    from symbolize.remote.options import RemoteOptions
    from symbolize.remote.progress import DownloadProgress

SCHEMA_VERSION = 1

EXIT_OK = 0
EXIT_SHORT = 1
EXIT_USAGE = 2
EXIT_UNREADABLE = 3


class AuditReport(NamedTuple):
    binaries: tuple[BinaryAudit, ...]
    unreadable: tuple[UnreadableBinary, ...]
    cargo: CargoAudit | None
    require: Requirement | None
    require_frame_pointers: bool
    shortfalls: tuple[str, ...]

    @property
    def exit_code(self) -> int:
        if self.unreadable:
            return EXIT_UNREADABLE
        return EXIT_SHORT if self.shortfalls else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "binaries": [_binary_json(audit) for audit in self.binaries],
            "unreadable": [jsonable(entry) for entry in self.unreadable],
            "cargo": self.cargo.to_json() if self.cargo is not None else None,
            "requirements": {
                "require": self.require.value if self.require is not None else None,
                "frame_pointers": self.require_frame_pointers,
            },
            "shortfalls": list(self.shortfalls),
            "exit_code": self.exit_code,
        }


def audit_binaries(
    paths: Sequence[Path],
    *,
    debug_files: Sequence[Path] = (),
    search_paths: Sequence[Path] = (),
    debug_dirs: Sequence[Path] | None = None,
    cargo_manifest: Path | None = None,
    targets: Sequence[str] = (),
    require: Requirement | None = None,
    require_frame_pointers: bool = False,
    environment: dict[str, str] | None = None,
    remote: RemoteOptions | None = None,
    download_progress: DownloadProgress | None = None,
) -> AuditReport:
    """Audit each binary (and the Cargo project, when given); see the module docstring for the JSON.

    ``remote`` names servers (:func:`symbolize.api.remote_options`): each binary's files are then
    fetched from them and verified (symbolize/audit/remote.py), and a debug file they do not have
    is a shortfall.
    """
    audited: list[BinaryAudit] = []
    unreadable: list[UnreadableBinary] = []
    for path in paths:
        for arch in architectures(path):  # every slice of a universal Mach-O
            result = audit_binary(
                path, debug_files=debug_files, search_paths=search_paths, debug_dirs=debug_dirs, arch=arch
            )
            if isinstance(result, UnreadableBinary):
                unreadable.append(result)
                continue
            if remote is not None:
                result = result._replace(servers=_server_checks(path, arch, remote, download_progress))
            audited.append(result)
    found: list[str] = []
    for audit in audited:
        found.extend(shortfalls(audit, require, require_frame_pointers))
        found.extend(
            f"{audit.identity.path}: {check.what}: {check.verdict}" + (f": {check.detail}" if check.detail else "")
            for check in audit.servers
            if check.required and not check.passed
        )
    cargo = None
    if cargo_manifest is not None:
        from symbolize.audit.cargo import audit_cargo

        cargo = audit_cargo(cargo_manifest, targets, audited, environment)
        found.extend(cargo.shortfalls(require, require_frame_pointers) if not audited else ())
    return AuditReport(tuple(audited), tuple(unreadable), cargo, require, require_frame_pointers, tuple(found))


def _server_checks(
    path: Path, arch: str | None, remote: RemoteOptions, progress: DownloadProgress | None
) -> tuple[ServerCheck, ...]:
    from symbolize.audit.remote import check_servers  # the network's modules, only when servers are named
    from symbolize.loader import Loader

    with Loader() as loader:
        return check_servers(loader.open(path, arch=arch), remote, loader.identify, progress=progress)


def jsonable(value: Any) -> Any:
    """NamedTuples as objects, enums as their values, tuples as lists, recursively."""
    if hasattr(value, "_asdict"):
        return {key: jsonable(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    return value


def _binary_json(audit: BinaryAudit) -> dict[str, Any]:
    data: dict[str, Any] = jsonable(audit)
    coverage = audit.coverage
    data["coverage"]["shares"] = {
        "names": coverage.share(coverage.name_bytes),
        "symbols": coverage.share(coverage.symbol_bytes),
        "lines": coverage.share(coverage.line_bytes),
        "functions": coverage.share(coverage.function_bytes),
        "inlined": coverage.share(coverage.inlined_bytes),
    }
    data["frame_pointers"]["share"] = audit.frame_pointers.share
    return data


__all__ = [
    "COVERAGE_THRESHOLD",
    "EXIT_OK",
    "EXIT_SHORT",
    "EXIT_UNREADABLE",
    "EXIT_USAGE",
    "FRAME_POINTER_THRESHOLD",
    "SCHEMA_VERSION",
    "AuditReport",
    "BinaryAudit",
    "ProfileView",
    "Requirement",
    "audit_binaries",
    "audit_binary",
]

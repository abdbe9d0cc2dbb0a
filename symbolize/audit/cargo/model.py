"""The Cargo audit's values: settings with their source, profiles, per-target predictions."""

from __future__ import annotations

from typing import Any, NamedTuple

from symbolize.audit.report import ProfileView, Requirement

# One target per platform whose builds differ in what they emit (ELF, a PDB, a dSYM or debug map):
# the targets the advice for the platforms not audited is predicted for.
PLATFORM_TARGETS = ("x86_64-unknown-linux-gnu", "x86_64-pc-windows-msvc", "aarch64-apple-darwin")
PROFILE_KEYS = ("debug", "strip", "split-debuginfo", "lto", "codegen-units", "panic", "opt-level")


class Setting(NamedTuple):
    key: str
    value: str
    source: str  # where the value comes from: a file and table, an environment variable, a default


class PackageOverride(NamedTuple):
    package: str  # a package ID spec, or "*" for every non-member dependency
    settings: tuple[Setting, ...]


class ProfileReport(NamedTuple):
    name: str
    inherits: tuple[str, ...]  # the chain down to "release"
    settings: tuple[Setting, ...]  # effective, one per PROFILE_KEYS entry (strip/split-debuginfo per target)
    overrides: tuple[PackageOverride, ...]


class TargetPrediction(NamedTuple):
    """What ``cargo build --profile <profile> --target <target>`` emits, and what a profile of it shows."""

    profile: str
    target: str
    platform: str  # "elf", "windows-msvc", "windows-gnu", "macos"
    debuginfo: str  # effective -C debuginfo of the workspace's own code
    strip: Setting
    split_debuginfo: Setting
    frame_pointers: str  # "forced", "target default: kept", "target default: may be omitted"
    emits: tuple[str, ...]  # artifacts beside the binary, and what the binary keeps
    shows: ProfileView
    shows_when_shipped: str  # what must travel with the binary for ``shows`` to hold ("" when nothing helps)
    reasons: tuple[str, ...]
    fixes: tuple[str, ...]


class CargoAudit(NamedTuple):
    manifest: str
    workspace_root: str
    members: tuple[str, ...]
    profiles: tuple[ProfileReport, ...]
    rustflags: tuple[str, ...]
    rustflags_source: str
    predictions: tuple[TargetPrediction, ...]
    differences: tuple[str, ...]  # prediction against the binaries given
    size_costs: tuple[str, ...]  # what the debug info costs in the binaries given
    notes: tuple[str, ...]
    # The release profile on each platform no target audited has (PLATFORM_TARGETS): what to add
    # there, not checked by --require (a --target for it checks it).
    other_platforms: tuple[TargetPrediction, ...] = ()
    targets_from: str = ""  # where the audited targets come from: --target, CARGO_BUILD_TARGET, ...

    def to_json(self) -> dict[str, Any]:
        from symbolize.audit import jsonable

        data: dict[str, Any] = jsonable(self)
        return data

    def shortfalls(self, require: Requirement | None, require_frame_pointers: bool) -> list[str]:
        """Without binaries, ``--require`` is checked against the release predictions for each target."""
        found = []
        for prediction in self.predictions:
            if prediction.profile != "release":
                continue
            if require is not None and prediction.shows.rank < require.view.rank:
                found.append(
                    f"cargo {prediction.target}: --require {require.value}: a profile will show "
                    f"{prediction.shows.value} ({'; '.join(prediction.reasons)})"
                )
            if require_frame_pointers and prediction.frame_pointers == "target default: may be omitted":
                found.append(f"cargo {prediction.target}: --require-frame-pointers: frame pointers are not forced")
        return found

"""The Cargo part of the auditor on the workspaces in fixtures/cargo/: what each one's TOML says.

Expected values come from the fixture files themselves and Cargo's documented defaults
(the Cargo book, "Profiles"; Cargo 1.77's implicit strip), never from the auditor's output.
The environment is pinned so that the machine's own ~/.cargo/config.toml and RUSTFLAGS
cannot leak in.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from symbolize.audit import ProfileView, Requirement, audit_binaries
from symbolize.audit.cargo import CargoAudit, TargetPrediction, audit_cargo, cfg_matches
from symbolize.errors import MalformedInputError
from tests.fixtures_data import FIXTURES

CARGO = FIXTURES / "cargo"
LINUX, MSVC, MACOS = "x86_64-unknown-linux-gnu", "x86_64-pc-windows-msvc", "aarch64-apple-darwin"


def _audit(project: str, environment: dict[str, str] | None = None, **options: object) -> CargoAudit:
    """The project audited for the three platforms' targets (the default is the host's alone)."""
    env = {"HOME": "/nonexistent", "CARGO_HOME": "/nonexistent", **(environment or {})}
    return audit_cargo(CARGO / project / "Cargo.toml", (LINUX, MSVC, MACOS), environment=env, **options)  # type: ignore[arg-type]


def _prediction(audit: CargoAudit, target: str, profile: str = "release") -> TargetPrediction:
    return next(p for p in audit.predictions if p.target == target and p.profile == profile)


def test_no_release_profile_explains_cargo_defaults() -> None:
    audit = _audit("no-release-profile")
    assert [profile.name for profile in audit.profiles] == ["release"]
    linux, msvc, macos = (_prediction(audit, target) for target in (LINUX, MSVC, MACOS))
    for prediction in (linux, msvc, macos):
        assert prediction.debuginfo == "none"  # debug = false by default in release
        assert prediction.shows is ProfileView.NAMES  # symbols (or the PDB's publics), no lines
        assert any('debug = "line-tables-only"' in fix for fix in prediction.fixes)
        # The implicit strip goes away once debug is set: the one line to add is enough.
        assert not any('strip = "none"' in fix for fix in prediction.fixes)
    assert linux.strip.value == "debuginfo" and "1.77" in linux.strip.source
    assert macos.strip.value == "debuginfo"
    assert msvc.strip.value == "none" and "msvc" in msvc.strip.source
    assert linux.split_debuginfo.value == "off"
    assert msvc.split_debuginfo.value == "packed" and any(".pdb" in item for item in msvc.emits)
    assert linux.frame_pointers == "target default: may be omitted"
    assert macos.frame_pointers == "target default: kept"


def test_defaults_cite_the_release_they_hold_from() -> None:
    # RELEASES.md 1.24.0 (rustc's 16 codegen units in release, rust-lang/rust#46910); RFC 1513 and
    # the edition guide (the panic key, Rust 1.10). lto = false has no established release: its
    # source says so instead of guessing one.
    (release,) = _audit("no-release-profile").profiles
    sources = {setting.key: (setting.value, setting.source) for setting in release.settings}
    assert sources["codegen-units"][0] == "16" and "Rust 1.24" in sources["codegen-units"][1]
    assert sources["panic"][0] == "unwind" and "Rust 1.10" in sources["panic"][1]
    assert sources["lto"][0] == "false" and "no release pinned" in sources["lto"][1]


def test_line_tables_and_inheritance() -> None:
    audit = _audit("line-tables")
    chains = {profile.name: profile.inherits for profile in audit.profiles}
    # dev-fast inherits from dev, so it is not a release profile.
    assert chains == {
        "release": ("release",),
        "dist": ("dist", "release"),
        "profiling": ("profiling", "dist", "release"),
    }
    linux = _prediction(audit, LINUX)
    assert linux.debuginfo == "line-tables-only" and linux.split_debuginfo.value == "packed"
    assert linux.shows is ProfileView.WITH_INLINES and linux.shows_when_shipped == "the .dwp"
    assert _prediction(audit, MACOS).shows_when_shipped == "the .dSYM"
    # dist: strip = true is strip = "symbols": nothing left to name functions with, anywhere.
    for target in (LINUX, MSVC, MACOS):
        dist = _prediction(audit, target, "dist")
        assert dist.strip.value == "symbols" and dist.shows is ProfileView.BARE_HEX
        assert any(fix.startswith('[profile.dist] strip = "none"') for fix in dist.fixes)
    profiling = _prediction(audit, LINUX, "profiling")
    settings = {s.key: s.value for s in next(p for p in audit.profiles if p.name == "profiling").settings}
    assert settings["lto"] == "fat"  # from dist
    assert settings["split-debuginfo"] == "packed"  # from release
    assert profiling.debuginfo == "limited" and profiling.strip.value == "none"
    assert profiling.shows is ProfileView.WITH_INLINES


def test_workspace_member_leads_to_the_root() -> None:
    audit = _audit("workspace/crates/app")
    assert audit.workspace_root == str(CARGO / "workspace" / "Cargo.toml")
    assert sorted(audit.members) == ["crates/app", "crates/util"]
    assert any("ignored" in note for note in audit.notes)  # the member's own [profile.release]
    release = audit.profiles[0]
    settings = {s.key: s.value for s in release.settings}
    assert settings == {
        "opt-level": "3",
        "debug": "full",
        "lto": "thin",
        "codegen-units": "1",
        "panic": "abort",
        "strip": "debuginfo",
    }
    overrides = {o.package: {s.key: s.value for s in o.settings} for o in release.overrides}
    assert overrides == {"*": {"debug": "none", "opt-level": "3"}, "util": {"debug": "line-tables-only"}}
    linux = _prediction(audit, LINUX)
    assert linux.shows is ProfileView.NAMES  # strip = "debuginfo" drops the full debug info
    assert any("every dependency" in reason for reason in linux.reasons)
    # rustc links with /DEBUG:NONE when stripping on MSVC: no PDB at all.
    assert _prediction(audit, MSVC).shows is ProfileView.BARE_HEX
    assert _prediction(audit, MACOS).split_debuginfo.value == "unpacked"  # Cargo's macOS default


def test_config_rustflags_and_profile() -> None:
    audit = _audit("config-rustflags")
    linux, msvc, macos = (_prediction(audit, target) for target in (LINUX, MSVC, MACOS))
    assert linux.frame_pointers == "forced"  # [build] rustflags
    # [target.x86_64-pc-windows-msvc] rustflags replace [build] ones: stripped, no frame pointers.
    assert msvc.strip.value == "symbols" and msvc.strip.source == "rustflags -C strip"
    assert msvc.frame_pointers != "forced" and msvc.shows is ProfileView.BARE_HEX
    # The cfg(target_os = "macos") table applies to macOS and says no.
    assert macos.frame_pointers == "target default: kept"
    # The config's [profile.release] split-debuginfo wins over Cargo.toml's "off".
    assert linux.split_debuginfo.value == "packed" and linux.split_debuginfo.source.startswith(".cargo/config.toml")


def test_environment_overrides() -> None:
    audit = _audit(
        "no-release-profile",
        {"CARGO_PROFILE_RELEASE_DEBUG": "2", "RUSTFLAGS": "-C force-frame-pointers=yes"},
    )
    linux = _prediction(audit, LINUX)
    assert linux.debuginfo == "full" and linux.strip.value == "none"  # no implicit strip once debug is on
    assert linux.shows is ProfileView.WITH_INLINES and linux.frame_pointers == "forced"
    encoded = _audit("config-rustflags", {"CARGO_ENCODED_RUSTFLAGS": "-C\x1fdebuginfo=0", "RUSTFLAGS": "-g"})
    assert encoded.rustflags == ("-C", "debuginfo=0")  # the encoded form wins over RUSTFLAGS and config
    assert _prediction(encoded, LINUX).shows is ProfileView.NAMES


def test_prediction_against_binaries() -> None:
    # line-tables predicts a Linux .dwp with inline chains and no forced frame pointers: rs-packed.
    packed = FIXTURES / "audit" / "rs-packed"
    report = audit_binaries([packed], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", targets=[LINUX])
    assert report.cargo is not None
    assert report.cargo.differences == ()
    assert report.cargo.size_costs and "line tables" in report.cargo.size_costs[0]
    # The same prediction against a build without debug info: the difference is reported.
    report = audit_binaries(
        [FIXTURES / "audit" / "rs-debug0"], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", targets=[LINUX]
    )
    assert report.cargo is not None
    assert any("predicted with-inlines" in difference for difference in report.cargo.differences)


def test_a_binary_under_target_profile_is_compared_with_that_profile(tmp_path: Path) -> None:
    # rs-strip-symbols stands for what `cargo build --profile dist` (strip = true) leaves in
    # target/dist/: bare hex, as dist predicts; release would have predicted inline chains.
    built = tmp_path / "target" / "dist" / "app"
    built.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "audit" / "rs-strip-symbols", built)
    report = audit_binaries([built], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", targets=[LINUX])
    assert report.cargo is not None and report.cargo.differences == ()
    elsewhere = tmp_path / "app"
    shutil.copy(built, elsewhere)
    report = audit_binaries([elsewhere], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", targets=[LINUX])
    assert report.cargo is not None
    assert any("(release, " in difference for difference in report.cargo.differences)


def test_cargo_requirements_without_binaries() -> None:
    manifest = CARGO / "no-release-profile" / "Cargo.toml"
    report = audit_binaries([], cargo_manifest=manifest, require=Requirement.LINES, targets=[LINUX, MSVC, MACOS])
    assert report.exit_code == 1 and len(report.shortfalls) == 3  # one per target
    report = audit_binaries([], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", require=Requirement.LINES)
    assert report.exit_code == 0


def test_malformed_manifest(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text("[profile.release\ndebug = ")
    with pytest.raises(MalformedInputError):
        audit_cargo(tmp_path / "Cargo.toml", (), environment={})


@pytest.mark.parametrize(
    ("expression", "target", "expected"),
    [
        ('cfg(target_os = "macos")', MACOS, True),
        ('cfg(target_os = "macos")', LINUX, False),
        ('cfg(all(unix, not(target_os = "macos")))', LINUX, True),
        ("cfg(windows)", MSVC, True),
        ('cfg(any(target_env = "msvc", target_arch = "aarch64"))', "aarch64-unknown-linux-gnu", True),
        ('cfg(target_env = "msvc")', LINUX, False),
        ("cfg(" * 40 + ")" * 40, LINUX, False),  # absurd nesting: no answer, no crash
    ],
)
def test_cfg_expressions(expression: str, target: str, expected: bool) -> None:
    assert cfg_matches(expression, target) is expected


@pytest.mark.parametrize("layout", ["target/debug", "target/x86_64-unknown-linux-gnu/debug"])
def test_a_target_debug_binary_is_compared_with_dev(tmp_path: Path, layout: str) -> None:
    # `cargo build` (the dev profile: debug = true, DWARF in the binary) puts its output in
    # target/debug/: rs-debug2 stands for it. Compared with release (a .dwp of line tables), it
    # would be reported as differing from its own profile.
    built = tmp_path / layout / "app"
    built.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "audit" / "rs-debug2", built)
    report = audit_binaries([built], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", targets=[LINUX])
    assert report.cargo is not None
    assert report.cargo.differences == ()
    dev = _prediction(report.cargo, LINUX, "dev")
    assert dev.debuginfo == "full" and dev.split_debuginfo.value == "off"
    assert dev.shows is ProfileView.WITH_INLINES
    # A custom profile inheriting dev (target/dev-fast/) is predicted from dev's defaults too.
    fast = tmp_path / "target" / "dev-fast" / "app"
    fast.parent.mkdir(parents=True)
    shutil.copy(built, fast)
    report = audit_binaries([fast], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", targets=[LINUX])
    assert report.cargo is not None and report.cargo.differences == ()
    assert _prediction(report.cargo, LINUX, "dev-fast").debuginfo == "full"


@pytest.mark.parametrize("profile", ["release", "unpacked"])
def test_split_debuginfo_prediction_matches_the_cargo_build(profile: str) -> None:
    # fixtures/audit/cargo-split/<profile>/ is what `cargo build --profile <profile>` of
    # fixtures/cargo/split-dwarf left (fixtures/build_audit.sh), with its .dwp or .dwo files.
    binary = FIXTURES / "audit" / "cargo-split" / profile / "auditdemo"
    report = audit_binaries([binary], cargo_manifest=CARGO / "split-dwarf" / "Cargo.toml", targets=[LINUX])
    assert report.cargo is not None
    assert report.binaries[0].verdict.shows is ProfileView.WITH_INLINES
    assert report.cargo.differences == ()
    prediction = _prediction(report.cargo, LINUX, profile)
    assert prediction.split_debuginfo.value == ("packed" if profile == "release" else "unpacked")
    assert prediction.shows is ProfileView.WITH_INLINES
    if profile == "unpacked":
        assert "names+lines" in " ".join(prediction.reasons)  # what a copy without the .dwo files shows


def test_a_profile_directory_the_manifest_does_not_define(tmp_path: Path) -> None:
    built = tmp_path / "target" / "bench-lto" / "app"
    built.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "audit" / "rs-debug2", built)
    report = audit_binaries([built], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", targets=[LINUX])
    assert report.cargo is not None
    assert any("profile 'bench-lto', which the manifest does not define" in d for d in report.cargo.differences)
    # Then compared with release (a .dwp of line tables): this build's DWARF is not split.
    assert any("split-debuginfo = 'packed' predicted" in d for d in report.cargo.differences)

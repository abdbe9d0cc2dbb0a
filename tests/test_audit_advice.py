"""Advice that fits: Cargo audits the host's targets by default and says what to add elsewhere, the
tool's own fix passes once applied (checked on a real ``cargo build`` where cargo is at hand),
rustc-built binaries get Cargo advice and a distribution's library gets its debug package.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from symbolize.audit import Requirement, audit_binaries
from symbolize.audit.cargo import audit_cargo, build_targets, host_target, platform_of
from symbolize.audit.distro import distribution_file
from symbolize.cli.app import app
from tests.fixtures_data import FIXTURES

CARGO = FIXTURES / "cargo"
AUDIT = FIXTURES / "audit"
LINUX, MSVC, MACOS = "x86_64-unknown-linux-gnu", "x86_64-pc-windows-msvc", "aarch64-apple-darwin"
PINNED = {"HOME": "/nonexistent", "CARGO_HOME": "/nonexistent"}
LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")
C_FLAGS = re.compile(r"-g1|-gline-tables-only|strip --strip|objcopy|-fno-omit-frame-pointer")


@pytest.mark.parametrize(
    ("system", "machine", "libc", "triple"),
    [
        ("linux", "x86_64", "glibc", "x86_64-unknown-linux-gnu"),
        ("linux", "aarch64", "", "aarch64-unknown-linux-gnu"),
        ("linux", "x86_64", "musl", "x86_64-unknown-linux-musl"),
        ("darwin", "arm64", None, "aarch64-apple-darwin"),
        ("win32", "AMD64", None, "x86_64-pc-windows-msvc"),
        ("freebsd14", "amd64", None, "x86_64-unknown-freebsd"),
    ],
)
def test_host_target(system: str, machine: str, libc: str | None, triple: str) -> None:
    assert host_target(system, machine, libc) == triple


def test_the_default_targets_are_what_cargo_build_builds_for() -> None:
    assert build_targets({}, {}) == ((host_target(),), "the host")
    assert build_targets({}, {"CARGO_BUILD_TARGET": MSVC}) == ((MSVC,), "CARGO_BUILD_TARGET")
    configured = {"build": {"target": [LINUX, MACOS]}}
    assert build_targets(configured, {}) == ((LINUX, MACOS), "[build] target in .cargo/config.toml")
    audit = audit_cargo(CARGO / "no-release-profile" / "Cargo.toml", (), environment=PINNED)
    assert {p.target for p in audit.predictions} == {host_target()} and audit.targets_from == "the host"
    # Each other platform gets the release profile's advice, not a requirement.
    others = {platform_of(p.target) for p in audit.other_platforms}
    assert others == {"elf", "windows-msvc", "macos"} - {platform_of(host_target())}


def _fix_settings(fixes: tuple[str, ...], profile: str = "release") -> list[str]:
    """The ``key = value`` lines of a ``[profile.NAME] a = 1; b = 2  # why`` fix, comments left out."""
    prefix = f"[profile.{profile}] "
    settings = []
    for fix in fixes:
        if fix.startswith(prefix):
            for item in fix[len(prefix) :].split("; "):
                item = item.split("  #", 1)[0].strip()
                if item and not item.startswith("#"):
                    settings.append(item)
    return settings


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "app"
    shutil.copytree(CARGO / "no-release-profile", project)
    return project / "Cargo.toml"


def _apply(manifest: Path, settings: list[str]) -> None:
    assert settings
    with manifest.open("a") as toml:
        toml.write("\n[profile.release]\n" + "".join(f"{line}\n" for line in settings))


def _cli(*arguments: str) -> int:
    return CliRunner(env=PINNED).invoke(app, ["audit", *arguments]).exit_code


@pytest.mark.parametrize("target", [LINUX, MSVC, MACOS])
def test_applying_the_tools_own_fix_passes(tmp_path: Path, target: str) -> None:
    manifest = _project(tmp_path)
    assert _cli("--cargo", str(manifest), "--require", "lines", "--target", target) == 1
    # The advice for this platform, as a run on another host gives it (other_platforms) or as a run
    # for this target gives it.
    host = next(other for other in (LINUX, MACOS) if platform_of(other) != platform_of(target))
    elsewhere = audit_cargo(manifest, (host,), environment=PINNED)
    advice = next(p for p in elsewhere.other_platforms if p.target == target).fixes
    direct = audit_cargo(manifest, (target,), environment=PINNED).predictions[0].fixes
    assert _fix_settings(advice) == _fix_settings(direct)
    _apply(manifest, _fix_settings(advice))
    assert _cli("--cargo", str(manifest), "--require", "lines", "--target", target) == 0


def test_the_host_default_passes_once_fixed(tmp_path: Path) -> None:
    manifest = _project(tmp_path)
    assert _cli("--cargo", str(manifest), "--require", "lines") == 1
    (prediction,) = audit_cargo(manifest, (), environment=PINNED).predictions
    _apply(manifest, _fix_settings(prediction.fixes))
    assert _cli("--cargo", str(manifest), "--require", "lines") == 0
    if platform_of(host_target()) != "macos":  # macOS needs its own line too (split-debuginfo)
        macos = audit_cargo(manifest, (), environment=PINNED)
        advice = next(p for p in macos.other_platforms if p.target == MACOS)
        assert any('split-debuginfo = "packed"' in fix for fix in advice.fixes)


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_a_real_cargo_build_with_the_fix_shows_lines(tmp_path: Path) -> None:
    manifest = _project(tmp_path)
    env = {**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")}
    env.pop("RUSTFLAGS", None)
    env.pop("CARGO_BUILD_TARGET", None)

    def build() -> Path:
        subprocess.run(["cargo", "build", "--release", "--offline", "--quiet", "--manifest-path", str(manifest)],
                       env=env, check=True, timeout=600)  # fmt: skip
        return tmp_path / "target" / "release" / "no-release-profile"

    before = build()
    report = audit_binaries([before], cargo_manifest=manifest, require=Requirement.LINES, environment=env)
    assert report.exit_code == 1 and report.cargo is not None and report.cargo.differences == ()
    (prediction,) = (p for p in report.cargo.predictions if p.profile == "release")
    _apply(manifest, _fix_settings(prediction.fixes))
    after = build()
    report = audit_binaries([after], cargo_manifest=manifest, require=Requirement.LINES, environment=env)
    assert report.exit_code == 0, report.shortfalls
    assert report.cargo is not None and report.cargo.differences == ()


@pytest.mark.parametrize("binary", ["rs-strip-symbols", "rs-debug0", "rs-strip-debuginfo"])
def test_a_rustc_built_binary_gets_cargo_advice(binary: str) -> None:
    (audit,) = audit_binaries([AUDIT / binary]).binaries
    fixes = " | ".join(audit.verdict.fixes)
    assert 'debug = "line-tables-only"' in fixes and "[profile.release]" in fixes
    assert not C_FLAGS.search(fixes), fixes
    if binary == "rs-strip-symbols":  # nothing names it: not even a symbol table (.comment says rustc)
        assert 'strip = "none"' in fixes


def test_a_c_binary_keeps_c_advice() -> None:
    (audit,) = audit_binaries([FIXTURES / "bin" / "cdemo-gcc-symtab"]).binaries
    assert any("-g1" in fix for fix in audit.verdict.fixes)


def test_a_distribution_file_is_named_by_dpkg(tmp_path: Path) -> None:
    info = tmp_path / "info"
    info.mkdir()
    (info / "libfoo1:amd64.list").write_text("/.\n/usr/lib/x86_64-linux-gnu/libfoo.so.1\n")
    (info / "libc6:amd64.list").write_text("/usr/lib/x86_64-linux-gnu/libc.so.6\n")
    found = distribution_file(Path("/lib/x86_64-linux-gnu/libfoo.so.1"), info)  # merged /usr
    assert found is not None and found.package == "libfoo1"
    assert distribution_file(Path("/usr/local/lib/libfoo.so.1"), info) is None
    assert distribution_file(Path("/usr/lib/debug/.build-id/aa/bb.debug"), info) is None
    assert distribution_file(tmp_path / "libfoo.so.1", info) is None


@pytest.mark.skipif(not LIBC.is_file(), reason=f"{LIBC} is not here")
def test_a_distribution_library_without_its_debug_file_gets_its_debug_package(tmp_path: Path) -> None:
    (audit,) = audit_binaries([LIBC], debug_dirs=[tmp_path]).binaries  # no debug file in reach
    fixes = " | ".join(audit.verdict.fixes)
    assert "debug package" in fixes and f"debuginfod-find debuginfo {audit.identity.debug_id}" in fixes
    assert "do not rebuild or re-strip" in fixes
    assert not C_FLAGS.search(fixes), fixes
    if Path("/var/lib/dpkg/info/libc6:amd64.list").is_file():
        assert "apt install libc6-dbg" in fixes


def test_a_binary_of_another_platform_is_compared_with_its_prediction() -> None:
    macho = FIXTURES / "bin" / "macos" / "cdemo-x86_64"
    report = audit_binaries([macho], cargo_manifest=CARGO / "line-tables" / "Cargo.toml", environment=PINNED)
    assert report.cargo is not None
    assert MACOS in {p.target for p in report.cargo.predictions}
    assert not any("no prediction" in difference for difference in report.cargo.differences)

"""What a Cargo project's release build will emit, and how its profiles will look.

Reads, as Cargo does (the Cargo book, "Profiles", "Configuration",
"Environment variables"):

- the workspace root's ``Cargo.toml`` (profiles are read from the root only);
  a member's manifest leads to its root through ``[workspace] members``;
- ``[profile.release]`` and every custom profile that inherits from it,
  directly or through others (``inherits``), with ``[profile.*.package.*]``
  overrides (``"*"``: every dependency that is not a workspace member);
- ``[profile.*]`` and ``[build]``/``[target.<triple>]`` ``rustflags`` from
  ``.cargo/config.toml`` files from the workspace up to the file system root,
  then ``$CARGO_HOME/config.toml`` (a deeper file wins a key; rustflags lists
  join); ``CARGO_PROFILE_RELEASE_*`` environment variables over both; and
  ``CARGO_ENCODED_RUSTFLAGS``, else ``RUSTFLAGS``, over every config rustflags;
- the rustflags that change debug info and stacks: ``-C debuginfo``, ``-g``,
  ``-C strip``, ``-C split-debuginfo``, ``-C force-frame-pointers``; passed
  after the profile's own flags, so they win.

Absent keys take Cargo's defaults for ``release``: ``debug = 0``, ``strip`` =
``"none"`` but ``"debuginfo"`` when no package asks for debug info (Cargo 1.77,
rust-lang/cargo#13257; not on ``*-windows-msvc``, rust-lang/cargo#13630),
``split-debuginfo`` = ``"unpacked"`` on macOS when debug info is on (Cargo
1.53, rust-lang/cargo#9298), else rustc's platform default (``off`` for ELF
and windows-gnu, ``packed`` for Windows MSVC: the PDB), ``lto = false`` (the
release it dates from is not established), ``codegen-units = 16`` (rustc's
default since Rust 1.24, rust-lang/rust#46910), ``panic = "unwind"`` (since the
key arrived in Rust 1.10, RFC 1513). ``[target.'cfg(...)']`` tables
are evaluated from the target triple alone (``target_os``, ``target_arch``,
``target_env``, ``target_vendor``, ``target_family``, ``unix``, ``windows``,
``all``/``any``/``not``); any other predicate is false.

The targets predicted are those a plain ``cargo build`` builds for, unless ``--target`` names
others: ``CARGO_BUILD_TARGET``, else ``[build] target`` of the config (a triple or a list),
else the host's (:func:`host_target`), and the platform of each binary given (a Mach-O binary
is a macOS build, compared with that prediction). ``--require`` is checked on those alone; for each other
platform (Linux ELF, Windows MSVC, macOS: :data:`PLATFORM_TARGETS`) the release profile is
predicted too, as advice (``other_platforms``): what to add there, e.g. ``split-debuginfo =
"packed"`` for macOS, whose default (``unpacked``) leaves the debug info in ``target/``.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from symbolize.audit.cargo.config import cargo_config, cfg_matches, deep_merge, rustflags_for, workspace_of
from symbolize.audit.cargo.model import (
    PLATFORM_TARGETS,
    PROFILE_KEYS,
    CargoAudit,
    PackageOverride,
    ProfileReport,
    Setting,
    TargetPrediction,
)
from symbolize.audit.cargo.predict import (
    BINARY_PLATFORMS,
    compare,
    platform_of,
    predict,
    profile_of_binary,
    size_costs,
)
from symbolize.audit.cargo.profiles import (
    profile_chain,
    profile_report,
    profiles_inheriting_release,
    resolve_profile,
)
from symbolize.audit.report import BinaryAudit

__all__ = [
    "PLATFORM_TARGETS",
    "PROFILE_KEYS",
    "CargoAudit",
    "PackageOverride",
    "ProfileReport",
    "Setting",
    "TargetPrediction",
    "audit_cargo",
    "build_targets",
    "cfg_matches",
    "host_target",
    "platform_of",
]


def audit_cargo(
    manifest: Path,
    targets: Sequence[str],
    binaries: Sequence[BinaryAudit] = (),
    environment: Mapping[str, str] | None = None,
) -> CargoAudit:
    """Read the project at ``manifest`` and predict each target's release build (see the module docstring)."""
    env = dict(os.environ if environment is None else environment)
    manifest = manifest.absolute()
    root_path, root, members, notes = workspace_of(manifest)
    config, config_notes = cargo_config(root_path.parent, env)
    notes += config_notes
    manifest_profiles = root.get("profile", {})
    config_profiles = config.get("profile", {})
    profiles_table = dict(manifest_profiles)
    for name, table in config_profiles.items():
        profiles_table[name] = deep_merge(profiles_table.get(name, {}), table)
    release_like = profiles_inheriting_release(profiles_table)
    # A binary built with another profile (target/debug/ is dev) is compared with that profile's
    # prediction, so that profile is predicted too.
    predicted = {name for name, _chain in release_like}
    known = predicted | set(profiles_table) | {"dev"}
    for binary in binaries:
        name = profile_of_binary(Path(binary.identity.path), known)
        chain = profile_chain(profiles_table, name) if name is not None and name not in predicted else None
        if name is not None and chain is not None:
            release_like.append((name, chain))
            predicted.add(name)
    wanted, targets_from = (tuple(targets), "--target") if targets else build_targets(config, env)
    if not targets:
        # A binary given is a build for its platform: that platform is predicted too, to compare.
        given = [BINARY_PLATFORMS.get(binary.identity.format, "") for binary in binaries]
        extra = tuple(
            target
            for target in PLATFORM_TARGETS
            if platform_of(target) in given and platform_of(target) not in {platform_of(t) for t in wanted}
        )
        if extra:
            wanted, targets_from = wanted + extra, f"{targets_from}, and the binaries' platforms"
    reports = []
    predictions = []
    for name, chain in release_like:
        resolved = resolve_profile(
            name, chain, (("Cargo.toml", manifest_profiles), (".cargo/config.toml", config_profiles)), env
        )
        rustflags_by_target = {target: rustflags_for(config, env, target) for target in wanted}
        reports.append(profile_report(name, chain, resolved))
        for target in wanted:
            flags, _source = rustflags_by_target[target]
            predictions.append(predict(name, target, resolved, flags))
    audited = {platform_of(target) for target in wanted}
    other_platforms = []
    release = next((chain for name, chain in release_like if name == "release"), None)
    for target in PLATFORM_TARGETS:
        if platform_of(target) in audited or release is None:
            continue
        resolved = resolve_profile(
            "release", release, (("Cargo.toml", manifest_profiles), (".cargo/config.toml", config_profiles)), env
        )
        other_platforms.append(predict("release", target, resolved, rustflags_for(config, env, target)[0]))
    flags, source = rustflags_for(config, env, wanted[0])
    differences = tuple(compare(predictions, binaries))
    return CargoAudit(
        manifest=str(manifest),
        workspace_root=str(root_path),
        members=tuple(members),
        profiles=tuple(reports),
        rustflags=tuple(flags),
        rustflags_source=source,
        predictions=tuple(predictions),
        differences=differences,
        size_costs=tuple(size_costs(binaries)),
        notes=tuple(notes),
        other_platforms=tuple(other_platforms),
        targets_from=targets_from,
    )


def build_targets(config: Mapping[str, Any], env: Mapping[str, str]) -> tuple[tuple[str, ...], str]:
    """The targets a plain ``cargo build`` builds for, and where that comes from (module docstring)."""
    if env.get("CARGO_BUILD_TARGET"):
        return (env["CARGO_BUILD_TARGET"],), "CARGO_BUILD_TARGET"
    configured = config.get("build", {}).get("target")
    if isinstance(configured, str) and configured:
        return (configured,), "[build] target in .cargo/config.toml"
    if isinstance(configured, list) and configured and all(isinstance(item, str) for item in configured):
        return tuple(configured), "[build] target in .cargo/config.toml"
    return (host_target(),), "the host"


# Python's names for machines -> the architecture of a Rust target triple.
_RUST_ARCH = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "i386": "i686", "x86": "i686"}


def host_target(system: str | None = None, machine: str | None = None, libc: str | None = None) -> str:
    """The Rust target triple of this machine (rustc's ``host``), from Python's view of it:
    ``x86_64-unknown-linux-gnu`` (``-musl`` off glibc), ``aarch64-apple-darwin``,
    ``x86_64-pc-windows-msvc``, ``<arch>-unknown-<os>`` elsewhere."""
    system = (system or sys.platform).lower()
    arch = (machine or platform.machine()).lower()
    arch = _RUST_ARCH.get(arch, arch)
    if system.startswith("linux"):
        c_library = libc if libc is not None else platform.libc_ver()[0]
        return f"{arch}-unknown-linux-{'gnu' if c_library in ('glibc', '') else 'musl'}"
    if system == "darwin":
        return f"{arch}-apple-darwin"
    if system in ("win32", "cygwin", "windows"):
        return f"{arch}-pc-windows-msvc"
    return f"{arch}-unknown-{system.rstrip('0123456789')}"

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
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from symbolize.audit.cargo.config import cargo_config, cfg_matches, deep_merge, rustflags_for, workspace_of
from symbolize.audit.cargo.model import (
    DEFAULT_TARGETS,
    PROFILE_KEYS,
    CargoAudit,
    PackageOverride,
    ProfileReport,
    Setting,
    TargetPrediction,
)
from symbolize.audit.cargo.predict import compare, platform_of, predict, profile_of_binary, size_costs
from symbolize.audit.cargo.profiles import (
    profile_chain,
    profile_report,
    profiles_inheriting_release,
    resolve_profile,
)
from symbolize.audit.report import BinaryAudit

__all__ = [
    "DEFAULT_TARGETS",
    "PROFILE_KEYS",
    "CargoAudit",
    "PackageOverride",
    "ProfileReport",
    "Setting",
    "TargetPrediction",
    "audit_cargo",
    "cfg_matches",
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
    wanted = tuple(targets) or DEFAULT_TARGETS
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
    )

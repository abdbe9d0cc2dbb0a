"""Resolving a profile: Cargo's release defaults, the ``inherits`` chain, package overrides, environment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from symbolize.audit.cargo.model import PROFILE_KEYS, PackageOverride, ProfileReport, Setting

# Override tables cannot set these (Cargo book, "Overrides").
_NOT_OVERRIDABLE = frozenset({"panic", "lto", "rpath"})

# Each with the release it holds from, where one is established (the Cargo book, "Profiles",
# gives the values, not their history):
# - codegen-units: Cargo passes none, so rustc's default applies: 16 for non-incremental builds
#   since Rust 1.24 (RELEASES.md 1.24.0, rust-lang/rust#46910), 1 before;
# - panic: the key came with Rust 1.10 (RFC 1513; the edition guide's "Aborting on panic" gives
#   1.10 as its minimum version), and unwinding, the only strategy before it, stayed the default;
# - lto: Cargo's manifest reference lists lto = false from its earliest versions, which carry no
#   release, so none is cited. Since Rust 1.24's multiple codegen units, false means rustc's
#   "thin local LTO" across them (rust-lang/rust#45320).
_RELEASE_DEFAULTS: dict[str, tuple[str, str]] = {
    "opt-level": ("3", "Cargo's release default"),
    "debug": ("none", "Cargo's release default (debug = false)"),
    "lto": ("false", "Cargo's release default (thin local LTO across codegen units; no release pinned)"),
    "codegen-units": (
        "16",
        "Cargo's release default: rustc's, 16 for non-incremental builds since Rust 1.24 (rust-lang/rust#46910)",
    ),
    "panic": ("unwind", "Cargo's release default since the panic key arrived in Rust 1.10 (RFC 1513)"),
}


# Cargo's dev profile (the Cargo book, "Profiles", "dev"): what `cargo build` without --release uses.
_DEV_DEFAULTS: dict[str, tuple[str, str]] = {
    "opt-level": ("0", "Cargo's dev default"),
    "debug": ("full", "Cargo's dev default (debug = true)"),
    "lto": ("false", "Cargo's dev default"),
    "codegen-units": ("256", "Cargo's dev default (incremental builds)"),
    "panic": ("unwind", "Cargo's dev default"),
}


def profile_chain(profiles: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    """``name``'s ``inherits`` chain down to ``release`` or ``dev`` (None when it reaches neither)."""
    chain = [name]
    current = name
    while current not in ("release", "dev") and len(chain) <= len(profiles) + 1:
        parent = profiles.get(current, {}).get("inherits")
        if not isinstance(parent, str):
            return None
        chain.append(parent)
        current = parent
    return tuple(chain) if current in ("release", "dev") else None


def profiles_inheriting_release(profiles: Mapping[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """("release", chain) and every custom profile whose ``inherits`` chain reaches release."""
    found: list[tuple[str, tuple[str, ...]]] = [("release", ("release",))]
    for name in sorted(profiles):
        if name in ("release", "dev", "test", "bench"):
            continue
        chain = profile_chain(profiles, name)
        if chain is not None and chain[-1] == "release":
            found.append((name, chain))
    return found


def normal_debug(value: Any) -> str:
    text = str(value).lower()
    return {
        "0": "none",
        "false": "none",
        "none": "none",
        "1": "limited",
        "limited": "limited",
        "2": "full",
        "true": "full",
        "full": "full",
        "line-tables-only": "line-tables-only",
        "line-directives-only": "line-directives-only",
    }.get(text, text)


def _normal_strip(value: Any) -> str:
    text = str(value).lower()
    return {"true": "symbols", "false": "none"}.get(text, text)


def _normal(key: str, value: Any) -> str:
    if key == "debug":
        return normal_debug(value)
    if key == "strip":
        return _normal_strip(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


class ResolvedProfile(NamedTuple):
    settings: dict[str, Setting]  # explicitly set (or default) keys, strip/split-debuginfo only when set
    overrides: tuple[PackageOverride, ...]


def resolve_profile(
    name: str,
    chain: tuple[str, ...],
    layers: Sequence[tuple[str, Mapping[str, Any]]],
    env: Mapping[str, str],
) -> ResolvedProfile:
    """Settings of profile ``name``: defaults, then each profile of its chain from release down,
    each from the manifest then the config (which wins), then ``CARGO_PROFILE_<NAME>_<KEY>``."""
    defaults = _DEV_DEFAULTS if chain[-1] == "dev" else _RELEASE_DEFAULTS
    settings = {key: Setting(key, value, source) for key, (value, source) in defaults.items()}
    overrides: dict[str, dict[str, Setting]] = {}
    for profile in reversed(chain):
        for where, profiles in layers:
            table = profiles.get(profile, {})
            for key in PROFILE_KEYS:
                if key in table:
                    settings[key] = Setting(key, _normal(key, table[key]), f"{where} [profile.{profile}]")
            for package, package_table in table.get("package", {}).items():
                for key, value in package_table.items():
                    if key in PROFILE_KEYS and key not in _NOT_OVERRIDABLE:
                        overrides.setdefault(package, {})[key] = Setting(
                            key, _normal(key, value), f'{where} [profile.{profile}.package."{package}"]'
                        )
    prefix = f"CARGO_PROFILE_{name.upper().replace('-', '_')}_"
    for key in PROFILE_KEYS:
        variable = prefix + key.upper().replace("-", "_")
        if variable in env:
            settings[key] = Setting(key, _normal(key, env[variable]), f"environment {variable}")
    return ResolvedProfile(
        settings,
        tuple(PackageOverride(package, tuple(values.values())) for package, values in sorted(overrides.items())),
    )


def profile_report(name: str, chain: tuple[str, ...], resolved: ResolvedProfile) -> ProfileReport:
    return ProfileReport(name, chain, tuple(resolved.settings.values()), resolved.overrides)

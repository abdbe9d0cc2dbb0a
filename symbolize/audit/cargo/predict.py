"""What a target's build emits under a resolved profile, what a profile of it shows, the smallest fix,
and how the binaries given differ from the prediction."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from symbolize.audit.cargo.config import codegen_options
from symbolize.audit.cargo.model import PackageOverride, Setting, TargetPrediction
from symbolize.audit.cargo.profiles import ResolvedProfile, normal_debug
from symbolize.audit.report import BinaryAudit, ProfileView


def platform_of(target: str) -> str:
    if "windows-msvc" in target:
        return "windows-msvc"
    if "windows" in target:
        return "windows-gnu"
    if "apple" in target or "darwin" in target:
        return "macos"
    return "elf"


_RUSTC_DEBUGINFO = {"0": "none", "1": "limited", "2": "full"}

# A binary's format -> the platform whose prediction it is compared with.
BINARY_PLATFORMS = {"elf": "elf", "pe": "windows-msvc", "macho": "macos"}


def predict(profile: str, target: str, resolved: ResolvedProfile, rustflags: Sequence[str]) -> TargetPrediction:
    platform = platform_of(target)
    options = codegen_options(rustflags)
    settings = resolved.settings
    debug = settings["debug"].value
    if "debuginfo" in options:
        debug = _RUSTC_DEBUGINFO.get(options["debuginfo"], normal_debug(options["debuginfo"]))
    any_debug = debug != "none" or any(
        setting.key == "debug" and setting.value != "none" for o in resolved.overrides for setting in o.settings
    )
    strip = _effective_strip(settings, options, any_debug, platform)
    split = _effective_split(settings, options, debug, platform)
    forced = options.get("force-frame-pointers", "no") in ("", "yes", "y", "on", "true", "always")
    if forced:
        frame_pointers = "forced"
    elif platform == "macos":
        frame_pointers = "target default: kept"  # Apple's ABIs require them; rustc keeps them there
    else:
        # In the crates built; the prebuilt std keeps them since Rust 1.79 (rust-lang/rust#122646).
        frame_pointers = "target default: may be omitted"
    emits, shows, shipped, reasons = _what_is_emitted(platform, debug, strip.value, split.value)
    dependency_note = _dependency_debug_note(resolved.overrides, debug)
    if dependency_note:
        reasons.append(dependency_note)
    fixes = _cargo_fixes(profile, platform, debug, strip, split, shows, forced)
    return TargetPrediction(
        profile, target, platform, debug, strip, split, frame_pointers, tuple(emits), shows, shipped,
        tuple(reasons), tuple(fixes),
    )  # fmt: skip


def _effective_strip(
    settings: Mapping[str, Setting], options: Mapping[str, str], any_debug: bool, platform: str
) -> Setting:
    if "strip" in options:
        return Setting("strip", options["strip"], "rustflags -C strip")
    if "strip" in settings:
        return settings["strip"]
    if not any_debug and platform != "windows-msvc":
        return Setting(
            "strip",
            "debuginfo",
            "Cargo default since 1.77: no package asks for debug info, so std's is stripped (rust-lang/cargo#13257)",
        )
    if not any_debug:
        return Setting("strip", "none", "Cargo default: not stripped on *-windows-msvc (rust-lang/cargo#13630, 1.77)")
    return Setting("strip", "none", "Cargo default")


def _effective_split(settings: Mapping[str, Setting], options: Mapping[str, str], debug: str, platform: str) -> Setting:
    if "split-debuginfo" in options:
        return Setting("split-debuginfo", options["split-debuginfo"], "rustflags -C split-debuginfo")
    if "split-debuginfo" in settings:
        return settings["split-debuginfo"]
    if platform == "macos" and debug != "none":
        return Setting("split-debuginfo", "unpacked", "Cargo default on macOS with debug info, since 1.53 (#9298)")
    if platform == "windows-msvc":
        return Setting("split-debuginfo", "packed", "rustc default on Windows MSVC: a PDB")
    if platform == "macos":
        return Setting("split-debuginfo", "packed", "rustc default on macOS (no debug info: nothing to pack)")
    return Setting("split-debuginfo", "off", "rustc default on ELF and windows-gnu: DWARF stays in the binary")


def _what_is_emitted(
    platform: str, debug: str, strip: str, split: str
) -> tuple[list[str], ProfileView, str, list[str]]:
    """(artifacts, view, what must ship, reasons) for one target's settings."""
    has_lines = debug not in ("none",)
    has_inlines = debug in ("line-tables-only", "limited", "full")
    reasons: list[str] = []
    emits: list[str] = []
    if platform == "windows-msvc":
        # rustc passes /DEBUG (a PDB, public symbols at least) unless stripping, then /DEBUG:NONE.
        if strip != "none":
            emits.append("no PDB (rustc links with /DEBUG:NONE when stripping)")
            reasons.append(f"strip = {strip!r}: no PDB at all, and a PE has no symbol table: bare hex")
            return emits, ProfileView.BARE_HEX, "", reasons
        emits.append(f"a .pdb beside the .exe ({'public symbols only' if not has_lines else 'debug info ' + debug})")
        view = _view(True, has_lines, has_inlines)
        if not has_lines:
            reasons.append("debug = 0: the PDB holds public symbols only, no line tables")
        return emits, view, "the .pdb", reasons
    if strip == "symbols":
        emits.append("no symbol table, no debug info (dynamic exports only)")
        reasons.append('strip = "symbols": only exported symbols remain: bare hex')
        return emits, ProfileView.BARE_HEX, "", reasons
    names = True
    if strip == "debuginfo" or not has_lines:
        emits.append("symbol table only" + ("" if has_lines else " (no debug info requested)"))
        if strip == "debuginfo" and has_lines:
            reasons.append(f'strip = "debuginfo" removes the debug = {debug!r} info')
        else:
            reasons.append("debug = 0: no line tables")
        return emits, _view(names, False, False), "the binary", reasons
    if platform == "macos":
        if split == "packed":
            emits.append("a .dSYM bundle beside the binary")
            return emits, _view(True, True, has_inlines), "the .dSYM", reasons
        emits.append("a debug map pointing at target/'s object files (unpacked): not shipped with the binary")
        reasons.append(f"split-debuginfo = {split!r}: the debug info stays in target/ on the build machine")
        return emits, ProfileView.NAMES, "the object files in target/ (never shipped)", reasons
    if split == "packed":
        emits.append("a .dwp beside the binary, skeleton units in it")
        return emits, _view(True, True, has_inlines), "the .dwp", reasons
    if split == "unpacked":
        # In place, the skeleton units lead to the .dwo files in target/ and they answer in full;
        # a copy of the binary alone keeps the skeletons' line tables only.
        emits.append(".dwo files in target/, skeleton units in the binary")
        reasons.append(
            "split-debuginfo = 'unpacked': the .dwo files stay in target/; the binary in place finds them, "
            "a copy without them shows names+lines"
        )
        return emits, _view(True, True, has_inlines), "the .dwo files in target/ (rarely shipped)", reasons
    emits.append(f"DWARF ({debug}) in the binary")
    return emits, _view(True, True, has_inlines), "the binary", reasons


def _view(names: bool, lines: bool, inlines: bool) -> ProfileView:
    if not names:
        return ProfileView.BARE_HEX
    if not lines:
        return ProfileView.NAMES
    return ProfileView.WITH_INLINES if inlines else ProfileView.NAMES_LINES


def _dependency_debug_note(overrides: Sequence[PackageOverride], debug: str) -> str | None:
    for override in overrides:
        for setting in override.settings:
            if setting.key == "debug" and setting.value != debug:
                who = "every dependency" if override.package == "*" else f"package {override.package}"
                return f"{setting.source}: debug = {setting.value!r} for {who} (the workspace's own code: {debug!r})"
    return None


def _cargo_fixes(
    profile: str, platform: str, debug: str, strip: Setting, split: Setting, shows: ProfileView, forced: bool
) -> list[str]:
    fixes: list[str] = []
    # On macOS Cargo's split-debuginfo turns "unpacked" (the debug info stays in target/) as soon as
    # there is debug info to split, so a "packed" that only means "nothing to pack" must be asked for.
    macos_unpacked = platform == "macos" and (split.value != "packed" or split.source.startswith("rustc default"))
    if shows.rank < ProfileView.NAMES_LINES.rank or (platform == "macos" and split.value != "packed"):
        change = []
        if debug == "none" or debug == "line-directives-only":
            change.append('debug = "line-tables-only"')
        # Cargo's implicit strip (no debug info asked for) goes away by itself once debug is set.
        if strip.value != "none" and not strip.source.startswith("Cargo default"):
            change.append('strip = "none"')
        if macos_unpacked:
            change.append('split-debuginfo = "packed"  # a .dSYM to ship beside the binary')
        elif platform == "elf":
            change.append('# optional: split-debuginfo = "packed" ships the line tables as a .dwp beside the binary')
        if change:
            fixes.append(f"[profile.{profile}] " + "; ".join(change))
        if platform == "windows-msvc":
            fixes.append("ship the .pdb with the .exe (or publish it to a symbol server)")
    if not forced and platform != "macos":
        fixes.append(
            '.cargo/config.toml: [build] rustflags = ["-C", "force-frame-pointers=yes"] (for your crates: '
            "the prebuilt std has frame pointers since Rust 1.79)"
        )
    return fixes


# --- against the binaries ------------------------------------------------------------------


def size_costs(binaries: Sequence[BinaryAudit]) -> list[str]:
    """What debug info costs in each binary given: the price of keeping it, where the binary shows it."""
    costs = []
    for audit in binaries:
        info = audit.debug_info
        name = audit.identity.path
        if info.debug_section_bytes:
            share = info.debug_section_bytes / info.file_bytes if info.file_bytes else 0.0
            costs.append(
                f"{name}: debug sections take {info.debug_section_bytes} of {info.file_bytes} bytes ({share:.0%}), "
                f"line tables {info.line_table_bytes} of them"
            )
        else:
            costs.append(
                f"{name}: {info.file_bytes} bytes, no debug sections: build once with the change to see its cost"
            )
    return costs


def profile_of_binary(path: Path, profiles: Collection[str]) -> str | None:
    """The Cargo profile that built ``path``, from where Cargo puts its output (the Cargo book,
    "Build cache"): ``target/[<triple>/]debug/`` is ``dev``, ``release/`` release, any other
    directory there the custom profile of that name; outside a ``target/``, the nearest directory
    named after one of ``profiles``; else None."""
    parts = path.absolute().parts[:-1]
    if "target" in parts:
        below = parts[len(parts) - parts[::-1].index("target") :]
        # target/<profile>/ or target/<triple>/<profile>/, output in <profile>/ or its examples/.
        for directory in below[:2]:
            if directory == "debug":
                return "dev"
            if directory in profiles or directory == "release":
                return directory
        if below and (len(below) == 1 or below[0].count("-") < 2):
            return below[0]  # a custom profile this manifest does not define (or no longer)
        if len(below) >= 2:
            return below[1]
    return next((part for part in reversed(parts) if part in profiles), None)


def compare(predictions: Sequence[TargetPrediction], binaries: Sequence[BinaryAudit]) -> list[str]:
    """Each way a binary differs from the prediction for its platform and profile.

    Not a difference: frame pointers in most functions of a build that does not force them
    (the prebuilt std has them since Rust 1.79, rust-lang/rust#122646, and a small program is
    mostly std).
    """
    differences = []
    profiles = {p.profile for p in predictions}
    for audit in binaries:
        platform = BINARY_PLATFORMS.get(audit.identity.format, "")
        name = audit.identity.path
        profile = profile_of_binary(Path(name), profiles) or "release"
        if profile not in profiles:
            differences.append(
                f"{name}: built with profile {profile!r}, which the manifest does not define: compared with release"
            )
            profile = "release"
        prediction = next((p for p in predictions if p.platform == platform and p.profile == profile), None)
        if prediction is None:
            differences.append(f"{name}: no prediction for {audit.identity.format} (add a --target for it)")
            continue
        if audit.verdict.shows != prediction.shows:
            differences.append(
                f"{name}: predicted {prediction.shows.value} ({prediction.profile}, {prediction.target}), "
                f"the binary shows {audit.verdict.shows.value}"
            )
        share = audit.frame_pointers.non_leaf_share
        if prediction.frame_pointers == "forced" and share is not None and share < 0.9:
            differences.append(
                f"{name}: frame pointers forced, but only {share:.0%} of sampled non-leaf functions set one up"
            )
        embedded = any(f.how == "embedded" for f in audit.debug_info.files)
        split = any(f.how == "split-dwarf" for f in audit.debug_info.files)
        if prediction.split_debuginfo.value == "packed" and platform == "elf" and not split and embedded:
            differences.append(f"{name}: split-debuginfo = 'packed' predicted, but the DWARF is not split")
        if prediction.split_debuginfo.value == "off" and split:
            differences.append(f"{name}: split DWARF found, but split-debuginfo is 'off'")
    return differences

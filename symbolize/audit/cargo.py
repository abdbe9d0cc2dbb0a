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
and windows-gnu, ``packed`` for Windows MSVC: the PDB), ``lto = false``,
``codegen-units = 16``, ``panic = "unwind"``. ``[target.'cfg(...)']`` tables
are evaluated from the target triple alone (``target_os``, ``target_arch``,
``target_env``, ``target_vendor``, ``target_family``, ``unix``, ``windows``,
``all``/``any``/``not``); any other predicate is false.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from symbolize.audit.report import BinaryAudit, ProfileView, Requirement
from symbolize.formats.errors import MalformedInputError, MissingDebugInfoError

DEFAULT_TARGETS = ("x86_64-unknown-linux-gnu", "x86_64-pc-windows-msvc", "aarch64-apple-darwin")
PROFILE_KEYS = ("debug", "strip", "split-debuginfo", "lto", "codegen-units", "panic", "opt-level")
# Override tables cannot set these (Cargo book, "Overrides").
_NOT_OVERRIDABLE = frozenset({"panic", "lto", "rpath"})

_RELEASE_DEFAULTS: dict[str, tuple[str, str]] = {
    "opt-level": ("3", "Cargo's release default"),
    "debug": ("none", "Cargo's release default (debug = false)"),
    "lto": ("false", "Cargo's release default"),
    "codegen-units": ("16", "Cargo's release default (non-incremental)"),
    "panic": ("unwind", "Cargo's release default"),
}


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


def audit_cargo(
    manifest: Path,
    targets: Sequence[str],
    binaries: Sequence[BinaryAudit] = (),
    environment: Mapping[str, str] | None = None,
) -> CargoAudit:
    """Read the project at ``manifest`` and predict each target's release build (see the module docstring)."""
    env = dict(os.environ if environment is None else environment)
    manifest = manifest.absolute()
    root_path, root, members, notes = _workspace(manifest)
    config, config_notes = _config(root_path.parent, env)
    notes += config_notes
    manifest_profiles = root.get("profile", {})
    config_profiles = config.get("profile", {})
    profiles_table = dict(manifest_profiles)
    for name, table in config_profiles.items():
        profiles_table[name] = _deep_merge(profiles_table.get(name, {}), table)
    release_like = _profiles_inheriting_release(profiles_table)
    wanted = tuple(targets) or DEFAULT_TARGETS
    reports = []
    predictions = []
    for name, chain in release_like:
        resolved = _resolve_profile(
            name, chain, (("Cargo.toml", manifest_profiles), (".cargo/config.toml", config_profiles)), env
        )
        rustflags_by_target = {target: _rustflags(config, env, target) for target in wanted}
        reports.append(_profile_report(name, chain, resolved))
        for target in wanted:
            flags, _source = rustflags_by_target[target]
            predictions.append(_predict(name, target, resolved, flags))
    flags, source = _rustflags(config, env, wanted[0])
    differences = tuple(_compare(predictions, binaries))
    return CargoAudit(
        manifest=str(manifest),
        workspace_root=str(root_path),
        members=tuple(members),
        profiles=tuple(reports),
        rustflags=tuple(flags),
        rustflags_source=source,
        predictions=tuple(predictions),
        differences=differences,
        size_costs=tuple(_size_costs(binaries)),
        notes=tuple(notes),
    )


# --- manifests and config ------------------------------------------------------------------


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError as err:
        raise MissingDebugInfoError("Cargo manifest not found", path) from err
    except tomllib.TOMLDecodeError as err:
        raise MalformedInputError(f"not valid TOML: {err}", path) from err
    except OSError as err:
        raise MalformedInputError(f"cannot read: {err.strerror or err}", path) from err


def _workspace(manifest: Path) -> tuple[Path, dict[str, Any], list[str], list[str]]:
    """(root manifest path, its table, member directories, notes) of the workspace holding ``manifest``."""
    data = _load_toml(manifest)
    notes: list[str] = []
    root_path, root = manifest, data
    if "workspace" not in data:
        for parent in manifest.parent.parents:
            candidate = parent / "Cargo.toml"
            if not candidate.is_file():
                continue
            table = _load_toml(candidate)
            if "workspace" in table and manifest.parent in _member_dirs(candidate.parent, table["workspace"]):
                root_path, root = candidate, table
                break
    members = _member_dirs(root_path.parent, root.get("workspace", {}))
    if "package" in root and root_path.parent not in members:
        members.insert(0, root_path.parent)
    if root_path != manifest and "profile" in data:
        notes.append(f"{manifest}: [profile] in a workspace member is ignored; Cargo reads {root_path}")
    return root_path, root, [str(member.relative_to(root_path.parent)) or "." for member in members], notes


def _member_dirs(root_dir: Path, workspace: Mapping[str, Any]) -> list[Path]:
    excluded = {(root_dir / pattern).resolve() for pattern in workspace.get("exclude", [])}
    found: list[Path] = []
    for pattern in workspace.get("members", []):
        for match in sorted(root_dir.glob(pattern)) if any(c in pattern for c in "*?[") else [root_dir / pattern]:
            if (match / "Cargo.toml").is_file() and match.resolve() not in excluded:
                found.append(match.absolute())
    return found


def _config(start: Path, env: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """``.cargo/config.toml`` tables merged, the deepest directory winning; notes on what is skipped."""
    files = []
    for directory in (start, *start.parents):
        for name in ("config.toml", "config"):
            path = directory / ".cargo" / name
            if path.is_file():
                files.append(path)
                break
    cargo_home = Path(env["CARGO_HOME"]) if "CARGO_HOME" in env else Path(env.get("HOME", "~")) / ".cargo"
    home_config = cargo_home / "config.toml"
    if home_config.is_file() and home_config not in files:
        files.append(home_config)
    merged: dict[str, Any] = {}
    notes: list[str] = []
    for path in reversed(files):  # shallowest first, so deeper files override
        table = _load_toml(path)
        merged = _deep_merge(merged, table, join_lists=True)
        merged.setdefault("_files", []).append(str(path))
    return merged, notes


def _deep_merge(base: Mapping[str, Any], top: Mapping[str, Any], join_lists: bool = False) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value, join_lists)
        elif join_lists and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *value]
        else:
            merged[key] = value
    return merged


def _rustflags(config: Mapping[str, Any], env: Mapping[str, str], target: str) -> tuple[list[str], str]:
    """The rustflags Cargo passes for ``target``, and where they come from (first source set wins)."""
    if env.get("CARGO_ENCODED_RUSTFLAGS"):
        return env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f"), "CARGO_ENCODED_RUSTFLAGS"
    if env.get("RUSTFLAGS"):
        return shlex.split(env["RUSTFLAGS"]), "RUSTFLAGS"
    targets = config.get("target", {})
    target_flags = targets.get(target, {}).get("rustflags")
    if target_flags:
        return _flag_list(target_flags), f"[target.{target}] rustflags in .cargo/config.toml"
    matching = [key for key in targets if key.startswith("cfg(") and cfg_matches(key, target)]
    if matching:
        flags = [flag for key in matching for flag in _flag_list(targets[key].get("rustflags", []))]
        if flags:
            return flags, f"[target.'{matching[0]}'] rustflags in .cargo/config.toml"
    build_flags = config.get("build", {}).get("rustflags")
    if build_flags:
        return _flag_list(build_flags), "[build] rustflags in .cargo/config.toml"
    return [], "none"


def _triple_cfg(target: str) -> dict[str, str]:
    parts = target.split("-")
    arch = parts[0]
    os_name = (
        "macos"
        if "darwin" in target
        else "windows"
        if "windows" in target
        else "linux"
        if "linux" in target
        else parts[2]
        if len(parts) > 2
        else ""
    )
    env = parts[3] if len(parts) > 3 else ("msvc" if "msvc" in target else "")
    return {
        "target_arch": "aarch64" if arch in ("aarch64", "arm64") else arch,
        "target_os": os_name,
        "target_env": env if env in ("gnu", "msvc", "musl") else "",
        "target_vendor": parts[1] if len(parts) > 1 else "",
        "target_family": "windows" if os_name == "windows" else "unix",
    }


_MAX_CFG_DEPTH = 16


def cfg_matches(expression: str, target: str) -> bool:
    """Whether ``cfg(...)`` holds for ``target`` (see the module docstring for what is understood)."""
    values = _triple_cfg(target)
    tokens = expression.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").replace("=", " = ").split()
    position = 0

    def predicate(depth: int = 0) -> bool:
        nonlocal position
        if depth > _MAX_CFG_DEPTH:
            raise IndexError("cfg() nested too deeply")
        word = tokens[position]
        position += 1
        if word in ("cfg", "all", "any", "not") and position < len(tokens) and tokens[position] == "(":
            position += 1
            results = []
            while position < len(tokens) and tokens[position] != ")":
                results.append(predicate(depth + 1))
                if position < len(tokens) and tokens[position] == ",":
                    position += 1
            position += 1
            if word == "all" or word == "cfg":
                return all(results)
            if word == "any":
                return any(results)
            return not results[0] if results else False
        if position < len(tokens) and tokens[position] == "=":
            value = tokens[position + 1].strip('"')
            position += 2
            return values.get(word) == value
        return word == values["target_family"]  # `unix`, `windows`

    try:
        return predicate()
    except IndexError:
        return False


def _flag_list(value: Any) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else [str(item) for item in value]


def _codegen_options(flags: Sequence[str]) -> dict[str, str]:
    """``-C key=value`` options (and ``-g``) in ``flags``; the last of each key wins, as in rustc."""
    options: dict[str, str] = {}
    position = 0
    while position < len(flags):
        flag = flags[position]
        if flag == "-g":
            options["debuginfo"] = "2"
        elif flag in ("-C", "--codegen") and position + 1 < len(flags):
            position += 1
            key, _, value = flags[position].partition("=")
            options[key] = value
        elif flag.startswith("-C") and len(flag) > 2:
            key, _, value = flag[2:].partition("=")
            options[key] = value
        elif flag.startswith("--codegen="):
            key, _, value = flag[len("--codegen=") :].partition("=")
            options[key] = value
        position += 1
    return options


# --- profiles ------------------------------------------------------------------------------


def _profiles_inheriting_release(profiles: Mapping[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """("release", chain) and every custom profile whose ``inherits`` chain reaches release."""
    found: list[tuple[str, tuple[str, ...]]] = [("release", ("release",))]
    for name in sorted(profiles):
        if name in ("release", "dev", "test", "bench"):
            continue
        chain = [name]
        current = name
        while current not in ("release", "dev") and len(chain) <= len(profiles) + 1:
            parent = profiles.get(current, {}).get("inherits")
            if not isinstance(parent, str):
                break
            chain.append(parent)
            current = parent
        if chain[-1] == "release":
            found.append((name, tuple(chain)))
    return found


def _normal_debug(value: Any) -> str:
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
        return _normal_debug(value)
    if key == "strip":
        return _normal_strip(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


class _Resolved(NamedTuple):
    settings: dict[str, Setting]  # explicitly set (or default) keys, strip/split-debuginfo only when set
    overrides: tuple[PackageOverride, ...]


def _resolve_profile(
    name: str,
    chain: tuple[str, ...],
    layers: Sequence[tuple[str, Mapping[str, Any]]],
    env: Mapping[str, str],
) -> _Resolved:
    """Settings of profile ``name``: defaults, then each profile of its chain from release down,
    each from the manifest then the config (which wins), then ``CARGO_PROFILE_<NAME>_<KEY>``."""
    settings = {key: Setting(key, value, source) for key, (value, source) in _RELEASE_DEFAULTS.items()}
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
    return _Resolved(
        settings,
        tuple(PackageOverride(package, tuple(values.values())) for package, values in sorted(overrides.items())),
    )


def _profile_report(name: str, chain: tuple[str, ...], resolved: _Resolved) -> ProfileReport:
    return ProfileReport(name, chain, tuple(resolved.settings.values()), resolved.overrides)


# --- predictions ---------------------------------------------------------------------------


def platform_of(target: str) -> str:
    if "windows-msvc" in target:
        return "windows-msvc"
    if "windows" in target:
        return "windows-gnu"
    if "apple" in target or "darwin" in target:
        return "macos"
    return "elf"


_RUSTC_DEBUGINFO = {"0": "none", "1": "limited", "2": "full"}


def _predict(profile: str, target: str, resolved: _Resolved, rustflags: Sequence[str]) -> TargetPrediction:
    platform = platform_of(target)
    options = _codegen_options(rustflags)
    settings = resolved.settings
    debug = settings["debug"].value
    if "debuginfo" in options:
        debug = _RUSTC_DEBUGINFO.get(options["debuginfo"], _normal_debug(options["debuginfo"]))
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
        emits.append(".dwo files in target/, skeleton units in the binary")
        reasons.append("split-debuginfo = 'unpacked': the .dwo files stay in target/")
        return emits, ProfileView.NAMES_LINES, "the .dwo files (rarely shipped)", reasons
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
    if shows.rank < ProfileView.NAMES_LINES.rank or (platform == "macos" and split.value != "packed"):
        change = []
        if debug == "none" or debug == "line-directives-only":
            change.append('debug = "line-tables-only"')
        # Cargo's implicit strip (no debug info asked for) goes away by itself once debug is set.
        if strip.value != "none" and not strip.source.startswith("Cargo default"):
            change.append('strip = "none"')
        if platform == "macos" and split.value != "packed":
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


def _size_costs(binaries: Sequence[BinaryAudit]) -> list[str]:
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


def _compare(predictions: Sequence[TargetPrediction], binaries: Sequence[BinaryAudit]) -> list[str]:
    """Each way a binary differs from the prediction for its platform and profile.

    Not a difference: frame pointers in most functions of a build that does not force them
    (the prebuilt std has them since Rust 1.79, rust-lang/rust#122646, and a small program is
    mostly std).
    """
    differences = []
    profiles = {p.profile for p in predictions}
    for audit in binaries:
        platform = {"elf": "elf", "pe": "windows-msvc", "macho": "macos"}.get(audit.identity.format, "")
        # Cargo puts a profile's output in target/<profile>/ (target/<triple>/<profile>/): that names
        # the profile a binary was built with; anything else is compared with release.
        parts = Path(audit.identity.path).parts
        profile = next((part for part in reversed(parts[:-1]) if part in profiles), "release")
        prediction = next((p for p in predictions if p.platform == platform and p.profile == profile), None)
        name = audit.identity.path
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

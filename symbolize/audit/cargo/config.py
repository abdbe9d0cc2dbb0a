"""Reading a Cargo project: the workspace root, ``.cargo/config.toml`` files, rustflags, ``cfg()``.

As the Cargo book describes ("Workspaces", "Configuration", "Environment variables"): profiles
are read from the workspace root; config files from the project up to the file system root,
then ``$CARGO_HOME``; rustflags from ``CARGO_ENCODED_RUSTFLAGS``, else ``RUSTFLAGS``, else
``[target.<triple>]``, else matching ``[target.'cfg(...)']`` tables, else ``[build]``.
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from symbolize.formats.errors import MalformedInputError, MissingDebugInfoError


def load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError as err:
        raise MissingDebugInfoError("Cargo manifest not found", path) from err
    except tomllib.TOMLDecodeError as err:
        raise MalformedInputError(f"not valid TOML: {err}", path) from err
    except OSError as err:
        raise MalformedInputError(f"cannot read: {err.strerror or err}", path) from err


def workspace_of(manifest: Path) -> tuple[Path, dict[str, Any], list[str], list[str]]:
    """(root manifest path, its table, member directories, notes) of the workspace holding ``manifest``."""
    data = load_toml(manifest)
    notes: list[str] = []
    root_path, root = manifest, data
    if "workspace" not in data:
        for parent in manifest.parent.parents:
            candidate = parent / "Cargo.toml"
            if not candidate.is_file():
                continue
            table = load_toml(candidate)
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


def cargo_config(start: Path, env: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
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
        table = load_toml(path)
        merged = deep_merge(merged, table, join_lists=True)
        merged.setdefault("_files", []).append(str(path))
    return merged, notes


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any], join_lists: bool = False) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value, join_lists)
        elif join_lists and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *value]
        else:
            merged[key] = value
    return merged


def rustflags_for(config: Mapping[str, Any], env: Mapping[str, str], target: str) -> tuple[list[str], str]:
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


def codegen_options(flags: Sequence[str]) -> dict[str, str]:
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

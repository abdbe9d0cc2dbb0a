"""Describe the machine, tool versions and binary a benchmark ran on, for bench/RESULTS.md."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import site
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from elftools.elf.elffile import ELFFile

import symbolize
from symbolize import native_status

REPO_DIR = Path(__file__).resolve().parent.parent


def describe_environment(
    binaries: Sequence[tuple[Path, int]], args: argparse.Namespace, start_revision: str
) -> list[tuple[str, str]]:
    """Key-value lines for a RESULTS.md section; ``binaries`` pairs each binary with its function count.

    ``start_revision`` is the checkout's revision when the run began: with an editable install each
    ``symbolize`` process runs the tree as it is at that moment, so a commit mid-run shows up here.
    """
    end_revision = git_revision()
    revision = end_revision if end_revision == start_revision else f"{start_revision} at start, {end_revision} at end"
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("machine", f"{platform.machine()}, {cpu_model()}, {os.cpu_count()} logical CPUs, load avg {load}"),
        ("os", platform.platform()),
        ("python", interpreter()),
        ("llvm-symbolizer", command_version(["llvm-symbolizer", "--version"], "version")),
        *(
            [("newer llvm-symbolizer", command_version([str(args.newer_llvm), "--version"], "version"))]
            if getattr(args, "newer_llvm", None)
            else []
        ),
        ("pprof", str(args.pprof) if getattr(args, "pprof", None) else "not given (no pprof row)"),
        ("addr2line", command_version(["addr2line", "--version"], "")),
        *((name, command_version([str(path), "--version"], "")) for name, path in rust_peers()),
        ("symbolic", package_version("symbolic")),
        ("symbolize", f"{package_version('pprof-symbolize')} (git {revision}), {native_status()}, {symbolize_dir()}"),
        ("rustc", command_version(["rustc", "--version"], "rustc")),
        ("g++", command_version(["g++", "--version"], "g++")),
        *(("binary", describe_binary(binary, count)) for binary, count in binaries),
        ("output", f"symbolize and llvm-symbolizer print {getattr(args, 'output_style', 'llvm')} layout"),
        ("sampling", f"seed {args.seed}, repeat {args.repeat or '5 (3 for N>=10000)'}, whole-process wall time"),
        ("profile", f"{args.profile_locations} unique locations, {args.profile_repeat} runs per mode"),
    ]


def interpreter() -> str:
    """The interpreter's version, whether it is a venv's, and the ``.pth`` files its site-packages run
    at every start: they are part of every timed run of the Python-based tools (bench/README.md)."""
    kind = "venv" if sys.prefix != sys.base_prefix else "base interpreter"
    startup = sorted(path.name for folder in site.getsitepackages() for path in Path(folder).glob("*.pth"))
    return f"{platform.python_version()}, {kind}, .pth files: {', '.join(startup) or 'none'}"


def symbolize_dir() -> str:
    """Where the timed ``symbolize`` is imported from: a checkout (editable) or site-packages."""
    return f"from {Path(symbolize.__file__).parent}"


def rust_peer(variable: str, program: str) -> Path | None:
    """A Rust peer built by bench/build_peers.sh: ``$variable``, else ``bench/work/peers/bin/program``."""
    configured = os.environ.get(variable)
    candidate = Path(configured) if configured else REPO_DIR / "bench" / "work" / "peers" / "bin" / program
    return candidate if candidate.is_file() else None


def rust_peers() -> list[tuple[str, Path]]:
    """The Rust peers bench/build_peers.sh built, each with its path."""
    found = [("gimli addr2line", rust_peer("SYMBOLIZE_GIMLI_ADDR2LINE", "addr2line"))]
    found.append(("blazecli", rust_peer("SYMBOLIZE_BLAZECLI", "blazecli")))
    return [(name, path) for name, path in found if path is not None]


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def command_version(argv: list[str], marker: str) -> str:
    """First line of ``argv``'s output that contains ``marker`` (any line if empty)."""
    if shutil.which(argv[0]) is None:
        return "not installed"
    try:
        output = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    for line in output.splitlines():
        if marker in line and line.strip():
            return line.strip()
    return "unknown"


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def git_revision() -> str:
    if shutil.which("git") is None:
        return "unknown"
    try:
        result = subprocess.run(
            ["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return result.stdout.strip() or "unknown"


def describe_binary(binary: Path, function_count: int) -> str:
    with binary.open("rb") as stream:
        elf = ELFFile(stream)
        sections = [section for section in elf.iter_sections() if section.name.startswith((".debug_", ".zdebug_"))]
        dwarf_bytes = sum(section["sh_size"] for section in sections)
        info_bytes = sum(section["sh_size"] for section in sections if section.name.endswith("debug_info"))
    try:
        shown = binary.relative_to(REPO_DIR)
    except ValueError:
        shown = binary
    return (
        f"`{shown}`, {_size(binary.stat().st_size)} file, {_size(dwarf_bytes)} DWARF sections "
        f"(.debug_info {_size(info_bytes)}), {function_count} functions"
    )


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1_000_000 else f"{count / 1e3:.1f} kB"

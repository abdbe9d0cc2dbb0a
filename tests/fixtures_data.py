"""Where the committed fixtures live and how to read them (see fixtures/README.md).

Expected answers are llvm-symbolizer's, stored by ``fixtures/make_expected.py``; addresses in
them are object-file addresses (vaddr). Frames are innermost first.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent  # the checkout
FIXTURES = ROOT / "fixtures"
BIN = FIXTURES / "bin"
MACOS_BIN = BIN / "macos"
WINDOWS_BIN = BIN / "windows"
EXPECTED = FIXTURES / "expected"
PROFILES = FIXTURES / "profiles"
DEBUG_DIR = BIN / "debug"


@dataclass(frozen=True)
class ExpectedFrame:
    """One frame as llvm-symbolizer printed it; ``function_demangled`` is its --demangle name."""

    function: str | None
    function_demangled: str | None
    file: str | None
    line: int
    column: int
    start_line: int


def _frame(data: dict[str, Any]) -> ExpectedFrame:
    # The stored file omits function_demangled where demangling left the name unchanged.
    return ExpectedFrame(
        function=data["function"],
        function_demangled=data.get("function_demangled", data["function"]),
        file=data["file"],
        line=data["line"],
        column=data["column"],
        start_line=data["start_line"],
    )


@dataclass(frozen=True)
class ExpectedAddress:
    vaddr: int
    kind: str  # "function_start", "inlined", "random" or "text"
    frames: tuple[ExpectedFrame, ...]  # innermost first


@dataclass(frozen=True)
class Expected:
    variant: str
    binary: Path
    llvm_symbolizer_version: str
    addresses: tuple[ExpectedAddress, ...]


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "manifest.json").read_text())
    return data


def variants_with_expected() -> list[str]:
    """Names of the variants that have stored llvm-symbolizer answers, sorted."""
    return sorted(path.stem for path in EXPECTED.glob("*.json"))


def variant_files(variant: str) -> list[Path]:
    """The files of a variant, the binary first (then its .debug, .dwo or .dwp files)."""
    return [FIXTURES / name for name in manifest()["variants"][variant]["files"]]


def load_expected(variant: str) -> Expected:
    data = json.loads((EXPECTED / f"{variant}.json").read_text())
    return Expected(
        variant=variant,
        binary=FIXTURES / data["binary"],
        llvm_symbolizer_version=data["llvm_symbolizer_version"],
        addresses=tuple(
            ExpectedAddress(
                vaddr=int(entry["address"], 16),
                kind=entry["kind"],
                frames=tuple(_frame(frame) for frame in entry["frames"]),
            )
            for entry in data["addresses"]
        ),
    )


def list_profiles() -> list[Path]:
    """Every committed pprof profile (``*.pb`` and gzip-compressed ``*.pb.gz``), sorted."""
    return sorted([*PROFILES.glob("*.pb"), *PROFILES.glob("*.pb.gz")])


def read_profile_bytes(path: Path) -> bytes:
    """The serialized Profile message, gunzipped when the file is gzip-compressed."""
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data

"""Parse each tool's output into per-address stacks of function names, to check tools agree.

A timing is only worth comparing when the tools did the same work, so the harness checks that each
tool names the same frames as llvm-symbolizer. Names are compared with whitespace removed because
demanglers differ only in spacing (LLVM 14 prints ``> >``, newer ones ``>>``), and with GCC's clone
suffixes dropped (``(.cold)``, ``(.isra.0)``): for code GCC split into a ``.cold`` part, one tool
names the symbol-table clone and another the DWARF function it came from. A function without a
linkage name is qualified by ``symbolize`` (``unit1::helper_3``) where llvm-symbolizer prints the
bare DWARF name (``helper_3``): the same frame. Rust legacy names' ``$LT$``-style escapes, which
``symbolize`` decodes (``<``, ``{{closure}}``: symbolize/demangle.py, as rustc-demangle does) and
LLVM 14 prints as they are, are decoded on both sides before comparing. addr2line's
``-f -i`` output has no separator between addresses, so it is not parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

Stacks = list[list[str]]
UNKNOWN_NAMES = {"??", ""}
CLONE_SUFFIX = re.compile(r"(\s*\(\.[A-Za-z_][\w.]*\)|\.(cold|isra|part|constprop)[\w.]*)+$")


def _decoded(name: str) -> str:
    from symbolize.demangle import _RUST_ESCAPE, _compiled, _decode_rust_legacy  # the toolkit's own rule

    return _decode_rust_legacy(name) if _compiled(_RUST_ESCAPE).search(name) else name


def _names(functions: list[str]) -> list[str]:
    names = ["".join(CLONE_SUFFIX.sub("", _decoded(name)).split()) for name in functions]
    return [] if all(name in UNKNOWN_NAMES for name in names) else names


def _blocks(text: str) -> list[list[str]]:
    return [block.splitlines() for block in text.strip("\n").split("\n\n")]


def parse_llvm_symbolizer(text: str) -> Stacks:
    """One block per address: function and file:line:column lines, innermost first."""
    return [_names(lines[0::2]) for lines in _blocks(text)]


def parse_symbolic_lookup(text: str) -> Stacks:
    """bench/symbolic_lookup.py: like llvm-symbolizer, with the address echoed as each block's first line."""
    return [_names(lines[1::2]) for lines in _blocks(text)]


def parse_llvm_json(text: str) -> Stacks:
    """llvm-symbolizer's ``--output-style=JSON`` (symbolize's too): one object per line, ``Symbol`` innermost first."""
    stacks = []
    for line in text.splitlines():
        if line.strip():
            record = json.loads(line)
            frames = record.get("Symbol") or []
            stacks.append(_names([str(frame.get("FunctionName") or "") for frame in frames]))
    return stacks


# Tools printing their own layout whatever the harness's output style; symbolize and every
# llvm-symbolizer ("llvm-symbolizer 22" beside the baseline's) print the style the run asks for.
OWN_LAYOUT: dict[str, Callable[[str], Stacks]] = {
    # gimli's addr2line runs with --llvm: llvm-symbolizer's layout.
    "addr2line (gimli)": parse_llvm_symbolizer,
    "symbolic (cold)": parse_symbolic_lookup,
    "symbolic (warm)": parse_symbolic_lookup,
}
STYLE_PARSERS: dict[str, Callable[[str], Stacks]] = {"llvm": parse_llvm_symbolizer, "json": parse_llvm_json}


def parse_stacks(tool: str, text: str, style: str = "llvm") -> Stacks | None:
    """Stacks of ``tool``'s output, or None when it has no parser or the output does not parse."""
    if tool.startswith(("symbolize", "llvm-symbolizer")):
        parser: Callable[[str], Stacks] | None = STYLE_PARSERS[style]
    else:
        parser = OWN_LAYOUT.get(tool)
    if parser is None:
        return None
    try:
        return parser(text)
    except (ValueError, AttributeError, TypeError):
        return None


def _same_stack(mine: list[str], theirs: list[str]) -> bool:
    return len(mine) == len(theirs) and all(a == b or a.endswith("::" + b) for a, b in zip(mine, theirs, strict=True))


def agreement(stacks: Stacks | None, baseline: Stacks | None) -> str:
    """Share of addresses whose whole stack of names equals the baseline's, as a percentage."""
    if stacks is None or baseline is None:
        return "-"
    if len(stacks) != len(baseline):
        return f"{len(stacks)}/{len(baseline)} answers"
    same = sum(1 for mine, theirs in zip(stacks, baseline, strict=True) if _same_stack(mine, theirs))
    return f"{100 * same / len(baseline):.1f}%"

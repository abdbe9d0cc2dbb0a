"""The one deliberate difference of our names from LLVM 14's: Rust legacy escapes decoded.

llvm-cxxfilt and llvm-symbolizer 14 print a Rust legacy symbol's components as mangled
(``Vec$LT$T$C$A$GT$``, ``_$u7b$$u7b$closure$u7d$$u7d$``); rustc-demangle and GNU c++filt decode
them, and so do we. The tests compare with LLVM's text passed through this decoding.
"""

from __future__ import annotations

import re

RUST_LEGACY = re.compile(r"17h[0-9a-f]{16}E(?:\.|$)")
# rustc-demangle's legacy escapes (its src/legacy.rs), written out from its table.
RUSTC_DEMANGLE_ESCAPES = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ","}


def rustc_demangle_escapes(line: str) -> str:
    """What rustc-demangle prints for the components llvm-cxxfilt leaves escaped."""
    parts = []
    for part in line.split("::"):
        part = part[1:] if part.startswith("_$") else part
        part = re.sub(
            r"\$([A-Z]+|u[0-9a-f]+)\$",
            lambda m: RUSTC_DEMANGLE_ESCAPES.get(m[1]) or chr(int(m[1][1:], 16)),
            part,
        )
        parts.append(part.replace("..", "::"))
    return "::".join(parts)

"""llvm-symbolizer's and addr2line's spellings of ``lookup`` options that click cannot declare.

Their flags take an optional value or a value joined by ``=`` to a short flag, which click
options cannot express without swallowing the next address (``--demangle 0x401000``); so
``main`` rewrites them, in the words after ``lookup``, into the options ``lookup`` declares:

- ``-C``, ``--demangle`` alone, ``--demangle=true`` -> ``--demangle=full``;
  ``--no-demangle``, ``--demangle=false`` -> ``--demangle=none`` (``--demangle MODE`` with
  MODE one of ``full``, ``short``, ``none`` stays ours)
- ``-i``, ``--inlining``, ``--inlining=true`` -> ``--inlines``; ``--inlining=false`` -> ``--no-inlines``
- ``-f``, ``--functions`` alone -> ``--functions=linkage``; ``-f=KIND`` -> ``--functions=KIND``
- ``-e=FILE`` -> ``--obj=FILE`` (click reads ``-e=FILE`` as the file ``=FILE``)
- flags combined after one dash, as llvm-symbolizer takes them (``-Cfi``, ``-as``): each of
  ``-a -C -f -i -p -s`` on its own, rewritten as above

Everything after ``--`` is left alone.
"""

from __future__ import annotations

DEMANGLE_MODES = ("full", "short", "none")

_FIXED = {
    "-C": ["--demangle=full"],
    "--no-demangle": ["--demangle=none"],
    "--demangle=true": ["--demangle=full"],
    "--demangle=false": ["--demangle=none"],
    "-demangle=true": ["--demangle=full"],
    "-demangle=false": ["--demangle=none"],
    "-i": ["--inlines"],
    "--inlining": ["--inlines"],
    "--inlining=true": ["--inlines"],
    "--inlining=false": ["--no-inlines"],
    "-f": ["--functions=linkage"],
    "--functions": ["--functions=linkage"],
}


# The one-letter flags that may be combined after one dash (none takes a value).
_COMBINABLE = frozenset("aCfips")


def _split_flags(word: str) -> list[str]:
    """``-Cfi`` -> ``["-C", "-f", "-i"]``; any other word alone."""
    if len(word) > 2 and word[0] == "-" and word[1] != "-" and set(word[1:]) <= _COMBINABLE:
        return [f"-{letter}" for letter in word[1:]]
    return [word]


def llvm_spellings(argv: list[str]) -> list[str]:
    """``argv`` with the ``lookup`` command's llvm-symbolizer spellings rewritten (module docstring)."""
    if "lookup" not in argv:
        return argv
    start = argv.index("lookup") + 1
    out = argv[:start]
    words = iter(enumerate(argv[start:], start))
    for position, word in words:
        if word == "--":
            out.extend(argv[position:])
            break
        if word == "--demangle":
            following = argv[position + 1] if position + 1 < len(argv) else None
            if following in DEMANGLE_MODES:
                out.append(f"--demangle={following}")
                next(words)
            else:
                out.append("--demangle=full")
        elif word.startswith("-f="):
            out.append("--functions=" + word[3:])
        elif word.startswith("-e="):
            out.append("--obj=" + word[3:])
        else:
            for flag in _split_flags(word):
                out.extend(_FIXED.get(flag, [flag]))
    return out

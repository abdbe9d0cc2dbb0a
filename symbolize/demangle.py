"""Demangling of linkage names: Itanium C++ ABI, Rust legacy and Rust v0 (RFC 2603), MSVC.

``full`` uses LLVM's demanglers (through pycxxfilt), so names read exactly as
``llvm-symbolizer --demangle`` prints them. ``short`` then reduces a name to what
pprof shows by default: no parameter list, no template arguments, no return
type, no clone suffix, no Rust hash, while namespaces and class qualifiers stay.

Only a name with a mangling prefix is demangled: ``_Z`` (Itanium, and the Rust
legacy form, which is ``_ZN...E``), ``_R`` (Rust v0), ``?`` (MSVC), and the same
with Mach-O's extra leading underscore (``__Z``, ``__R``). LLVM's Itanium
demangler also reads bare *types*, so without this rule a C function ``f`` would
read ``float``, ``i`` ``int`` and ``Ss`` ``std::string``. A name longer than
:data:`MAX_DEMANGLE_LENGTH` is left as it is: LLVM's demangler recurses once per nesting
level on the C stack, and a hostile name 100,000 pointers deep (``_Z1fPPPP...i``) crashes the
process; real names stay far below.

Short-mode rules (on the fully demangled text):

- ``void ns::Foo<int>::bar(int) const`` -> ``ns::Foo::bar``
- operators keep their own symbol: ``ns::operator<<(A&, int)`` -> ``ns::operator<<``,
  ``ns::A::operator()(int)`` -> ``ns::A::operator()``
- lambdas and closures keep their marker but lose their signature:
  ``ns::f()::'lambda'(int)::operator()(int) const`` -> ``ns::f::'lambda'::operator()``,
  GNU-style ``{lambda(int)#1}`` -> ``{lambda#1}``, Rust ``{closure#0}`` unchanged
- ``(anonymous namespace)`` is kept; ``[abi:cxx11]`` tags and ``(.cold)`` /
  ``[clone .cold]`` suffixes are dropped
- Rust ``<Type as Trait>::method``: a ``<...>`` that opens a path component is
  the qualified self type, kept (with its own template arguments removed); a bare
  ``<Type>::method`` (an inherent impl, as v0 names print) reads ``Type::method``;
  generic arguments after ``::`` (``drop_in_place::<T>``, ``f::<T>::{closure#0}``) are
  dropped with their ``::``: short is the function's own path
- Rust legacy names lose the ``::h<16 hex>`` hash. Their ``$LT$``-style escapes are
  decoded in ``full`` too (``Vec$LT$T$C$A$GT$`` -> ``Vec<T,A>``, ``_$u7b$$u7b$closure$u7d$$u7d$``
  -> ``{{closure}}``), as rustc-demangle and GNU c++filt print them; LLVM 14 leaves them.

A profile's names (:func:`profile_name`, what ``symbolize profile`` and the library's profile
rewrite write into pprof ``Function`` names) are the mode's names with two Rust rules on top, as
pprof users read Rust: a legacy symbol's ``::h<16 hex>`` hash is dropped in ``full`` too (generic
parameters kept: ``alloc::vec::Vec<T,A>::push_mut``), unless asked to keep it; and a closure is
spelled ``{{closure}}`` whatever named it. Legacy symbols (rustc's default for a crate) say
``{{closure}}`` and carry no closure index; v0 symbols (the prebuilt std's, newer rustc) and
DWARF names say ``{closure#N}``. One stack mixes them, and pprof merges functions by name, so
one spelling is needed; ``{{closure}}`` is the one every source can give truthfully (a legacy
name cannot be given the index it lacks). ``lookup`` keeps LLVM's spelling, as llvm-symbolizer
prints it.
"""

from __future__ import annotations

import functools
import operator
import os
import re
from itertools import compress, filterfalse, repeat
from types import ModuleType
from typing import TYPE_CHECKING, Literal, cast, get_args

__all__ = [
    "DEMANGLER",
    "DEMANGLE_MODES",
    "DemangleMode",
    "demangle",
    "demangle_names",
    "profile_name",
    "remember",
    "shorten",
]

DemangleMode = Literal["full", "short", "none"]
DEMANGLE_MODES: tuple[str, ...] = get_args(DemangleMode)

if TYPE_CHECKING:
    from collections.abc import Callable

    # What makes full-mode names: indexes that store demangled names are keyed by it, so an index
    # made before the prefix rule (which stored ``f`` as ``float``) is not read. Made on first
    # use (__getattr__, :func:`_demangler`).
    DEMANGLER: str
MANGLING_PREFIXES = ("_Z", "_R", "?", "__Z", "__R")
# The prefixes of MANGLING_PREFIXES that pycxxfilt.demangle gives its Itanium demangler.
_ITANIUM_PREFIXES = ("_Z", "__Z")
MAX_DEMANGLE_LENGTH = 16384
# How deep shorten() follows nested brackets before leaving a name whole.
_MAX_NESTING = 256

# name -> full demangling; bounded, since a library caller may symbolize binary after binary.
_MEMO_LIMIT = 1 << 18
_full_names: dict[str, str] = {}
# A Rust legacy path component -> its decoding (_decode_rust_legacy); bounded as _full_names is.
_decoded_components: dict[str, str] = {}

# Regular expressions, compiled on first use (_compiled): most runs demangle nothing (a C binary's
# names), and compiling all of them at import cost ~6M instructions, 1.5 % of a one-address lookup.
_RUST_HASH = r"::h[0-9a-f]{16}$"
# The hash of a full Rust legacy name, before any clone suffix LLVM prints (`` (.llvm.123)``).
_RUST_HASH_BEFORE_SUFFIX = r"::h[0-9a-f]{16}(?=(?: \(\.[^()]*\))*$)"
# A closure as v0 symbols and DWARF names spell it; legacy symbols say {{closure}}.
_V0_CLOSURE = r"\{closure#[0-9]+\}"
# A Rust legacy symbol: an Itanium nested name whose last component is the 17-character hash.
_RUST_LEGACY = r"17h[0-9a-f]{16}E(?:\.|$)"
# A batch's names, one a line, by the demangler each goes to (_by_demangler): a Rust legacy symbol
# ending with its hash, ``_ZN<head>17<hash>E`` (its head, its hash); another Itanium name; a Rust v0
# one; none for the rest (MSVC, Mach-O's __R, a name longer than MAX_DEMANGLE_LENGTH: the repeats'
# bounds, demangled name by name).
_BY_DEMANGLER = r"(?m)^(?:_ZN(.{0,16361}17)(h[0-9a-f]{16})E|(_)_?Z.{0,16381}|(_)R.{0,16382}|.*)$"
_CLONE_SUFFIX = r"(?:\s*\(\.[^()]*\)|\s*\[clone \.[^\]]*\])+$"
_ABI_TAG = r"\[abi:[^\]]*\]"
_QUALIFIERS = r"(?:\s*(?:const|volatile|restrict|noexcept|&&|&))*"
# Longest spellings first so that ``operator<<=`` is not read as ``operator<``.
_OPERATOR_SYMBOL = (
    r"\s*(?:\(\)|\[\]|<=>|<<=|>>=|->\*|new\[\]|delete\[\]|<<|>>|<=|>=|->|&&|\|\||\+\+|--|==|!=|"
    r"[-+*/%^&|]=|[-+*/%^&|~!=<>,]|\"\"\s*\w+)"
)
_OPERATOR_WORD = r"\s+(?:new|delete|co_await)\b"
_IDENT_CHAR = r"[A-Za-z0-9_$]"
_RUST_ESCAPES = {
    "$SP$": "@",
    "$BP$": "*",
    "$RF$": "&",
    "$LT$": "<",
    "$GT$": ">",
    "$LP$": "(",
    "$RP$": ")",
    "$C$": ",",
}
_RUST_ESCAPE = r"\$(?:SP|BP|RF|LT|GT|LP|RP|C|u[0-9a-f]{1,6})\$"
_OPENERS = {"(": ")", "<": ">", "[": "]", "{": "}"}


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@functools.cache
def _llvm() -> ModuleType:
    """pycxxfilt (LLVM's demanglers), loaded on first use: loading the library costs ~4M
    instructions, and a C binary's lookup (no name with a mangling prefix) never asks it."""
    import pycxxfilt

    return pycxxfilt


def __getattr__(name: str) -> str:
    if name == "DEMANGLER":
        return _demangler()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_OUR_RULES = "prefixed names only, rust legacy escapes decoded"


@functools.cache
def _demangler() -> str:
    """:data:`DEMANGLER`: pycxxfilt's release, which fixes the LLVM demanglers it vendors and its own
    handling of them, read from its install's metadata without loading it (a warm lookup reads
    stored names and demangles none: loading LLVM's demanglers and libstdc++ cost it ~1.5 ms).
    The same release names itself alike on every machine and platform, so an index shared
    through a store is found; a file's size or date would not be, and its digest would differ
    per platform. Where pycxxfilt has no such metadata (a bundled copy), the LLVM version it
    reports, loaded."""
    release = _pycxxfilt_release()
    if release is not None:
        return f"llvm demanglers of pycxxfilt {release}, {_OUR_RULES}"
    return f"llvm {_llvm().LLVM_VERSION}, {_OUR_RULES}"


def _pycxxfilt_release() -> str | None:
    """The version in the name of pycxxfilt's ``.dist-info`` directory, beside the package (as pip
    and every installer of wheels lay it out); None when there is not exactly one."""
    import importlib.util  # only an index key asks (a cold lookup never does)

    spec = importlib.util.find_spec("pycxxfilt")
    if spec is None or not spec.submodule_search_locations:
        return None
    prefix, suffix = "pycxxfilt-", ".dist-info"
    try:
        names = os.listdir(os.path.dirname(next(iter(spec.submodule_search_locations))))
    except OSError:
        return None
    releases = [name[len(prefix) : -len(suffix)] for name in names if name.startswith(prefix) and name.endswith(suffix)]
    return releases[0] if len(releases) == 1 else None


def demangle(name: str, mode: DemangleMode) -> str:
    """``name`` as ``mode`` asks: ``full``, ``short`` or ``none`` (unchanged).

    A name no demangler recognises (a C symbol, a name already built from
    debug info) is returned as is in ``full`` mode and shortened in ``short``.
    """
    if mode == "full":  # the memo asked here, in no call of its own: an answer shows thousands of names
        if not name.startswith(MANGLING_PREFIXES):
            return name  # a C name, or one built from debug info: nothing to demangle, nothing to remember
        demangled = _full_names.get(name)
        if demangled is None:
            demangled = _llvm_demangle(name)
            remember(name, demangled)
        return demangled
    if mode == "none":
        return name
    if mode == "short":
        return _demangle_short(name)
    raise ValueError(f"unknown demangle mode {mode!r}")  # a programming error, not bad input


def demangle_names(names: list[str], mode: DemangleMode) -> list[str]:
    """:func:`demangle` of each of ``names`` (each distinct, none empty), in order: what an answer's
    render shows, asked for all the names of a batch at once. In ``full`` mode they are demangled
    together (:func:`_llvm_demangled`), not through :func:`demangle`'s call chain per name: a large
    Rust binary's batch shows tens of thousands of names, and Python calls per name cost several
    times LLVM's own demangling of them."""
    if mode != "full":
        return [demangle(name, mode) for name in names]
    memo = _full_names
    prefixed = list(compress(names, map(str.startswith, names, repeat(MANGLING_PREFIXES))))
    asked = list(filterfalse(memo.__contains__, prefixed))
    # The remembered full names, None where none (then demangled now); none read when none is
    # remembered (a cold lookup).
    known = dict(zip(prefixed, map(memo.get, prefixed), strict=True)) if len(asked) < len(prefixed) else {}
    if asked:
        fresh = _llvm_demangled(asked)
        known.update(fresh)
        if len(memo) + len(fresh) > _MEMO_LIMIT:
            memo.clear()  # bounded as remember() bounds it
        if len(fresh) <= _MEMO_LIMIT:
            memo.update(fresh)
    full = cast("Callable[[str, str], str]", known.get)  # no None left in known
    return list(map(full, names, names))  # a name without a mangling prefix as it is


def _llvm_demangled(names: list[str]) -> dict[str, str]:
    """Each of ``names`` (distinct, each with a mangling prefix) -> :func:`_llvm_demangle` of it.

    The names are sorted by the demangler they go to all at once (:data:`_BY_DEMANGLER`). The Rust
    legacy symbols that end with their hash are made from their heads' demangling
    (:func:`_rust_legacy_by_head`); the other plain Itanium names go to LLVM's Itanium demangler in
    one map, the Rust v0 ones to its Rust demangler in another, and the Rust legacy ones among
    them are decoded together (:func:`_decode_rust_legacy_texts`); the rest (MSVC, a symbol
    version, a name LLVM does not read or one too long), name by name.
    """
    by_head: dict[str, str] = {}
    sorted_out = _by_demangler(names)
    if sorted_out is None:
        itanium, rust_v0 = _by_demangler_name_by_name(names)
    else:
        (heads, hashes, itanium_found, rust_v0_found) = sorted_out
        itanium = list(compress(names, itanium_found))
        rust_v0 = list(compress(names, rust_v0_found))
        if any(heads):
            legacy = list(compress(names, heads))
            by_head = _rust_legacy_by_head(legacy, list(filter(None, heads)), list(filter(None, hashes)))
            if len(by_head) < len(legacy):  # a head LLVM does not read as a nested name's: whole
                itanium += filterfalse(by_head.__contains__, legacy)
    llvm = _llvm()
    texts = dict(zip(itanium, _each_demangled(llvm.itanium_demangle, itanium), strict=True))
    texts.update(zip(rust_v0, _each_demangled(llvm.rust_demangle, rust_v0), strict=True))
    demangled = cast("dict[str, str]", texts)
    if not all(texts.values()):
        # Names LLVM does not read (None) or reads as nothing: left to _llvm_demangle below.
        demangled = {name: text for name, text in texts.items() if text}
    # _llvm_demangle's test, cheap part first: "$" or ".." in the text, then the name Rust legacy.
    escaped = [name for name, text in demangled.items() if "$" in text or ".." in text]
    legacy_texts = list(filter(_compiled(_RUST_LEGACY).search, escaped))
    decoded = _decode_rust_legacy_texts(list(map(demangled.__getitem__, legacy_texts)))
    demangled.update(zip(legacy_texts, decoded, strict=True))
    demangled.update(by_head)
    if len(demangled) < len(names):
        others = list(filterfalse(demangled.__contains__, names))
        demangled.update(zip(others, map(_llvm_demangle, others), strict=True))
    return demangled


def _by_demangler(names: list[str]) -> tuple[tuple[str, ...], ...] | None:
    """Per name of ``names`` (each with a mangling prefix), as :data:`_BY_DEMANGLER` sorts it: a Rust
    legacy symbol's head and hash, an Itanium name, a Rust v0 name (each "" where the name is not
    one); read from their text joined by newlines, in C, where a test per name costs a Python
    call. None where that does not pay or is not each name's sorting: no name holds ``17h`` (a
    Rust legacy hash; a C++ binary's batch, read faster name by name), a name holds a symbol
    version or a newline."""
    joined = "\n".join(names)
    if "17h" not in joined or "@" in joined:
        return None
    found = _compiled(_BY_DEMANGLER).findall(joined)
    if len(found) != len(names):
        return None  # a name with a newline, read as two lines
    return tuple(zip(*found, strict=True))


def _by_demangler_name_by_name(names: list[str]) -> tuple[list[str], list[str]]:
    """The names of ``names`` LLVM's Itanium demangler is given as they are (an Itanium prefix, no
    symbol version), and those its Rust demangler is (``_R``), each no longer than
    MAX_DEMANGLE_LENGTH."""
    itanium = [
        name
        for name in names
        if len(name) <= MAX_DEMANGLE_LENGTH and "@" not in name and name.startswith(_ITANIUM_PREFIXES)
    ]
    rest = list(filterfalse(set(itanium).__contains__, names)) if len(itanium) < len(names) else []
    return itanium, [name for name in rest if len(name) <= MAX_DEMANGLE_LENGTH and name.startswith("_R")]


def _rust_legacy_by_head(names: list[str], heads: list[str], hashes: list[str]) -> dict[str, str]:
    """Rust legacy symbols ``names``, each ``_ZN<head>h<hash>E`` (``heads`` end with the hash's
    length, ``17``; ``hashes``: ``h`` and 16 hex digits) -> :func:`_llvm_demangle` of each, made
    once per distinct head: a Rust program's names share them (a batch of rustgen's 14,489 such
    names, 2,664), and demangling a name whole costs a call into LLVM, its decoding and Python
    work on its text.

    Where LLVM reads ``_ZN<head>E`` (``_ZN4core3ptrE``) and its text has no ``(``, the ``E`` closed
    the nested name the head opened (had the name closed earlier, what follows would have been
    read as a parameter list or a ``.`` suffix, printed in parentheses), after its components; the
    full name is read alike, up to where its last component, the hash (a source name), follows
    them, and the ``E`` then closes it: LLVM prints the head's text, ``::`` and the hash. The
    decoding of that text is the head's decoded, ``::`` and the hash (which has no escape and no
    ``..``). A name whose head does not read so is left out (to be demangled whole).
    """
    distinct = list(set(heads))
    texts = _each_demangled(_llvm().itanium_demangle, [f"_ZN{head[:-2]}E" for head in distinct])
    read = [(head, text) for head, text in zip(distinct, texts, strict=True) if text and "(" not in text]
    if not read:
        return {}
    read_heads, read_texts = zip(*read, strict=True)
    decoded = _decode_rust_legacy_joined(list(read_texts))
    qualifiers = dict(zip(read_heads, map(operator.add, decoded, repeat("::")), strict=True))
    if len(qualifiers) < len(distinct):
        kept = list(map(qualifiers.__contains__, heads))
        names, heads, hashes = (list(compress(column, kept)) for column in (names, heads, hashes))
    return dict(zip(names, map(operator.add, map(qualifiers.__getitem__, heads), hashes), strict=True))


def _each_demangled(demangler: Callable[[str], str | None], names: list[str]) -> list[str | None]:
    """``demangler`` (one of pycxxfilt's) of each of ``names``, None where it fails: one map in C.
    A name it does not parse raises, and the map goes on after it: ``list.extend`` keeps what it
    took before the error (CPython's list_extend appends item by item)."""
    demangled: list[str | None] = []
    pending = map(demangler, names)
    while True:
        try:
            demangled.extend(pending)
        except ValueError:
            demangled.append(None)  # the name the map stopped at
        else:
            return demangled


def profile_name(name: str, mode: DemangleMode, *, keep_hashes: bool = False) -> str:
    """``name`` (a linkage name, or a name the debug info gives) as a profile's Function name:
    :func:`demangle`'s, then Rust's hash dropped (``full``; kept with ``keep_hashes``) and closures
    spelled ``{{closure}}`` (``full`` and ``short``). Module docstring, "A profile's names"."""
    shown = demangle(name, mode)
    if mode == "none":
        return shown
    if mode == "full" and not keep_hashes and _compiled(_RUST_LEGACY).search(name):
        shown = _compiled(_RUST_HASH_BEFORE_SUFFIX).sub("", shown)
    if "{closure#" in shown:
        shown = _compiled(_V0_CLOSURE).sub("{{closure}}", shown)
    return shown


def _llvm_demangle(name: str) -> str:
    """``name`` (with a mangling prefix) as LLVM's demanglers print it, with this module's rules."""
    if len(name) > MAX_DEMANGLE_LENGTH:
        return name
    llvm = _llvm()
    try:
        # An Itanium name without a symbol version straight to the demangler pycxxfilt's demangle
        # dispatches it to (by prefix: "?" MSVC, "_R" Rust v0, else Itanium, a "@VERSION" split off):
        # most names a lookup demangles, and its dispatch was a Python call of its own for each.
        demangled: str | None = (
            llvm.itanium_demangle(name)
            if name.startswith(_ITANIUM_PREFIXES) and "@" not in name
            else llvm.demangle(name)
        )
    except ValueError:
        # A name with a mangling prefix that does not parse: llvm-symbolizer prints it as is.
        return name
    if not demangled:
        return name
    if name.startswith("?"):
        return _as_llvm_symbolizer_prints_msvc(demangled)
    # The escapes looked for first: they are in C, the regular expression reads the whole name.
    if ("$" in demangled or ".." in demangled) and _is_rust_legacy(name):
        # LLVM leaves a Rust legacy name's escapes (``Vec$LT$T$C$A$GT$``, ``_$u7b$$u7b$closure``)
        # as they are; Rust users read them as rustc-demangle and GNU c++filt print them.
        return _decode_rust_legacy(demangled)
    return demangled


def _is_rust_legacy(name: str) -> bool:
    """Whether ``name`` is a Rust legacy symbol (:data:`_RUST_LEGACY` found in it). Most end with
    their hash (then ``E``): matched there first, where a search reads the whole name."""
    legacy = _compiled(_RUST_LEGACY)
    return legacy.match(name, len(name) - 20) is not None or legacy.search(name) is not None


# llvm-symbolizer demangles MSVC names without access specifier, member kind, calling convention
# and return type (MSDF_NoAccessSpecifier | MSDF_NoMemberType | MSDF_NoCallingConvention |
# MSDF_NoReturnType); pycxxfilt's demangler prints them all, so they are dropped from its text.
_MSVC_ACCESS = r"^(?:(?:public|private|protected): )?(?:(?:virtual|static) )?"
_MSVC_CALLING_CONVENTION = r"\b__(?:cdecl|stdcall|fastcall|thiscall|vectorcall|clrcall|regcall) "


def _as_llvm_symbolizer_prints_msvc(text: str) -> str:
    text = _compiled(_MSVC_ACCESS).sub("", text, count=1)
    convention = _compiled(_MSVC_CALLING_CONVENTION).search(text)
    # A function: what precedes its calling convention is its return type. Data has neither.
    return text[convention.end() :] if convention is not None else text


def remember(name: str, full: str) -> None:
    """Take ``full`` as ``name``'s full demangling, as computed earlier by this same demangler.

    Persistent indexes store the full form of every name they hold, made at build
    time by the demangler :data:`DEMANGLER` names (which is part of their key), so
    a warm lookup need not demangle again.
    """
    if len(_full_names) >= _MEMO_LIMIT:
        _full_names.clear()  # a long-lived process symbolizing many binaries stays bounded
    _full_names[name] = full


@functools.lru_cache(maxsize=65536)
def _demangle_short(name: str) -> str:
    return shorten(demangle(name, "full"))


def shorten(text: str) -> str:
    """Reduce an already demangled name to pprof's short form (rules in the module docstring)."""
    text = _compiled(_RUST_HASH).sub("", _compiled(_CLONE_SUFFIX).sub("", text))
    if "$" in text and "::" in text:
        text = _decode_rust_legacy(text)
    text = _compiled(_ABI_TAG).sub("", text)
    try:
        short, _ = _strip(text, 0, "", 0)
    except IndexError:
        # Unbalanced brackets: not a name we understand, so leave it whole.
        return text
    return _drop_return_type(short).strip() or text


def _decode_rust_legacy(text: str) -> str:
    """``text`` with each ``::`` component decoded (:func:`_decoded_component`).

    Component by component is the same as the whole text at once: no escape and no ``..`` spans
    a ``::``. It is what makes the memo pay: a Rust program's names share most of their components
    (``core``, ``Vec$LT$T$C$A$GT$``), and a large one has tens of thousands of names.
    """
    decoded = _decoded_components
    if len(decoded) >= _MEMO_LIMIT:
        decoded.clear()
    out = text.split("::")
    for position, component in enumerate(out):
        # A component without "$" or "." reads as it is (most: ``core``, every ``h<16 hex>`` hash),
        # and is not remembered: the hashes alone are one per name.
        if "$" in component or "." in component:
            found = decoded.get(component)
            if found is None:
                found = decoded[component] = _decoded_component(component)
            out[position] = found
    return "::".join(out)


def _decode_rust_legacy_texts(texts: list[str]) -> list[str]:
    """:func:`_decode_rust_legacy` of each of ``texts``, each distinct text before its last ``::``
    decoded once (:func:`_decode_rust_legacy_joined`): a Rust program's names share it far more
    than their whole text (``<Map<I,F> as Iterator>::fold``, instantiated for many ``I``, ``F``,
    has as many hashes after it; rustgen's 12,759 escaped names have 1,783 such heads).

    The same as text by text when no last component (the hash) has an escape's ``$`` or a ``..``:
    it reads as it is then, and :func:`_decode_rust_legacy`'s split of the text is its split of
    the rest, but where that ends in ``:`` (``a:::h...``: ``a``, ``:h...``), a ``:`` no decoding
    reads. Else the whole texts.
    """
    if not texts:
        return []
    heads, separators, tails = zip(*map(str.rpartition, texts, repeat("::")), strict=True)
    joined_tails = "\n".join(tails)
    if "$" in joined_tails or ".." in joined_tails:
        return _decode_rust_legacy_joined(texts)
    distinct = list(set(heads))
    decoded = dict(zip(distinct, _decode_rust_legacy_joined(distinct), strict=True))
    return list(map("".join, zip(map(decoded.__getitem__, heads), separators, tails, strict=True)))


def _decode_rust_legacy_joined(texts: list[str]) -> list[str]:
    """:func:`_decode_rust_legacy` of each of ``texts``, all of them at once: their text joined by
    newlines is split at its ``$`` and decoded by ``str`` methods in C, where a text, a component
    or an escape at a time costs a Python call (a regular expression's callback per escape).

    The same as text by text: no escape, no ``..`` and no ``::`` spans a newline, and the
    components a text's ``::`` split makes are what ``::`` ends or a newline opens, unless a text
    holds ``:::`` (``a:::b`` splits into ``a``, ``:b``): then text by text. So is a batch where a
    newline is in a text or an escape spells one (``$ua$``): its decoding has one line too many.
    """
    joined = "\n".join(texts)
    if ":::" in joined:
        return list(map(_decode_rust_legacy, texts))
    # A component's "_" before an escape: at a text's start, after a newline or a "::".
    if joined.startswith("_$"):
        joined = joined[1:]
    joined = joined.replace("\n_$", "\n$").replace("::_$", "::$")
    # Split at "$", the escapes are the odd parts when every "$" opens or closes one (rustc spells
    # a "$" of its own ``$u24$``); then each distinct one is decoded once. Else text by text.
    parts = joined.split("$")
    bodies = parts[1::2]
    spelled = {body: f"${body}$" for body in set(bodies)}
    if len(parts) % 2 == 0 or not all(map(_compiled(_RUST_ESCAPE).fullmatch, spelled.values())):
        return list(map(_decode_rust_legacy, texts))
    decoded_escapes = {body: _escaped_char(escape) for body, escape in spelled.items()}
    parts[1::2] = map(decoded_escapes.__getitem__, bodies)
    decoded = "".join(parts).replace("..", "::").split("\n")
    if len(decoded) != len(texts):
        return list(map(_decode_rust_legacy, texts))
    return decoded


def _decoded_component(component: str) -> str:
    """One component of a Rust legacy path as rustc-demangle prints it: a leading ``_`` before an
    escape dropped, the ``$..$`` escapes decoded, and ``..`` read as ``::``."""
    if component.startswith("_$"):
        component = component[1:]
    return _compiled(_RUST_ESCAPE).sub(_rust_escape, component).replace("..", "::")


def _rust_escape(match: re.Match[str]) -> str:
    return _escaped_char(match.group(0))


def _escaped_char(escape: str) -> str:
    """What one Rust legacy escape (:data:`_RUST_ESCAPE`, ``$LT$``, ``$u7b$``) stands for."""
    if escape in _RUST_ESCAPES:
        return _RUST_ESCAPES[escape]
    return chr(int(escape[2:-1], 16))


def _strip(text: str, start: int, closer: str, depth: int) -> tuple[str, int]:
    """Copy ``text`` from ``start`` up to ``closer`` without parameters or template arguments.

    ``depth``: how many brackets enclose ``start``; past _MAX_NESTING the name is left whole
    (IndexError, as for unbalanced brackets), so no input nests the recursion deeper.
    """
    if depth > _MAX_NESTING:
        raise IndexError("brackets nested too deep")
    out: list[str] = []
    index = start
    while index < len(text):
        char = text[index]
        if closer and char == closer:
            return "".join(out), index
        if text.startswith("operator", index) and _is_word_start(text, index) and not _is_ident_at(
            text, index + 8
        ):
            index = _copy_operator(text, index, out)
            continue
        if text.startswith("(anonymous namespace)", index):
            out.append("(anonymous namespace)")
            index += len("(anonymous namespace)")
        elif char == "<":
            if _at_component_start(out):
                inner, index = _strip(text, index + 1, ">", depth + 1)
                index += 1
                if " as " in inner or inner.startswith("impl "):
                    out.append(f"<{inner}>")  # <Type as Trait>, <impl Trait for Type>: the impl
                elif "".join(out[-2:]).endswith("::"):
                    # Rust's turbofish, ``drop_in_place::<T>``: generic arguments, not a path.
                    out[:] = ["".join(out)[:-2]]
                else:
                    out.append(inner)  # a bare <Type> (an inherent impl, as v0 prints it): Type
            else:
                index = _skip_balanced(text, index)
        elif char == "(":
            index = _skip_balanced(text, index)
            qualifiers = _compiled(_QUALIFIERS).match(text, index)
            index = qualifiers.end() if qualifiers else index
        elif char == "{":
            inner, index = _strip(text, index + 1, "}", depth + 1)
            out.append(f"{{{inner}}}")
            index += 1
        else:
            out.append(char)
            index += 1
    if closer:
        raise IndexError(f"no closing {closer!r}")
    return "".join(out), index


def _copy_operator(text: str, index: int, out: list[str]) -> int:
    end = index + len("operator")
    match = _compiled(_OPERATOR_SYMBOL).match(text, end) or _compiled(_OPERATOR_WORD).match(text, end)
    if match is not None:
        out.append(text[index : match.end()])
        return match.end()
    # A conversion operator (``operator int``): the type is the name, keep reading it.
    out.append("operator")
    return end


def _skip_balanced(text: str, index: int) -> int:
    """Index just past the bracket group opening at ``index``."""
    stack = [_OPENERS[text[index]]]
    index += 1
    while stack:
        char = text[index]
        if char == stack[-1]:
            stack.pop()
        elif char in _OPENERS:
            stack.append(_OPENERS[char])
        elif char == "-" and text.startswith("->", index):
            index += 1  # ``->`` inside a template argument is not a closing bracket
        index += 1
    return index


def _drop_return_type(text: str) -> str:
    """Drop what precedes the last top-level space (a return type), sparing operator names."""
    depth = 0
    cut = -1
    limit = len(text)
    operator_at = _find_top_level_operator(text)
    if operator_at >= 0:
        limit = operator_at
    for index in range(limit):
        char = text[index]
        if char in "<{[(":
            depth += 1
        elif char in ">}])":
            depth -= 1
        elif char == " " and depth == 0:
            cut = index
    return text[cut + 1 :]


def _find_top_level_operator(text: str) -> int:
    depth = 0
    for index, char in enumerate(text):
        if char in "<{[(":
            depth += 1
        elif char in ">}])":
            depth -= 1
        elif depth == 0 and text.startswith("operator", index) and _is_word_start(text, index):
            return index
    return -1


def _is_word_start(text: str, index: int) -> bool:
    return index == 0 or not _compiled(_IDENT_CHAR).match(text[index - 1])


def _is_ident_at(text: str, index: int) -> bool:
    return index < len(text) and _compiled(_IDENT_CHAR).match(text[index]) is not None


def _at_component_start(out: list[str]) -> bool:
    joined_tail = "".join(out[-2:])
    return not out or joined_tail.endswith("::") or joined_tail.endswith(" ")

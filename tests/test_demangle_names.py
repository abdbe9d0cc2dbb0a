"""demangle_names, the batch path an answer shows its names through: the same text as demangle's
per-name path (``_llvm_demangle``, the reference) for every name, whatever the batch holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize import demangle as demangling
from symbolize.demangle import MANGLING_PREFIXES, MAX_DEMANGLE_LENGTH, demangle_names
from symbolize.formats.errors import SymbolizeError
from symbolize.formats.open import open_object

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bin"


def _reference(names: list[str]) -> list[str]:
    """Each name as demangle's per-name path makes it, without its memo."""
    return [demangling._llvm_demangle(name) if name.startswith(MANGLING_PREFIXES) else name for name in names]


def _batch(names: list[str]) -> list[str]:
    """demangle_names of ``names`` with nothing remembered, then again with all of them remembered."""
    demangling._full_names.clear()
    demangling._decoded_components.clear()
    cold = demangle_names(names, "full")
    assert demangle_names(names, "full") == cold
    return cold


def _fixture_linkage_names() -> list[str]:
    """The mangled names of every symbol table in fixtures/bin (ELF, Mach-O, PE alike)."""
    names: set[str] = set()
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file():
            continue
        try:
            binary = open_object(path)
        except SymbolizeError:
            continue  # not an object file (a .dwo, a PDB without its binary...)
        try:
            names.update(symbol.name for symbol in binary.symbols() if symbol.name.startswith(MANGLING_PREFIXES))
        except SymbolizeError:
            continue
        finally:
            binary.close()
    return sorted(names)


def test_batch_equals_per_name_on_every_fixture_linkage_name() -> None:
    names = _fixture_linkage_names()
    prefixes = {name[:2] for name in names}
    assert {"_Z", "_R"} <= prefixes, prefixes  # C++, Rust v0 and Rust legacy binaries among them
    assert any(demangling._compiled(demangling._RUST_LEGACY).search(name) for name in names)
    assert _batch(names) == _reference(names)


# Pieces of Rust legacy components: escapes (valid, partial, overlapping), dots, a leading "_",
# colons (":::" splits unlike "::"), a newline (the batch's separators), non-ASCII text.
_RUST_PIECES = ["$LT$", "$GT$", "$C$", "$RF$", "$SP$", "$u7b$", "$u20$", "$u2e$", "$u3a$", "$ua$", "$u24$"]
_RUST_PIECES += ["$C$LT$", "_$", "_", "$", ".", "..", "u", "a", "LT", "::", ":", "\n", "é", "h0"]
_HASH = st.text(alphabet="0123456789abcdef", min_size=16, max_size=16)
_SUFFIX = st.sampled_from(["", ".llvm.123", ".cold", ".llvm.", ".$u7b$", ".a..b", "$", "@GLIBC_2.2.5", "x"])
_COMPONENT = st.lists(st.sampled_from(_RUST_PIECES), min_size=1, max_size=6).map("".join)


def _source_name(text: str) -> str:
    """``text`` as an Itanium source name (its length in UTF-8 bytes, then it)."""
    return f"{len(text.encode())}{text}"


@st.composite
def _rust_legacy_names(draw: st.DrawFn) -> str:
    """A Rust legacy symbol, well formed or not: ``_ZN`` components, ``17h<hash>E``, a suffix."""
    components = draw(st.lists(_COMPONENT, min_size=0, max_size=5))
    hashed = draw(st.sampled_from(["17h", "17h", "16h", "3h"])) + draw(_HASH)
    prefix = draw(st.sampled_from(["_ZN", "_ZN", "__ZN", "_ZNK", "_RN"]))
    end = draw(st.sampled_from(["E", "E", "", "EE"]))
    return prefix + "".join(map(_source_name, components)) + hashed + end + draw(_SUFFIX)


# Itanium grammar a head can hold besides source names: template arguments, a nested name closed
# early (then a parameter list or a "." suffix), substitutions, constructors, qualifiers, local and
# unnamed names, an anonymous namespace, literals, a bare length.
_GRAMMAR = ["E", "I", "Ii", "IiE", "v", "N3barE", "N3bar", ".x", "C1", "D0", "St", "S_", "T_", "M", "B3abi", "L"]
_GRAMMAR += ["Z3fooE", "Ut_", "DtfpT_E", "K", "R", "O", "12_GLOBAL__N_1", "cvi", "Li12E", "12", "1", "Fv", "A3_i"]


@st.composite
def _rust_legacy_shaped_names(draw: st.DrawFn) -> str:
    """A name shaped as a Rust legacy symbol ending with its hash (``_ZN<head>17h<hash>E``), its
    head source names and Itanium grammar mixed (what the batch reads per head, the head's
    demangling, must not change what the name reads as); several share a head."""
    pieces = st.one_of(_COMPONENT.map(_source_name), st.sampled_from(_GRAMMAR))
    head = "".join(draw(st.lists(pieces, min_size=0, max_size=5)))
    return f"_ZN{head}17h{draw(_HASH)}E"


_ITANIUM = st.sampled_from(
    [
        "_ZN2ns1fEv",
        "_ZNK2ns3FooIiE3barEi",
        "_ZZN2ns1fEvENKUliE_clEi",
        "_ZNSt6vectorIiSaIiEE9push_backERKi",
        "_Z3fooIiEvT_",
        "_Z1fv.cold",
        "_Z1fz",
        "_Zinvalid",
        "_Z",
        "__Z1fv",
        "__Zbad",
        "_Z1fv@@GLIBCXX_3.4",
        "_RNvCs1234_7mycrate4main",
        "_Rbad",
        "?foo@Tensor@at@@QEAAXXZ",
        "?bad",
        "main",
        "_ZN3a$b1cEv",
        "_ZN4a..b1cEv",
    ]
)
_NAMES = st.one_of(
    _rust_legacy_names(),
    _rust_legacy_shaped_names(),
    _ITANIUM,
    st.builds(lambda name, tail: name + tail, _ITANIUM, _SUFFIX),
    st.text(max_size=12).map(lambda text: "_Z" + text),
)


@settings(max_examples=300)
@given(st.lists(_NAMES, max_size=30, unique=True), st.booleans())
def test_batch_equals_per_name_on_generated_names(names: list[str], with_long: bool) -> None:
    if with_long:  # past MAX_DEMANGLE_LENGTH a name is left as it is, valid or not
        names = [*names, "_Z1f" + "P" * MAX_DEMANGLE_LENGTH + "i", "_ZN" + "1a" * (MAX_DEMANGLE_LENGTH // 2) + "E"]
    names = [name for name in dict.fromkeys(names) if name]
    assert _batch(names) == _reference(names)


@pytest.mark.parametrize(
    "names",
    [
        [],
        ["main"],
        ["_Zinvalid", "_Z1fv", "_Zbad2", "_Z1gv"],  # the Itanium map goes on after a name it refuses
        ["_ZN3foo3bar17h0123456789abcdefE", "_ZN3foo3bar17h0123456789abcdeeE"],  # one head, two hashes
        ["_ZN1a2_$3bar17h0123456789abcdefE"],  # "::" then "_$": a component opening with an escape
        ["_ZN2a:2_$17h0123456789abcdefE"],  # ":::": not the split demangle makes
        ["_ZN3$ua$17h0123456789abcdefE", "_ZN3$LT$17h0123456789abcdefE"],  # an escape spelling a newline
    ],
)
def test_batch_equals_per_name_at_the_edges(names: list[str]) -> None:
    assert _batch(names) == _reference(names)


_HEAD_PIECES = st.sampled_from([*_GRAMMAR, "3foo", "3$LT$", "4a..b", "2_$", "1:", "2:$"])


@settings(max_examples=300)
@given(st.lists(_HEAD_PIECES, max_size=4), st.lists(_HASH, min_size=1, max_size=3, unique=True))
def test_batch_equals_per_name_on_names_sharing_a_head(pieces: list[str], hashes: list[str]) -> None:
    """Names made from one head (its text read once for all of them) read as each read whole."""
    names = [f"_ZN{''.join(pieces)}17h{hash_}E" for hash_ in hashes] + ["_ZN4core3ptr17h0123456789abcdefE"]
    names = list(dict.fromkeys(names))
    assert _batch(names) == _reference(names)

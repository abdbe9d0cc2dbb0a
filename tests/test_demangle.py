"""Demangling: full mode against LLVM's own tools, short mode against pprof-style expectations."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symbolize.demangle import demangle, shorten
from tests.rust_names import RUST_LEGACY, rustc_demangle_escapes

MANGLED = [
    "_ZN2ns1fEv",
    "_ZNK2ns3FooIiE3barEi",
    "_ZZN2ns1fEvENKUliE_clEi",
    "_ZNSt6vectorIiSaIiEE9push_backERKi",
    "_ZN2nsltERKNS_1AES2_",
    "_ZN2ns1AlsEi",
    "_ZN12_GLOBAL__N_13fooEv",
    "_Z3fooIiEvT_",
    "_ZN2ns1AcviEv",
    "_ZN2ns1AnwEm",
    "_ZN3foo3bar17h0123456789abcdefE",
    "_ZN70_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h0123456789abcdefE",
    "_RNvCs1234_7mycrate4main",
    "_RNvMNtCs1tX6gQW8B4T_5hello3fooNtB2_3Bar3new",
    "_RNvXs_NtCs1_5alloc3vecINtB4_3VecpENtNtNtCs2_4core3ops4drop4Drop4drop",
    "main",
    "_Zinvalid",
]

LLVM_CXXFILT = shutil.which("llvm-cxxfilt") or shutil.which("llvm-cxxfilt-14")


@pytest.mark.skipif(LLVM_CXXFILT is None, reason="llvm-cxxfilt not installed")
def test_full_matches_llvm() -> None:
    assert LLVM_CXXFILT is not None
    completed = subprocess.run(
        [LLVM_CXXFILT], input="\n".join(MANGLED) + "\n", capture_output=True, text=True, check=True
    )
    # LLVM before 15 prints nested template closers as "> >"; pycxxfilt bundles a newer LLVM.
    expected = [line.replace("> >", ">>") for line in completed.stdout.splitlines()]
    # The one deliberate difference: a Rust legacy name's escapes are decoded (README).
    expected = [
        rustc_demangle_escapes(line) if RUST_LEGACY.search(name) else line
        for name, line in zip(MANGLED, expected, strict=True)
    ]
    assert [demangle(name, "full") for name in MANGLED] == expected


@pytest.mark.parametrize(
    ("mangled", "full", "short"),
    [
        (
            "_ZN5alloc3vec16Vec$LT$T$C$A$GT$8push_mut17h0123456789abcdefE",
            "alloc::vec::Vec<T,A>::push_mut::h0123456789abcdef",
            "alloc::vec::Vec::push_mut",
        ),
        (
            "_ZN4core3ops8function6FnOnce9call_once28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE",
            "core::ops::function::FnOnce::call_once::{{closure}}::h0123456789abcdef",
            "core::ops::function::FnOnce::call_once::{{closure}}",
        ),
        (
            "_ZN70_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h0123456789abcdefE",
            "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop::h0123456789abcdef",
            "<alloc::vec::Vec as core::ops::drop::Drop>::drop",
        ),
    ],
)
def test_rust_legacy_escapes_read_as_rustc_demangle_prints_them(mangled: str, full: str, short: str) -> None:
    assert demangle(mangled, "full") == full
    assert demangle(mangled, "short") == short


@pytest.mark.parametrize(
    ("mangled", "full", "short"),
    [
        # short gave the generic argument (``foo::Compiler``) for the function.
        (
            "_RINvNtCs1_4core3ptr13drop_in_placeNtCs2_3foo8CompilerE",
            "core::ptr::drop_in_place::<foo::Compiler>",
            "core::ptr::drop_in_place",
        ),
        (
            "_RINvNtCs1_5rustc6select36instantiate_constituent_tys_for_copyNtNtCs2_6middle2ty6TyCtxtE",
            "rustc::select::instantiate_constituent_tys_for_copy::<middle::ty::TyCtxt>",
            "rustc::select::instantiate_constituent_tys_for_copy",
        ),
        (
            "_RNCINvCs1_3foo3barhE0B5_",
            "foo::bar::<u8>::{closure#0}",
            "foo::bar::{closure#0}",
        ),
    ],
)
def test_rust_v0_short_is_the_function_path_without_generic_arguments(mangled: str, full: str, short: str) -> None:
    assert demangle(mangled, "full") == full
    assert demangle(mangled, "short") == short
    if LLVM_CXXFILT is not None:
        peer = subprocess.run([LLVM_CXXFILT, mangled], capture_output=True, text=True, check=True).stdout.strip()
        assert peer == full


@pytest.mark.parametrize(
    ("mangled", "short"),
    [
        ("_ZNK2ns3FooIiE3barEi", "ns::Foo::bar"),
        ("_ZZN2ns1fEvENKUliE_clEi", "ns::f::'lambda'::operator()"),
        ("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector::push_back"),
        ("_ZN2nsltERKNS_1AES2_", "ns::operator<"),
        ("_ZN2ns1AlsEi", "ns::A::operator<<"),
        ("_ZN2ns1AptEv", "ns::A::operator->"),
        ("_ZN2ns1AleERKS0_", "ns::A::operator<="),
        ("_ZN2ns1AdaEPv", "ns::A::operator delete[]"),
        ("_ZN2ns1AcviEv", "ns::A::operator int"),
        ("_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo"),
        ("_Z3fooIiEvT_", "foo"),
        ("_Z1fv.cold", "f"),
        ("_ZN3foo3bar17h0123456789abcdefE", "foo::bar"),
        (
            "_ZN70_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h0123456789abcdefE",
            "<alloc::vec::Vec as core::ops::drop::Drop>::drop",
        ),
        ("_RNvXs_NtCs1_5alloc3vecINtB4_3VecpENtNtNtCs2_4core3ops4drop4Drop4drop",
         "<alloc::vec::Vec as core::ops::drop::Drop>::drop"),
        ("_RNvMNtCs1tX6gQW8B4T_5hello3fooNtB2_3Bar3new", "hello::foo::Bar::new"),
        ("main", "main"),
    ],
)
def test_short(mangled: str, short: str) -> None:
    assert demangle(mangled, "short") == short


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("ns::f()::{lambda(int)#1}::operator()(int) const", "ns::f::{lambda#1}::operator()"),
        ("std::vector<int, std::allocator<int> > ns::f<int>()", "ns::f"),
        ("int* ns::foo<int>(int)", "ns::foo"),
        ("foo(int) [clone .constprop.0] [clone .cold]", "foo"),
        (
            "std::__cxx11::basic_string<char>::_M_create[abi:cxx11](unsigned long&)",
            "std::__cxx11::basic_string::_M_create",
        ),
        ("void (anonymous namespace)::foo<int>()", "(anonymous namespace)::foo"),
        ("std::function<void (int)>::operator()(int) const", "std::function::operator()"),
        ("bar::{closure#0}", "bar::{closure#0}"),
        ("<alloc::raw_vec::RawVecInner>::grow_one", "alloc::raw_vec::RawVecInner::grow_one"),
        ("<alloc::raw_vec::RawVec<u8>>::grow_one", "alloc::raw_vec::RawVec::grow_one"),
        ("a<b", "a<b"),
    ],
)
def test_shorten_demangled_text(text: str, short: str) -> None:
    assert shorten(text) == short


def test_none_is_identity() -> None:
    assert demangle("_ZN2ns1fEv", "none") == "_ZN2ns1fEv"


@given(st.text(max_size=40))
def test_any_text_demangles_without_error(name: str) -> None:
    for mode in ("full", "short", "none"):
        assert isinstance(demangle(name, mode), str)


_RUST_PATH_PIECES = ["$LT$", "$GT$", "$C$", "$RF$", "$u7b$", "$u20$", "$u2e$"]
_RUST_PATH_PIECES += ["_$", ".", "..", "::", "a", "$", "u", "_"]


@given(st.lists(st.sampled_from(_RUST_PATH_PIECES), max_size=16).map("".join))
def test_rust_legacy_escapes_decode_as_rustc_demangle_component_by_component(text: str) -> None:
    # The decoder memoizes each ``::`` component: asked twice (the second answer from the memo),
    # it gives rustc-demangle's reading of the whole text both times.
    from symbolize.demangle import _decode_rust_legacy

    assert _decode_rust_legacy(text) == rustc_demangle_escapes(text)
    assert _decode_rust_legacy(text) == rustc_demangle_escapes(text)

"""``_NT_SYMBOL_PATH`` / ``--symbol-server`` parsing (symbolize/remote/symbol_path.py): WinDbg's and
LLDB's rules, checked on their documented examples and on generated paths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symbolize.remote.symbol_path import (
    MICROSOFT_SYMBOL_SERVER,
    StoreChain,
    SymbolPath,
    parse_symbol_path,
    symbol_path_from_environment,
)


def _servers(value: str, windows: bool = False) -> list[tuple[str, str | None]]:
    servers = parse_symbol_path(value, windows=windows).servers()
    return [(url, None if cache is None else str(cache)) for url, cache in servers]


def _dirs(value: str, windows: bool = False) -> list[str]:
    return [str(path) for path in parse_symbol_path(value, windows=windows).directories()]


# LLDB's ParseEnvSymbolPaths tests (lldb/unittests/SymbolFile/SymStore), as sources in order and
# the cache of each HTTP source; where WinDbg and LLDB differ we follow WinDbg and say so.
@pytest.mark.parametrize(
    ("value", "directories", "servers"),
    [
        ("", [], []),
        (r"C:\ProgramData\Symbols", [r"C:\ProgramData\Symbols"], []),
        (r"C:\symbols;\\buildserver\syms;file://D:/pdb", [r"C:\symbols", r"\\buildserver\syms", "D:/pdb"], []),
        ("srv*https://msdl.microsoft.com/download/symbols", [], [(MICROSOFT_SYMBOL_SERVER, None)]),
        ("Srv*https://x/s", [], [("https://x/s", None)]),
        ("SRV*http://localhost", [], [("http://localhost", None)]),
        (r"SRV*C:\symcache*\\corp\symbols", [r"C:\symcache", r"\\corp\symbols"], []),
        (r"D:\sym;srv*C:\symcache*D:\sym", [r"D:\sym", r"C:\symcache"], []),
        ("srv**https://symbols.mozilla.org", [], [("https://symbols.mozilla.org", None)]),
        (r"cache*D:\s;srv*\\corp;SRV*http://localhost", [r"D:\s", r"\\corp"], [("http://localhost", r"D:\s")]),
        (r"Cache*D:\s;SRV*C:\X*http://localhost", [r"D:\s", r"C:\X"], [("http://localhost", r"C:\X")]),
        (r"srv*\\corp;SRV*C:\X*http://l;cache*D:\s", [r"\\corp", r"C:\X", r"D:\s"], [("http://l", r"C:\X")]),
        ("cache*;srv*http://h", [], [("http://h", None)]),
        # LLDB ignores every symsrv* element; symsrv*symsrv.dll* is srv*'s long form (Microsoft's docs).
        ("symsrv*symsrv.dll*https://symbols.mozilla.org", [], [("https://symbols.mozilla.org", None)]),
        (r"symsrv*symsrv.dll*C:\symbols*https://s", [r"C:\symbols"], [("https://s", r"C:\symbols")]),
        (r"symsrv*https://symbols.mozilla.org;D:\sym", [r"D:\sym"], []),
        # Cascading stores: the leftmost is the downstream store of the chain.
        (r"srv*c:\l*\\mid\store*https://msdl", [r"c:\l", r"\\mid\store"], [("https://msdl", r"c:\l")]),
        (r"srv**\\interim\store*https://internetsite", [r"\\interim\store"], [("https://internetsite", None)]),
        # srv* alone is WinDbg's .symfix path (LLDB reads it as an empty source).
        ("srv*", [], [(MICROSOFT_SYMBOL_SERVER, None)]),
        (r"cache*C:\c;srv*", [r"C:\c"], [(MICROSOFT_SYMBOL_SERVER, r"C:\c")]),
        # A bare URL is a server (what --symbol-server URL means).
        ("https://h/symbols/", [], [("https://h/symbols", None)]),
    ],
)
def test_documented_examples(value: str, directories: list[str], servers: list[tuple[str, str | None]]) -> None:
    assert _dirs(value, windows=True) == directories
    assert _servers(value, windows=True) == servers


def test_windows_paths_name_nothing_on_posix() -> None:
    parsed = parse_symbol_path(r"srv*C:\cache*https://server/symbols;D:\plain;\\unc\share;/posix/store", windows=False)
    assert parsed.directories() == [Path("/posix/store")]
    # The chain keeps its server; its downstream store, a Windows path, falls back to the default store.
    assert parsed.servers() == [("https://server/symbols", None)]
    assert len(parsed.ignored) == 3
    assert all("a Windows path" in reason for reason in parsed.ignored)


def test_another_symbol_server_dll_is_ignored_with_why() -> None:
    parsed = parse_symbol_path("symsrv*agent.dll*/store*https://x;/plain", windows=False)
    assert parsed.directories() == [Path("/plain")]
    assert parsed.servers() == []
    why = "another symbol server (agent.dll), not symsrv's protocol"
    assert parsed.ignored == (f"symsrv*agent.dll*/store*https://x: {why}",)


def test_plain_directories_are_flat_and_chains_are_not() -> None:
    parsed = parse_symbol_path("/a;srv*/b*https://x;cache*/c", windows=False)
    assert parsed.chains == (
        StoreChain((Path("/a"),), (), None, flat=True),
        StoreChain((Path("/b"),), ("https://x",), Path("/b")),
        StoreChain((Path("/c"),), (), Path("/c")),
    )


def test_alt_symbol_path_follows_the_symbol_path() -> None:
    parsed = symbol_path_from_environment({"_NT_SYMBOL_PATH": "srv*/a*https://x", "_NT_ALT_SYMBOL_PATH": "/b"})
    assert parsed.directories() == [Path("/a"), Path("/b")]
    assert symbol_path_from_environment({}) == SymbolPath()


# Generated paths: elements of each kind, checked against what each kind means on its own.
_names = st.text(st.sampled_from("abcXYZ019_-. "), min_size=1, max_size=8).filter(lambda s: s.strip(" ") == s)
_dir = st.builds(lambda parts: "/" + "/".join(parts), st.lists(_names, min_size=1, max_size=3))
_url = st.builds(lambda scheme, host, path: f"{scheme}://{host}/{path}", st.sampled_from(["http", "https", "HTTPS"]),
                 st.sampled_from(["h", "127.0.0.1:8000"]), _names)  # fmt: skip
_chain_part = st.one_of(_dir, st.just(""))
_srv = st.builds(lambda head, parts, url: "*".join([head, *parts, *([url] if url else [])]),
                 st.sampled_from(["srv", "SRV", "symsrv*symsrv.dll", "SymSrv*SYMSRV.DLL"]),
                 st.lists(_chain_part, max_size=3), st.one_of(st.none(), _url))  # fmt: skip
_cache = st.builds(lambda head, d: f"{head}*{d}", st.sampled_from(["cache", "CACHE"]), st.one_of(_dir, st.just("")))
_element = st.one_of(_dir, _srv, _cache, _url, st.just(""), st.just("  "))


@given(st.lists(_element, max_size=8))
def test_generated_paths(elements: list[str]) -> None:
    parsed = parse_symbol_path(";".join(elements), windows=False)
    assert parsed.ignored == ()
    expected_urls: list[str] = []
    expected_dirs: list[str] = []
    cache: str | None = None
    expected_caches: list[str | None] = []
    for element in elements:
        parts = element.split("*")
        head = parts[0].lower() if len(parts) > 1 else ""
        if head == "cache":
            cache = parts[1] or None
            expected_dirs += [parts[1]] if parts[1] else []
            continue
        if head in ("srv", "symsrv"):
            rest = parts[1:] if head == "srv" else parts[2:]
            if not any(rest):
                rest = [MICROSOFT_SYMBOL_SERVER]
            urls = [part.rstrip("/") for part in rest if "://" in part]
            chain_cache = (rest[0] or None) if len(rest) > 1 and "://" not in rest[0] else cache
            expected_urls += urls
            expected_caches += [chain_cache] * len(urls)
            expected_dirs += [part for part in rest if part and "://" not in part]
        elif "://" in element:
            expected_urls.append(element.rstrip("/"))
            expected_caches.append(cache)
        elif element.strip():
            expected_dirs.append(element.strip())
    assert parsed.directories() == list(dict.fromkeys(Path(d) for d in expected_dirs))
    caches = [None if cache is None else Path(cache) for cache in expected_caches]
    assert parsed.servers() == list(dict.fromkeys(zip(expected_urls, caches, strict=True)))


@given(st.text(max_size=60))
def test_any_text_parses_to_directories_of_this_system(value: str) -> None:
    """Nothing raises, and nothing but a directory of this system (no NUL, no Windows path on POSIX)
    or an http(s) URL comes out."""
    parsed = parse_symbol_path(value, windows=False)
    for directory in parsed.directories():
        text = str(directory)
        assert "\0" not in text and not text.startswith("\\\\") and not re.match("[A-Za-z]:", text)
    for url, _ in parsed.servers():
        assert url.lower().startswith(("http://", "https://"))

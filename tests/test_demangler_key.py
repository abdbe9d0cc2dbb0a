"""What an index key says of the demangler (symbolize/demangle.py's DEMANGLER): pycxxfilt's release,
read without loading pycxxfilt, so that a new release (new LLVM demanglers, or new handling of
them) makes new keys and one release makes the same key on every machine."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from symbolize import demangle


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # find_spec answers a loaded module's own spec, not the search path's: a test before this one in
    # the same process (any lookup that demangled) may have loaded pycxxfilt.
    monkeypatch.delitem(sys.modules, "pycxxfilt", raising=False)
    demangle._demangler.cache_clear()
    yield
    demangle._demangler.cache_clear()


def _installed(tmp_path: Path, *dist_infos: str) -> Path:
    """A site directory holding a pycxxfilt package and ``dist_infos``, first on the search path."""
    (tmp_path / "pycxxfilt").mkdir()
    (tmp_path / "pycxxfilt" / "__init__.py").write_text("raise ImportError('not to be loaded')\n")
    for name in dist_infos:
        (tmp_path / name).mkdir()
    return tmp_path


def test_the_demangler_is_named_by_pycxxfilts_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(_installed(tmp_path, "pycxxfilt-9.8.7.dist-info", "other-1.0.dist-info")))
    assert demangle.DEMANGLER.startswith("llvm demanglers of pycxxfilt 9.8.7, ")
    assert "pycxxfilt" not in sys.modules


def test_another_release_is_another_demangler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = []
    for release in ("1.2.0", "1.3.0"):
        site = tmp_path / release
        site.mkdir()
        monkeypatch.syspath_prepend(str(_installed(site, f"pycxxfilt-{release}.dist-info")))
        importlib.invalidate_caches()  # the path finder's listing of a directory made this second
        demangle._demangler.cache_clear()
        names.append(demangle.DEMANGLER)
    assert names[0] != names[1]


@pytest.mark.parametrize("dist_infos", [(), ("pycxxfilt-1.2.0.dist-info", "pycxxfilt-1.3.0.dist-info")])
def test_without_one_release_to_read_the_loaded_llvm_version_names_it(
    dist_infos: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pycxxfilt

    monkeypatch.syspath_prepend(str(_installed(tmp_path, *dist_infos)))
    monkeypatch.setattr(demangle, "_llvm", lambda: pycxxfilt)
    monkeypatch.delitem(sys.modules, "pycxxfilt")  # found on the path, not as loaded
    named = demangle.DEMANGLER
    assert named == f"llvm {pycxxfilt.LLVM_VERSION}, prefixed names only, rust legacy escapes decoded"

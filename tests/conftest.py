"""Every test gets its own empty index cache, so no index left by another run (or version) answers.

The tests run against what was installed from this checkout: an editable install (``symbolize``
from its ``symbolize/``, ``symbolize.formats`` from its ``formats/``), or a plain ``pip install .``
whose copy symbolize/__init__.py takes its modules from (compiled kernels included). An install
of another checkout, or one older than this checkout's sources, would test other code unseen:
refused, naming a file that differs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import symbolize
import symbolize.formats
from symbolize.cache import CACHE_DIR_VARIABLE
from tests.fixtures_data import ROOT

# What an install copies from the tree besides the modules: their stubs and the proto schema.
_SHIPPED_SUFFIXES = (".py", ".pyi", ".proto")


def pytest_configure(config: pytest.Config) -> None:
    for package, directory in ((symbolize, ROOT / "symbolize"), (symbolize.formats, ROOT / "formats")):
        imported = Path(package.__path__[0]).resolve()
        if imported == directory:
            continue  # an editable install of this checkout
        differing = _differing_files(directory, imported)
        if differing:
            raise pytest.UsageError(
                f"{package.__name__} is imported from {imported}, which is not what this checkout holds "
                f"({len(differing)} files differ, e.g. {differing[0]}): install this checkout "
                "(pip install '.[test]', or pip install -e '.[test]')"
            )


def _differing_files(tree: Path, installed: Path) -> list[str]:
    """The files of ``tree`` an install ships that ``installed`` lacks or holds otherwise."""
    differing = []
    for path in sorted(tree.rglob("*")):
        relative = path.relative_to(tree)
        if path.suffix not in _SHIPPED_SUFFIXES or "__pycache__" in relative.parts:
            continue
        copy = installed / relative
        if not copy.is_file() or copy.read_bytes() != path.read_bytes():
            differing.append(relative.as_posix())
    return differing


@pytest.fixture(autouse=True)
def _isolated_index_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "symbolize-cache"))


@pytest.fixture(autouse=True)
def _no_background_indexing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI indexes in a detached process by default; tests that want it say so."""
    monkeypatch.setenv("SYMBOLIZE_BACKGROUND_INDEX", "0")

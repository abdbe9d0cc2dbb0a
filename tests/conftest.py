"""Every test gets its own empty index cache, so no index left by another run (or version) answers.

The tests run against this checkout: ``symbolize`` from its ``symbolize/`` and ``symbolize.formats``
from its ``formats/`` (pyproject.toml's package-dir). An editable install of another checkout maps
``symbolize.formats`` to that checkout's ``formats/``, which would mix two trees unseen: refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import symbolize
import symbolize.formats
from symbolize.cache import CACHE_DIR_VARIABLE
from tests.fixtures_data import ROOT


def pytest_configure(config: pytest.Config) -> None:
    for package, directory in ((symbolize, ROOT / "symbolize"), (symbolize.formats, ROOT / "formats")):
        imported = Path(package.__file__ or "").resolve().parent
        if imported != directory:
            raise pytest.UsageError(f"{package.__name__} is imported from {imported}, not from {directory}: "
                                    "install this checkout (pip install -e '.[test]')")


@pytest.fixture(autouse=True)
def _isolated_index_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "symbolize-cache"))


@pytest.fixture(autouse=True)
def _no_background_indexing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI indexes in a detached process by default; tests that want it say so."""
    monkeypatch.setenv("SYMBOLIZE_BACKGROUND_INDEX", "0")

"""Every test gets its own empty index cache, so no index left by another run (or version) answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from symbolize.cache import CACHE_DIR_VARIABLE


@pytest.fixture(autouse=True)
def _isolated_index_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "symbolize-cache"))


@pytest.fixture(autouse=True)
def _no_background_indexing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI indexes in a detached process by default; tests that want it say so."""
    monkeypatch.setenv("SYMBOLIZE_BACKGROUND_INDEX", "0")

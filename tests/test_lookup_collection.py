"""``Module.lookup`` pauses Python's cyclic garbage collector for its batch (symbolize/module.py,
``_collection_paused``): it must be on again after a batch that found it on, also when the batch
raises, and stay off after a batch that found it off (the caller's choice)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from symbolize.api import Session
from symbolize.formats.errors import MalformedInputError, SymbolizeError
from symbolize.module import Module

BINARY = Path(__file__).resolve().parent.parent / "fixtures" / "bin" / "cdemo-gcc-dwarf5-pie"


@pytest.fixture
def module() -> Iterator[Module]:
    if not BINARY.exists():
        pytest.skip(f"{BINARY} not built")
    module, loader = Session(use_cache=False).open_module(BINARY, None)
    yield module
    loader.close()


@pytest.fixture
def collection_restored() -> Iterator[None]:
    was_on = gc.isenabled()
    yield
    if was_on:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collection_restored")
@pytest.mark.parametrize("on", [True, False])
def test_a_batch_leaves_collection_as_it_found_it(module: Module, on: bool) -> None:
    gc.enable() if on else gc.disable()
    seen: list[bool] = []
    source = module.sources[0]
    frames_many = source.frames_many

    def watched(vaddrs: list[int]) -> list[object]:
        seen.append(gc.isenabled())
        return frames_many(vaddrs)  # type: ignore[return-value]

    source.frames_many = watched  # type: ignore[method-assign]
    found = module.lookup([0x1139, 0x1139, 0x0])
    assert seen == [False]  # off while the sources answer
    assert gc.isenabled() is on
    assert found[0] == found[1]


@pytest.mark.usefixtures("collection_restored")
def test_a_batch_that_raises_turns_collection_back_on(module: Module) -> None:
    gc.enable()
    source = module.sources[0]

    def broken(vaddrs: list[int]) -> list[object]:
        raise MalformedInputError("a file cut short under the reader", BINARY)

    source.frames_many = broken  # type: ignore[method-assign]
    with pytest.raises(SymbolizeError):
        module.lookup([0x1139])
    assert gc.isenabled()

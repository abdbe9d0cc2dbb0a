"""Readers for native binaries and their debug info; nothing here knows pprof.

``ElfFile`` and ``open_object`` load on first use (PEP 562): importing one small module of the
package (``symbolize.formats.errors``, ``.types``) does not import every reader.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symbolize.formats.elf import ElfFile
    from symbolize.formats.open import open_object

__all__ = ["ElfFile", "open_object"]

_EXPORTS = {"ElfFile": "symbolize.formats.elf", "open_object": "symbolize.formats.open"}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'symbolize.formats' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value

"""Quantities as people read them in the command line's lines (sizes of caches and downloads)."""

from __future__ import annotations


def human_size(size: int) -> str:
    """``512 B``, ``41.6 KiB``, ``12.0 MiB``, ``1.2 GiB`` (powers of 1024)."""
    if size < 1024:
        return f"{size} B"
    scaled = size / 1024
    for unit in ("KiB", "MiB"):
        if scaled < 1024:
            return f"{scaled:.1f} {unit}"
        scaled /= 1024
    return f"{scaled:.1f} GiB"

"""What a test needs of POSIX, skipped where the system lacks it (Windows), so that the suite runs
on Linux, macOS and Windows alike (.github/workflows/ci.yml)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def require(call: str) -> None:
    """Skip unless ``os`` has ``call`` (``mkfifo``, ``mknod``, ``geteuid``: POSIX's)."""
    if not hasattr(os, call):
        pytest.skip(f"os.{call} is POSIX's")


def symlink(link: Path, target: str | Path) -> None:
    """``link`` made a symlink to ``target``; skipped where symlinks cannot be made (Windows
    without the privilege or developer mode)."""
    try:
        link.symlink_to(target)
    except (OSError, NotImplementedError) as error:
        pytest.skip(f"no symlinks here: {error}")

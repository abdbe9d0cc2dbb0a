"""Temporary files of our own naming left beside an output by a process that was killed.

An atomic write writes a temporary in the output's directory, then renames it
over the output: :func:`symbolize.pprof.write_profile` names it
``.<output name>.<random>.tmp``, the index store ``<index name>.<random>.tmp``
(``<random>`` is ``tempfile.mkstemp``'s eight characters). A process killed
between the two leaves the temporary behind, so the next write in that directory
removes the temporaries of that shape older than :data:`STALE_AFTER_SECONDS`
(younger ones may be a write still running in another process). Nothing else is
touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

STALE_AFTER_SECONDS = 15 * 60
# tempfile.mkstemp's random part: eight of these characters.
_RANDOM = r"[a-z0-9_]{8}"
PROFILE_TEMPORARY = re.compile(rf"\..+\.{_RANDOM}\.tmp")
INDEX_TEMPORARY = re.compile(rf"[^.].*\.{_RANDOM}\.tmp")


def remove_stale_temporaries(directory: Path, pattern: re.Pattern[str], *, now: float | None = None) -> list[Path]:
    """Remove the files of ``directory`` whose name is ``pattern`` and that are stale; returns them.

    Never raises for a directory it cannot list or a file it cannot remove: cleaning up is a
    courtesy, the write it comes with is not.
    """
    cutoff = (time.time() if now is None else now) - STALE_AFTER_SECONDS
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed

"""The service's diagnostics: one line each on stderr (its log), whole lines from any thread."""

from __future__ import annotations

import sys
import threading

_lock = threading.Lock()


def log(message: str) -> None:
    """``symbolize serve: <message>`` on stderr."""
    with _lock:
        print(f"symbolize serve: {message}", file=sys.stderr, flush=True)

"""A file mapped read-only, for readers that read a few parts of a large file (a PDB's streams, a
PE's headers) rather than all of it: a cold lookup then neither copies the file nor first-touches
fresh memory for it.

Like llvm-symbolizer's own inputs, a mapped file that another process truncates while it is read
can raise SIGBUS; each reader checks the sizes it reads against the length mapped at open.
"""

from __future__ import annotations

import mmap
from pathlib import Path

from symbolize.formats.errors import NotFoundError, SymbolizeError


def map_read_only(path: Path) -> mmap.mmap | bytes:
    """``path`` mapped read-only (close it when done), or b"" for an empty file (mmap refuses
    one; the reader's own checks report it); raises NotFoundError or SymbolizeError naming it."""
    try:
        with path.open("rb") as handle:
            if handle.seek(0, 2) == 0:
                return b""
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError as err:
        raise NotFoundError("file not found", path) from err
    except OSError as err:
        raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
    except ValueError as err:  # mmap's refusal of what it cannot map
        raise SymbolizeError(f"cannot map file: {err}", path) from err

"""The object stores an index store can live in, behind one small interface.

:class:`ObjectBackend` is what the index store needs of object storage: ``head``, a ranged
``get_range``, ``put_if_absent`` (a conditional write: the first writer wins, a later one is told
the object exists, nothing is read, modified and written back) and ``put`` (an overwrite, for
the small "could not index" markers, which expire). Three kinds:

- a local directory (:class:`DirectoryBackend`, written here: ``os.link`` of a whole temporary
  file is the conditional write a filesystem has, and it needs no wheel);
- S3, GCS and Azure through obstore (symbolize/index_store/obstore_backend.py);
- any other scheme fsspec knows (symbolize/index_store/fsspec_backend.py).

symbolize/index_store/urls.py's open_backend picks one from a URL; obstore and fsspec are imported
only then, so a run that names no store never loads them. Object names are ``/``-separated words of
``[A-Za-z0-9._-]`` (:func:`check_name`): a name is never a path that leaves the store's root.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple, Protocol

from symbolize.formats.errors import SymbolizeError

_NAME_WORD = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


class StoreUnavailableError(SymbolizeError):
    """The index store could not be asked (unreachable, refusing, misconfigured): named by its URL."""

    def __init__(self, message: str, url: str) -> None:
        # Not a path: Path() would fold the URL's "//".
        super().__init__(f"{url}: {message}")
        self.url = url
        self.reason = message


class ObjectInfo(NamedTuple):
    """What ``head`` tells of an object."""

    size: int


class ObjectBackend(Protocol):
    """Object storage as the index store uses it. Every method raises StoreUnavailableError when
    the store cannot answer; a missing object is None (head) or FileNotFoundError (get_range)."""

    url: str

    def head(self, name: str) -> ObjectInfo | None: ...

    def get_range(self, name: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object (fewer at its end)."""
        ...

    def put_if_absent(self, name: str, data: bytes) -> bool:
        """Write the object unless one exists; True when this call wrote it."""
        ...

    def put(self, name: str, data: bytes) -> None:
        """Write the object, replacing any."""
        ...


def check_name(name: str) -> str:
    """``name`` when it is an object name the store accepts; ValueError otherwise (a bug: names
    are made by symbolize/index_store/tiers.py)."""
    words = name.split("/")
    if not words or not all(_NAME_WORD.fullmatch(word) for word in words):
        raise ValueError(f"not an object name: {name!r}")
    return name


class DirectoryBackend:
    """Objects as files under ``root`` (created on the first write)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = str(root)

    def _path(self, name: str) -> Path:
        return self.root.joinpath(*check_name(name).split("/"))

    def _unreadable(self, error: OSError) -> StoreUnavailableError:
        return StoreUnavailableError(f"index store cannot be read: {error.strerror or error}", self.url)

    def _unwritable(self, error: OSError) -> StoreUnavailableError:
        return StoreUnavailableError(f"index store cannot be written: {error.strerror or error}", self.url)

    def head(self, name: str) -> ObjectInfo | None:
        try:
            return ObjectInfo(self._path(name).stat().st_size)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise self._unreadable(error) from error

    def get_range(self, name: str, start: int, end: int) -> bytes:
        try:
            with self._path(name).open("rb") as handle:
                handle.seek(start)
                return handle.read(max(0, end - start))
        except FileNotFoundError:
            raise
        except OSError as error:
            raise self._unreadable(error) from error

    def put_if_absent(self, name: str, data: bytes) -> bool:
        path = self._path(name)
        temporary = self._write_temporary(path, data)
        try:
            # A hard link is made whole or not at all, and never over an existing name: readers
            # see no object or all of it, and of two writers exactly one wins.
            os.link(temporary, path)
        except FileExistsError:
            return False
        except OSError as error:
            raise self._unwritable(error) from error
        finally:
            temporary.unlink(missing_ok=True)
        return True

    def put(self, name: str, data: bytes) -> None:
        path = self._path(name)
        temporary = self._write_temporary(path, data)
        try:
            os.replace(temporary, path)
        except OSError as error:
            temporary.unlink(missing_ok=True)
            raise self._unwritable(error) from error

    def _write_temporary(self, path: Path, data: bytes) -> Path:
        import tempfile

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix=".put.", suffix=".tmp", dir=path.parent)
            with os.fdopen(handle, "wb") as output:
                output.write(data)
                output.flush()
                os.fsync(output.fileno())
        except OSError as error:
            raise self._unwritable(error) from error
        return Path(name)

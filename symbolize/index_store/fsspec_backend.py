"""Any other storage fsspec opens (``memory://``, ``sftp://``, ``hdfs://``, ``webdav``… its
protocols, with their own packages), for stores obstore does not speak.

The conditional write is the filesystem's exclusive create (``mode="xb"``) where fsspec's
implementation has one; elsewhere it is "write unless it exists", which two writers can both
pass: each writes a whole, checked index of the same build, so a reader still gets a good one.
"""

from __future__ import annotations

from typing import Any

import fsspec  # type: ignore[import-untyped]

from symbolize.index_store.backends import ObjectInfo, StoreUnavailableError, check_name


class FsspecBackend:
    """The objects under ``url`` (``protocol://root``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            self._fs: Any
            self._fs, root = fsspec.core.url_to_fs(url)
        except (ImportError, ValueError, OSError) as error:
            raise StoreUnavailableError(f"index store URL is refused: {error}", url) from error
        self._root = str(root).rstrip("/")

    def _path(self, name: str) -> str:
        return f"{self._root}/{check_name(name)}"

    def _unavailable(self, error: Exception) -> StoreUnavailableError:
        return StoreUnavailableError(f"index store did not answer: {error}", self.url)

    def head(self, name: str) -> ObjectInfo | None:
        try:
            info = self._fs.info(self._path(name))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise self._unavailable(error) from error
        return ObjectInfo(int(info.get("size") or 0))

    def get_range(self, name: str, start: int, end: int) -> bytes:
        try:
            return bytes(self._fs.cat_file(self._path(name), start=start, end=end))
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as error:
            raise self._unavailable(error) from error

    def put_if_absent(self, name: str, data: bytes) -> bool:
        path = self._path(name)
        try:
            self._fs.makedirs(path.rpartition("/")[0], exist_ok=True)
            try:
                with self._fs.open(path, "xb") as output:
                    output.write(data)
                return True
            except FileExistsError:
                return False
            except (NotImplementedError, ValueError):
                pass  # no exclusive create here: write unless it exists (see the module docstring)
            if self._fs.exists(path):
                return False
            self._fs.pipe_file(path, data)
        except (OSError, ValueError) as error:
            raise self._unavailable(error) from error
        return True

    def put(self, name: str, data: bytes) -> None:
        path = self._path(name)
        try:
            self._fs.makedirs(path.rpartition("/")[0], exist_ok=True)
            self._fs.pipe_file(path, data)
        except (OSError, ValueError) as error:
            raise self._unavailable(error) from error

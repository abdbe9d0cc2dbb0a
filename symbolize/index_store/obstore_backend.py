"""S3, GCS and Azure object storage through obstore (the ``store`` extra).

obstore wraps the Rust ``object_store`` crate: one client for the three clouds, conditional
writes (``mode="create"``: S3's ``If-None-Match: *``, GCS's generation precondition, Azure's
``If-None-Match``), ranged reads, and credentials, endpoint and region from the usual variables
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``;
``GOOGLE_*``, ``AZURE_*``). The path of ``s3://bucket/prefix`` is the prefix of every object.

Requests are bounded (a connect timeout, a request timeout, two retries within
:data:`RETRY_SECONDS`): a store that is gone or stalls costs a run seconds, not the crate's
minutes of retries, before it falls back to building locally.
"""

from __future__ import annotations

import math
import os
from datetime import timedelta
from typing import Any

import obstore
from obstore.exceptions import AlreadyExistsError, BaseError, NotFoundError, PreconditionError
from obstore.store import from_url

from symbolize.index_store.backends import ObjectInfo, StoreUnavailableError, check_name

# Seconds a request may take (SYMBOLIZE_INDEX_STORE_TIMEOUT; an 8 MiB range at 280 KB/s), to
# connect, and for all the retries of one request.
TIMEOUT_VARIABLE = "SYMBOLIZE_INDEX_STORE_TIMEOUT"
REQUEST_SECONDS = 30.0
CONNECT_SECONDS = 5.0
RETRY_SECONDS = 15.0
_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")


class ObstoreBackend:
    """The objects under ``url`` (``s3://bucket/prefix``, ``gs://…``, ``az://…``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        # A plain-HTTP endpoint (a local S3 server) must be allowed explicitly.
        endpoint = next((os.environ[name] for name in _ENDPOINT_VARIABLES if os.environ.get(name)), "")
        request = _seconds(os.environ.get(TIMEOUT_VARIABLE), REQUEST_SECONDS)
        client: dict[str, Any] = {
            "connect_timeout": timedelta(seconds=min(CONNECT_SECONDS, request)),
            "timeout": timedelta(seconds=request),
        }
        if endpoint.startswith("http://"):
            client["allow_http"] = True
        retry: dict[str, Any] = {
            "max_retries": 2,
            "retry_timeout": timedelta(seconds=min(RETRY_SECONDS, 3 * request)),
            "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=2), "base": 2},
        }
        try:
            self._store = from_url(url, client_options=client, retry_config=retry)  # type: ignore[call-overload]
        except (BaseError, ValueError, OSError) as error:
            raise StoreUnavailableError(f"index store URL is refused: {error}", url) from error

    # obstore raises its NotFoundError or, for some stores, the builtin FileNotFoundError (and
    # FileExistsError for a write refused because the object exists): both are caught.

    def _unavailable(self, error: Exception) -> StoreUnavailableError:
        # The crate's messages span lines (the request, then its causes): the first says what failed.
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return StoreUnavailableError(f"index store did not answer: {first}", self.url)

    def head(self, name: str) -> ObjectInfo | None:
        try:
            meta = obstore.head(self._store, check_name(name))
        except (NotFoundError, FileNotFoundError):
            return None
        except (BaseError, OSError, RuntimeError) as error:
            raise self._unavailable(error) from error
        return ObjectInfo(int(meta["size"]))

    def get_range(self, name: str, start: int, end: int) -> bytes:
        try:
            return bytes(obstore.get_range(self._store, check_name(name), start=start, end=end))
        except (NotFoundError, FileNotFoundError) as error:
            raise FileNotFoundError(name) from error
        except (BaseError, OSError, RuntimeError) as error:
            raise self._unavailable(error) from error

    def put_if_absent(self, name: str, data: bytes) -> bool:
        try:
            obstore.put(self._store, check_name(name), data, mode="create", use_multipart=False)
        except (AlreadyExistsError, PreconditionError, FileExistsError):
            return False
        except (BaseError, OSError, RuntimeError) as error:
            raise self._unavailable(error) from error
        return True

    def put(self, name: str, data: bytes) -> None:
        try:
            obstore.put(self._store, check_name(name), data, mode="overwrite", use_multipart=False)
        except (BaseError, OSError, RuntimeError) as error:
            raise self._unavailable(error) from error


def _seconds(text: str | None, default: float) -> float:
    """``text`` as a positive, finite number of seconds; ``default`` for anything else."""
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default

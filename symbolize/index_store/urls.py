"""Which backend a store URL names (symbolize/index_store/backends.py's kinds)."""

from __future__ import annotations

from pathlib import Path

from symbolize.index_store.backends import DirectoryBackend, ObjectBackend, StoreUnavailableError

# Schemes obstore speaks (its from_url's); any other scheme with "://" goes to fsspec.
OBSTORE_SCHEMES = frozenset({"s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss"})


def open_backend(url: str) -> ObjectBackend:
    """The backend ``url`` names: ``s3://``, ``gs://``, ``az://`` (and obstore's other spellings)
    through obstore, another ``scheme://`` through fsspec, ``file://`` or a plain path a directory.
    Raises StoreUnavailableError when the URL's backend is not installed or refuses the URL."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return DirectoryBackend(Path(url))
    scheme = scheme.lower()
    if scheme == "file":
        return DirectoryBackend(Path(rest))
    if scheme in OBSTORE_SCHEMES:
        try:
            from symbolize.index_store.obstore_backend import ObstoreBackend
        except ImportError as error:
            raise StoreUnavailableError(
                "index store needs obstore: pip install 'pprof-symbolize[store]'", url
            ) from error
        return ObstoreBackend(url)
    try:
        from symbolize.index_store.fsspec_backend import FsspecBackend
    except ImportError as error:
        raise StoreUnavailableError("index store needs fsspec: pip install 'pprof-symbolize[store]'", url) from error
    return FsspecBackend(url)

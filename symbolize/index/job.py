"""What a background index builder must open to index a file as the run that found it did.

An index answers for a source as it was opened: a slice of a universal Mach-O file (its arch),
a PDB bound to its image (its answers are at the image's ImageBase plus RVAs), a file whose
hints (a debug map's objects, ``.dwo`` files, a dwz file) were found through the run's
``--search-path``, ``--debug-dir`` and ``--binary``. Its key says so (symbolize/cache.py), so a
builder that opened the path alone would build another index than the one the run missed.
An :class:`IndexJob` records all of it, and travels to the detached builder as JSON.
"""

from pathlib import Path
from typing import Any, NamedTuple


class IndexJob(NamedTuple):
    """One file to index: how the run opened it."""

    path: Path
    # The slice selector it was opened with (a universal Mach-O file's arch); None for one.
    arch: str | None = None
    # The binary the file serves, whose directory its hints are searched from (None: itself).
    image_path: Path | None = None
    # The image a PDB was bound to (``bind_image``), opened with ``image_arch``.
    bound_image: Path | None = None
    image_arch: str | None = None
    binaries: tuple[Path, ...] = ()
    search_paths: tuple[Path, ...] = ()
    # None: the default debug directories.
    debug_dirs: tuple[Path, ...] | None = None

    def to_json(self) -> str:
        """The job with every path made absolute: the builder must not depend on a working directory."""
        import json  # here: a run that starts no builder never imports json

        def absolute(path: Path | None) -> str | None:
            return str(path.resolve()) if path is not None else None

        return json.dumps(
            {
                "path": absolute(self.path),
                "arch": self.arch,
                "image_path": absolute(self.image_path),
                "bound_image": absolute(self.bound_image),
                "image_arch": self.image_arch,
                "binaries": [absolute(path) for path in self.binaries],
                "search_paths": [absolute(path) for path in self.search_paths],
                "debug_dirs": None if self.debug_dirs is None else [absolute(path) for path in self.debug_dirs],
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> "IndexJob":
        """The job :meth:`to_json` wrote; raises ValueError for anything else."""
        import json

        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise TypeError("not an object")
            debug_dirs = raw.get("debug_dirs")
            return cls(
                path=Path(_text(raw["path"])),
                arch=_optional_text(raw.get("arch")),
                image_path=_optional_path(raw.get("image_path")),
                bound_image=_optional_path(raw.get("bound_image")),
                image_arch=_optional_text(raw.get("image_arch")),
                binaries=tuple(Path(_text(item)) for item in raw.get("binaries") or ()),
                search_paths=tuple(Path(_text(item)) for item in raw.get("search_paths") or ()),
                debug_dirs=None if debug_dirs is None else tuple(Path(_text(item)) for item in debug_dirs),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"not an index job: {err}") from err


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _optional_path(value: Any) -> Path | None:
    return None if value is None else Path(_text(value))

"""setuptools' build backend (PEP 517), building outside the source tree.

``pip install .`` builds in the tree it is given: setuptools leaves ``build/`` and the egg-info
there, cargo (setuptools-rust, for the compiled kernels) ``native/target`` (about 70 MB). This
backend is setuptools.build_meta with every build in a temporary directory, removed afterwards:
setuptools' through a distutils configuration file named by ``DIST_EXTRA_CONFIG`` (its
``build_base`` and ``egg_base``), cargo's through ``CARGO_TARGET_DIR`` unless the caller set one (a
developer's incremental builds, CI's cache). An editable install still puts the compiled module
into ``formats/``, where the checkout imports it from.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from setuptools import build_meta

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

_VARIABLES = ("DIST_EXTRA_CONFIG", "CARGO_TARGET_DIR")


@contextmanager
def outside_the_tree() -> Iterator[str]:
    """A temporary directory every build step of the ``with`` block writes to; yields its path."""
    scratch = tempfile.mkdtemp(prefix="symbolize-build-")
    saved = {name: os.environ.get(name) for name in _VARIABLES}
    config = os.path.join(scratch, "setup.cfg")
    with open(config, "w", encoding="utf-8") as settings:
        # distutils reads these as setup.cfg's own: the build and egg-info directories.
        settings.write(f"[build]\nbuild_base = {os.path.join(scratch, 'build')}\n[egg_info]\negg_base = {scratch}\n")
    os.environ["DIST_EXTRA_CONFIG"] = config
    os.environ.setdefault("CARGO_TARGET_DIR", os.path.join(scratch, "cargo"))
    try:
        yield scratch
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(scratch, ignore_errors=True)


# setuptools answers these by running egg_info too: in the tree, unless told otherwise.
def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    with outside_the_tree():
        return build_meta.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    with outside_the_tree():
        return build_meta.get_requires_for_build_editable(config_settings)


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    with outside_the_tree():
        return build_meta.get_requires_for_build_sdist(config_settings)


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:  # fmt: skip
    with outside_the_tree():
        return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:  # fmt: skip
    with outside_the_tree():
        return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    with outside_the_tree():
        return build_meta.build_sdist(sdist_directory, config_settings)


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    with outside_the_tree():
        return build_meta.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    with outside_the_tree():
        return build_meta.prepare_metadata_for_build_editable(metadata_directory, config_settings)

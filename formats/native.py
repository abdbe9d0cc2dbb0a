"""The optional compiled kernels (the Rust crate in ``native/``) and whether they run.

``pip install`` builds ``symbolize.formats._kernels`` wherever cargo is found (setuptools-rust,
marked optional in ``pyproject.toml``); where it is missing or the build fails the install still
succeeds. Without the module, or with ``SYMBOLIZE_PURE_PYTHON=1`` in the environment, every reader
runs its Python code, which stays the reference each kernel is tested against
(``tests/test_native_kernels.py``). The variable is read once, at import.
"""

from __future__ import annotations

import os
from types import ModuleType

PURE_PYTHON_VARIABLE = "SYMBOLIZE_PURE_PYTHON"


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get(PURE_PYTHON_VARIABLE, "") not in ("", "0"):
        return None, f"no ({PURE_PYTHON_VARIABLE} is set)"
    try:
        from symbolize.formats import _kernels
    except ImportError as error:
        return None, f"no (not built: {error})"
    return _kernels, "yes"


kernels, _why = _load()


def status() -> str:
    """One line saying whether the compiled kernels run, and why not."""
    return f"compiled kernels: {_why}"

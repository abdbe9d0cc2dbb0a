"""The switch between the compiled kernels and the Python readers (``formats/native.py``).

``SYMBOLIZE_PURE_PYTHON=1`` runs every reader on its Python code, read once at import, and
``symbolize --version`` says which ran. The module is skipped where the kernels were not built (no
cargo); CI builds them and checks that they load (``.ci/run``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from symbolize.formats.native import PURE_PYTHON_VARIABLE
from tests.kernel_twins import kernel_environment

pytest.importorskip("symbolize.formats._kernels", reason="the compiled kernels were not built")


@pytest.mark.parametrize(("variable", "expected"), [(None, "compiled kernels: yes"),
                                                    ("1", f"compiled kernels: no ({PURE_PYTHON_VARIABLE} is set)")])
def test_the_environment_variable_forces_the_python_path(variable: str | None, expected: str) -> None:
    environment = kernel_environment(os.environ, pure_python=variable is not None)
    script = ("import symbolize, symbolize.formats.native as native;"
              "print(symbolize.native_status(), native.kernels is None)")
    printed = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                             check=True).stdout.split("\n")[0]
    assert printed == f"{expected} {variable is not None}"


def test_version_names_the_kernels_status() -> None:
    from importlib.metadata import version

    from typer.testing import CliRunner

    from symbolize import native_status
    from symbolize.cli.app import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"symbolize {version('pprof-symbolize')}\n{native_status()}\n"

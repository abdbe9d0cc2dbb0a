"""mypy (strict, pyproject.toml's [tool.mypy]) over the tree as it is installed.

The readers live in the top-level ``formats/`` and are installed as ``symbolize.formats``
(pyproject.toml's package-dir). mypy has no such mapping, and an editable install reaches
``formats/`` through an import hook mypy does not follow, so the tree is checked in a temporary
copy laid out as installed: ``formats/`` copied to ``symbolize/formats`` (files, never a link).
Modification times are kept, so mypy's cache in the checkout stays warm; the paths mypy reports are
the checkout's. Arguments are passed to mypy; the exit status is mypy's.

    python .ci/typecheck.py [MYPY ARGUMENTS...]
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
# Top-level directory in the checkout -> where it is in the installed layout.
LAYOUT = {"symbolize": "symbolize", "formats": "symbolize/formats", "fuzz": "fuzz", "tests": "tests"}
SOURCES = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "seeds")
INSTALLED_FORMATS = re.compile(r"^symbolize/formats/", re.MULTILINE)


def lay_out(root: Path) -> None:
    """Copy the Python sources of the checkout into ``root`` in the installed layout."""
    for source, target in LAYOUT.items():
        shutil.copytree(CHECKOUT / source, root / target, ignore=SOURCES, copy_function=shutil.copy2)
    shutil.copy2(CHECKOUT / "pyproject.toml", root / "pyproject.toml")


def main(arguments: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="symbolize-typecheck-") as scratch:
        root = Path(scratch)
        lay_out(root)
        cache = CHECKOUT / ".mypy_cache"
        checked = subprocess.run(
            [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *arguments],
            cwd=root, capture_output=True, text=True, check=False,
        )
    sys.stdout.write(INSTALLED_FORMATS.sub("formats/", checked.stdout))
    sys.stderr.write(INSTALLED_FORMATS.sub("formats/", checked.stderr))
    return checked.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Write the seeds of unfollowable debug hints: fixtures with one malformed or over-long hint.

``python fuzz/make_hint_seeds.py`` (from the repository root) writes, from the cases of
``tests/test_unfollowable_hints.py`` (a real fixture with one hint patched), one seed per case
below into ``fuzz/seeds/<reader>/hint-<case>``: a malformed ``.gnu_debuglink`` or CodeView
record, a debuglink, PDB path or ``N_OSO`` name past the system's limit. Each must give an
answer (the hint refused), which the object target then mutates from.
"""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SEEDS = Path(__file__).resolve().parent / "seeds"
# case -> the object target's seed directory (fuzz/README.md)
SEEDED = {
    "debuglink-malformed": "elf",
    "debuglink-too-long": "elf",
    "codeview-rsds-truncated": "pe",
    "pdb-path-too-long": "pe",
    "oso-name-too-long": "macho",
}


def main() -> None:
    # Imported by name: the tests are not part of what mypy checks (pyproject.toml, tool.mypy).
    cases = importlib.import_module("tests.test_unfollowable_hints").CASES
    for case, reader in SEEDED.items():
        with tempfile.TemporaryDirectory() as scratch:
            made = cases[case](Path(scratch))
            shutil.copyfile(made.binary, SEEDS / reader / f"hint-{case}")


if __name__ == "__main__":
    main()
